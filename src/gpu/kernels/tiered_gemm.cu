// Tiered GEMM host side: argument checks, workspace initialization and dispatch to the compiled
// tiles (kernel: tiered_gemm_kernel.cuh; instantiations: tiered_gemm_bm64.cu, tiered_gemm_bm128.cu,
// tiered_gemm_bm128x256.cu).
#include "gpu/kernels/tiered_gemm.h"

#include <string>

#include "core/error.h"
#include "core/rope_layout.h"
#include "gpu/cuda_check.h"

namespace dak::gpu {
namespace tiered_gemm_detail {
template <int kBm, int kBn>
void launch(const TieredGemmArgs& a, const TieredGemmSchedule& s, void* g_workspace, cudaStream_t stream);
int64_t co_resident_ctas(int32_t cluster);  // the 128 x 128 kernel in clusters of `cluster` (128 x 256: the same, 1 CTA per SM)
}  // namespace tiered_gemm_detail

namespace {

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

/// Host rows must be pinned and mapped with the same address on the device (PinnedHostArena).
void check_host_rows(const void* h_w, const std::string& where) {
  cudaPointerAttributes attr{};
  DAK_CUDA_CHECK(cudaPointerGetAttributes(&attr, h_w));
  if (attr.type != cudaMemoryTypeHost || attr.devicePointer != h_w) {
    fail("the host rows of W are not pinned, mapped host memory with a device address equal to the host address",
         where, "allocate them from a PinnedHostArena (cudaHostRegister with cudaHostRegisterMapped)");
  }
}

}  // namespace

TieredGemmLinkLimits tiered_gemm_cluster_limits(TieredGemmLinkLimits base) {
  static const int64_t cluster4 = tiered_gemm_detail::co_resident_ctas(4);
  base.cluster4_ctas = cluster4;
  return base;
}

void tiered_gemm_workspace_init(void* g_workspace, const TieredGemmSchedule& schedule, cudaStream_t stream) {
  schedule.validate();
  if (!g_workspace) fail("tiered GEMM workspace is null", "tiered_gemm_workspace_init", "allocate workspace_bytes()");
  DAK_CUDA_CHECK(cudaMemsetAsync(g_workspace, 0, size_t(schedule.counter_bytes()), stream));
}

void tiered_gemm(const TieredGemmArgs& a, const TieredGemmSchedule& s, void* g_workspace, cudaStream_t stream) {
  s.validate();
  const std::string where = "tiered GEMM " + s.to_string();
  const int64_t ldx = a.ldx > 0 ? a.ldx : s.K;
  const int64_t ldy = a.ldy > 0 ? a.ldy : s.M;
  const bool norm_out = a.norm_out.g_residual != nullptr, norm_in = a.norm_in.g_sumsq != nullptr;
  const bool act_out = a.act_out.g_out != nullptr;
  if (!a.g_x || (!a.g_y && !norm_out && !act_out) || !g_workspace || (s.m_host > 0 && !a.h_w) || (s.m_host < s.M && !a.g_w)) {
    fail("a required pointer is null (x, y, workspace, or the W rows of a side that has rows)", where,
         "pass every operand; h_w may be null only when m_host == 0 and g_w only when m_host == M");
  }
  if (!aligned16(a.g_x) || (a.h_w && !aligned16(a.h_w)) || (a.g_w && !aligned16(a.g_w)) || ldx % 8 != 0 ||
      ldx < s.K || ldy < s.M || reinterpret_cast<uintptr_t>(g_workspace) % 256 != 0) {
    fail("operands must be 16-byte aligned with row pitches that are multiples of 8 elements (ldx >= K, ldy >= M), "
         "and the workspace 256-byte aligned",
         where, "allocate from the HBM / pinned host arenas (256-byte aligned slices)");
  }
  if (norm_out && (s.tile.bm != 64 || s.M % 64 != 0 || s.m_host % 64 != 0 || a.out != TieredGemmOut::kBf16 ||
                   a.relu || !a.norm_out.g_scaled || !a.norm_out.g_sumsq)) {
    fail("the norm-out epilogue needs the 64-row tiles (N <= 64), M and m_host multiples of 64, bf16 output without "
         "ReLU, and its scaled-x and block-sum outputs",
         where, "run the plain GEMM, then rms_norm_out (kernels/norm.h) for the same bits");
  }
  if (norm_in && (s.tile.bm != 64 || s.n_tiles() != 1 || s.K % 64 != 0)) {
    fail("the norm-in epilogue needs the 64-row tiles with one n-tile (N <= bn) and K a multiple of 64", where,
         "normalize x with residual_norm (kernels/norm.h) and run the plain GEMM");
  }
  if (a.rope.g_positions) {
    const TieredGemmRopeOut& r = a.rope;
    const int64_t D = r.kv.head_dim;
    if (s.tile.bm != 64 || a.out != TieredGemmOut::kBf16 || a.relu || norm_out || !a.g_y || !rope_layout::pairable(D) ||
        r.num_q_heads < 1 || s.M != (r.num_q_heads + 2 * int64_t(r.kv.num_kv_heads)) * D || s.m_host % 16 != 0 ||
        !r.g_inv_freq || !r.g_slots || !r.g_cache_positions) {
      fail("the RoPE epilogue needs the 64-row tiles (N <= 64), bf16 output without ReLU or norm-out, M = (H + 2 Hkv) "
           "* D with D a multiple of 16, m_host a multiple of 16, and its inv_freq, slots and cache positions",
           where, "run the plain GEMM, then apply_rope_kv_append (kernels/rope.h) with paired_rows for the same bits");
    }
    check_kv_cache_layer(r.kv, where);
  }
  if (act_out && (s.tile.bm != 64 || a.out != TieredGemmOut::kBf16 || a.relu || norm_out || a.rope.g_positions ||
                  !rope_layout::pairable(s.M) || s.m_host % 16 != 0 || (a.act_out.ldo != 0 && a.act_out.ldo < s.M / 2))) {
    fail("the activation epilogue needs the 64-row tiles (N <= 64), bf16 output without ReLU, norm-out or RoPE, M "
         "(= 2I) and m_host multiples of 16, and an output row pitch of at least M / 2",
         where, "run the plain GEMM, then mlp_activation (kernels/activation.h) with paired for the same bits");
  }
  if (s.m_host > 0 && !a.host_rows_staged) check_host_rows(a.h_w, where);
  using namespace tiered_gemm_detail;
  const int bm = s.tile.bm, bn = s.tile.bn;
  if (bm == 64 && bn == 8) return launch<64, 8>(a, s, g_workspace, stream);
  if (bm == 64 && bn == 16) return launch<64, 16>(a, s, g_workspace, stream);
  if (bm == 64 && bn == 32) return launch<64, 32>(a, s, g_workspace, stream);
  if (bm == 64 && bn == 64) return launch<64, 64>(a, s, g_workspace, stream);
  if (bm == 128 && bn == 128) return launch<128, 128>(a, s, g_workspace, stream);
  if (bm == 128 && bn == 256) return launch<128, 256>(a, s, g_workspace, stream);
  fail("tile " + std::to_string(bm) + "x" + std::to_string(bn) + " is not compiled", where,
       "use choose_tiered_gemm_tile()");
}

}  // namespace dak::gpu
