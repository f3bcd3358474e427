// A test-side two-tier KV cache of one layer (gpu/kernels/kv_cache.h): the host tier in pinned
// mapped host memory (a PinnedHostArena, as the engine will use), the HBM tier in a DeviceBuffer;
// uploads and downloads the logical contents [slots][Hkv][max_ctx][D] across both tiers.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/kv_append.h"
#include "gpu/kernels/kv_cache.h"
#include "gpu/kernels/rope.h"
#include "kernel_test_util.h"

namespace dak::test {

class TwoTierKvCache {
 public:
  /// Slots [0, b_host) in the host tier, [b_host, slots) in HBM; contents uninitialized.
  TwoTierKvCache(int64_t slots, int64_t b_host, int64_t num_kv_heads, int64_t head_dim, int64_t max_ctx)
      : slots_(slots),
        b_host_(b_host),
        hkv_(num_kv_heads),
        d_(head_dim),
        ctx_(max_ctx),
        g_k_(size_t(hbm_elems())),
        g_v_(size_t(hbm_elems())),
        host_(2 * dak::gpu::PinnedHostArena::aligned_size(uint64_t(host_elems()) * 2), "test KV host tier") {
    h_k_ = host_.allocate_array<Bf16Bits>(uint64_t(host_elems()), "host K");
    h_v_ = host_.allocate_array<Bf16Bits>(uint64_t(host_elems()), "host V");
  }

  int64_t slot_elems() const { return hkv_ * ctx_ * d_; }                 // one slot's K (or V)
  int64_t host_elems() const { return b_host_ * slot_elems(); }           // host tier's K (or V)
  int64_t hbm_elems() const { return (slots_ - b_host_) * slot_elems(); }  // HBM tier's K (or V)
  int64_t b_host() const { return b_host_; }

  /// The view kernels take; a tier without slots is null.
  dak::gpu::KvCacheLayer layer() const {
    dak::gpu::KvCacheLayer kv;
    kv.h_k = b_host_ > 0 ? bf(h_k_) : nullptr;
    kv.h_v = b_host_ > 0 ? bf(h_v_) : nullptr;
    kv.g_k = b_host_ < slots_ ? bf(g_k_.get()) : nullptr;
    kv.g_v = b_host_ < slots_ ? bf(g_v_.get()) : nullptr;
    kv.batch = int32_t(slots_);
    kv.b_host = int32_t(b_host_);
    kv.num_kv_heads = int32_t(hkv_);
    kv.head_dim = int32_t(d_);
    kv.max_ctx = ctx_;
    return kv;
  }

  /// Writes logical K and V ([slots][Hkv][max_ctx][D] each) into the two tiers.
  void upload(const std::vector<Bf16Bits>& k, const std::vector<Bf16Bits>& v) {
    if (host_elems() > 0) {
      std::memcpy(h_k_, k.data(), size_t(host_elems()) * 2);
      std::memcpy(h_v_, v.data(), size_t(host_elems()) * 2);
    }
    g_k_.upload(std::vector<Bf16Bits>(k.begin() + host_elems(), k.end()));
    g_v_.upload(std::vector<Bf16Bits>(v.begin() + host_elems(), v.end()));
  }
  /// Every byte of both tiers 0xFF (bf16 NaN).
  void poison() {
    DAK_CUDA_CHECK(cudaDeviceSynchronize());
    if (host_elems() > 0) {
      std::memset(h_k_, 0xff, size_t(host_elems()) * 2);
      std::memset(h_v_, 0xff, size_t(host_elems()) * 2);
    }
    g_k_.poison();
    g_v_.poison();
  }
  /// Logical K (V) after the device finished: the host tier's slots, then the HBM tier's.
  std::vector<Bf16Bits> k() const { return logical(h_k_, g_k_); }
  std::vector<Bf16Bits> v() const { return logical(h_v_, g_v_); }

 private:
  std::vector<Bf16Bits> logical(const Bf16Bits* h, const DeviceBuffer<Bf16Bits>& g) const {
    DAK_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<Bf16Bits> out(size_t(slots_ * slot_elems()));
    if (host_elems() > 0) std::memcpy(out.data(), h, size_t(host_elems()) * 2);
    const std::vector<Bf16Bits> hbm = g.download();
    std::copy_n(hbm.begin(), hbm_elems(), out.begin() + host_elems());
    return out;
  }

  int64_t slots_, b_host_, hkv_, d_, ctx_;
  DeviceBuffer<Bf16Bits> g_k_, g_v_;    // [slots - b_host][Hkv][max_ctx][D]
  dak::gpu::PinnedHostArena host_;
  Bf16Bits* h_k_ = nullptr;             // [b_host][Hkv][max_ctx][D], pinned mapped host
  Bf16Bits* h_v_ = nullptr;
};

/// What apply_rope_kv_append takes for fused QKV rows [T, stride] (q heads at column 0, k heads at
/// H * D, v heads at (H + Hkv) * D): RoPE at `rope_positions` (cos / sin times m; `paired`: q / k
/// heads in the paired row order), then k and v into `kv` at (slots[t], cache_positions[t]).
struct QkvRopeAppend {
  dak::gpu::RopeParams rope;
  dak::gpu::KvAppendParams kv;
};
inline QkvRopeAppend qkv_rope_append(Bf16Bits* rows, int64_t stride, int H, int Hkv, int D, const int32_t* rope_positions,
                                     const float* inv_freq, float m, bool paired, const int32_t* slots,
                                     const int32_t* cache_positions, const dak::gpu::KvCacheLayer& kv, int64_t T) {
  const int64_t qd = int64_t(H) * D, kvd = int64_t(Hkv) * D;
  QkvRopeAppend a;
  a.rope.g_qkv = bf(rows);
  a.rope.row_stride = stride;
  a.rope.q_offset = 0;
  a.rope.k_offset = qd;
  a.rope.g_positions = rope_positions;
  a.rope.g_inv_freq = inv_freq;
  a.rope.T = T;
  a.rope.num_q_heads = H;
  a.rope.num_k_heads = Hkv;
  a.rope.head_dim = D;
  a.rope.attention_factor = m;
  a.rope.paired_rows = paired;
  a.kv = dak::gpu::KvAppendParams{bf(rows), stride, qd, qd + kvd, slots, cache_positions, kv, T};
  return a;
}

}  // namespace dak::test
