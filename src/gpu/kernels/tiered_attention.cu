// Tiered decode attention (kernels/tiered_attention.h): the persistent warp-per-item kernel, the
// combine kernel for split sequences and the launcher.
#include "gpu/kernels/tiered_attention.h"

#include <cuda/ptx>
#include <cuda_pipeline.h>

#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/mma_sm80.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "core/env.h"
#include "core/error.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/reduce.cuh"
#include "gpu/kernels/rope_pair.cuh"
#include "gpu/launch.h"

namespace dak::gpu {
namespace {

namespace ta = dak::tiered_attention;
using bf16 = __nv_bfloat16;

constexpr int kCombineThreads = 128;

struct KernelParams {
  TieredAttentionArgs a;
  TieredAttentionSchedule s;
  float* g_part_ml = nullptr;    // [B][H][num_splits][2] fp32, HBM: (m in log2 units, l) per split
  float* g_part_o = nullptr;     // [B][H][num_splits][D] fp32, HBM: unnormalized output per split
  float scale_log2 = 0.f;        // scale * log2(e)
  bool early_kv = true;          // request the steps before key len - 1 before the dependency wait
  int64_t merge_offset = 0;      // with s.smem_merge: bytes from the dynamic SMEM start to the merge area
};

/// DAK_ATTN_EARLY_KV=0 in the environment: every load after the dependency wait (for A/B
/// measurements; docs/perf-notes.md session 17). Read once per process.
bool early_kv_enabled() {
  static const bool on = env_flag("DAK_ATTN_EARLY_KV", true);
  return on;
}

__device__ __forceinline__ uint32_t bf16x2_bits(__nv_bfloat162 v) { return *reinterpret_cast<uint32_t*>(&v); }

/// (a, b) -> bf16x2 hi = rn(a, b) and lo = rn(a - hi.x, b - hi.y): hi + lo carries ~16 bits.
__device__ __forceinline__ void split_bf16x2(float a, float b, uint32_t& hi, uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  const float2 hf = __bfloat1622float2(h);
  hi = bf16x2_bits(h);
  lo = bf16x2_bits(__floats2bfloat162_rn(a - hf.x, b - hf.y));
}

/// d += a . b on one m16n8k16 tile (bf16 in, fp32 accumulate; CuTe's SM80 atom).
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  cute::SM80_16x8x16_F32BF16BF16F32_TN::fma(d[0], d[1], d[2], d[3], a[0], a[1], a[2], a[3], b0, b1, d[0], d[1], d[2],
                                           d[3]);
}

/// ldmatrix x4: lane l gives the SMEM address of row (l % 8) of matrix l / 8.
__device__ __forceinline__ void ldsm_x4(const bf16* row, uint32_t (&r)[4]) {
  cute::SM75_U32x4_LDSM_N::copy(*reinterpret_cast<const cute::uint128_t*>(row), r[0], r[1], r[2], r[3]);
}
__device__ __forceinline__ void ldsm_x4_trans(const bf16* row, uint32_t (&r)[4]) {
  cute::SM75_U16x8_LDSM_T::copy(*reinterpret_cast<const cute::uint128_t*>(row), r[0], r[1], r[2], r[3]);
}

/// One worker's view of an item.
struct Work {
  int64_t seq;
  int32_t hk, split;
  int32_t len;    // keys of the sequence, clamped to [0, max_ctx]
  int32_t kb;     // first key of the split
  int32_t ke;     // one past its last live key (<= kb when the split holds none)
  int32_t steps;  // 16-key steps of the split
};

#ifdef DAK_ATT_TRACE
// Per warp, kAttTraceFields %globaltimer stamps (ns) of the last launch: start, first step landed,
// last step done, end, before the dependency wait, after it, first item's q in registers, unused.
constexpr int kAttTraceFields = 8;
__device__ unsigned long long g_att_trace[kAttTraceFields * 65536];
#endif

template <int D>
__global__ void __launch_bounds__(ta::kThreads) tiered_attention_kernel(const __grid_constant__ KernelParams p) {
  namespace ptx = cuda::ptx;
  // launched by launch_dependent (gpu/launch.h); its dependency_wait() comes after the prologue's
  // loads of keys that no kernel of this pass writes (see the prologue below).
  constexpr int kKSteps = D / 16;                         // k-steps of Q K^T
  constexpr int kNTiles = D / 8;                          // 8-column tiles of O
  constexpr int kRow = D + ta::kRowPad;                   // padded SMEM row, elements
  constexpr int kVecs = D / 8;                            // 16-byte vectors per row
  constexpr int kPadElems = 2 * ta::kStepKeys * kRow;     // one padded step: K rows 0..15, V rows 16..31
  constexpr int kStgElems = 2 * ta::kStepKeys * D;        // one staging step: K rows, then V rows
  static_assert(D % 16 == 0 && kNTiles % 2 == 0, "head_dim must be a multiple of 16");

  extern __shared__ __align__(128) uint8_t smem[];
  const TieredAttentionSchedule& s = p.s;
  const TieredAttentionArgs& a = p.a;
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  const bool host = int(blockIdx.x) < s.host_ctas;
  // Workers per CTA: a host CTA's first host_warps warps (its other warps only meet the CTA's
  // barriers), an HBM CTA's 4. Worker index: CTA of the side * nw + warp.
  const int nw = host ? s.host_warps : ta::kWarps;
  const bool idle = warp >= nw;
  const int64_t workers = int64_t(host ? s.host_ctas : s.hbm_ctas) * nw;
  const int64_t wid = int64_t(host ? blockIdx.x : blockIdx.x - s.host_ctas) * nw + warp;
  const int64_t n_items = host ? s.host_items() : s.hbm_items();
#ifdef DAK_ATT_TRACE
  const int64_t gw = int64_t(blockIdx.x) * ta::kWarps + warp;
  unsigned long long tr0 = cuda::ptx::get_sreg_globaltimer(), tr1 = 0, tr2 = 0, trp = 0, trw = 0, trq = 0;
  struct TraceEnd {
    int64_t gw;
    unsigned long long &a, &b, &c, &d, &e, &f;
    int lane;
    __device__ ~TraceEnd() {
      if (lane == 0 && gw < 65536) {
        unsigned long long* t = g_att_trace + kAttTraceFields * gw;
        t[0] = a;
        t[1] = b;
        t[2] = c;
        t[3] = cuda::ptx::get_sreg_globaltimer();
        t[4] = d;
        t[5] = e;
        t[6] = f;
      }
    }
  } trace_end{gw, tr0, tr1, tr2, trp, trw, trq, lane};
#endif
  // Warps are independent except with cta_combine, where the CTA's warps meet at one barrier per
  // round of items (round k: items k * workers + nw * cta + warp) and merge that round's pairs.
  const bool cta_combine = s.cta_combine;
  const int64_t cta_first = wid - warp;  // item of warp 0 in round 0
  if (cta_combine ? cta_first >= n_items : (idle || wid >= n_items)) return;  // CTA-uniform with cta_combine
  const int64_t my_items = !idle && wid < n_items ? (n_items - wid + workers - 1) / workers : 0;
  const int64_t rounds = cta_combine ? (n_items - cta_first + workers - 1) / workers : my_items;

  const int stages = host ? s.host_stages : s.hbm_stages;
  // The load path: host warps, and HBM warps with schedule.hbm_staged, land whole steps by TMA in a
  // staging ring and copy them into one padded step ("staged"); the other HBM warps load into a
  // ring of padded steps (cp.async or bulk rows).
  const bool staged = host || s.hbm_staged;
  // SMEM (core/tiered_attention_schedule.h): HBM CTA [warp][stage] padded steps; host CTA (and a
  // staged HBM CTA) [warp] padded step | [warp][stage] staging steps | [warp][stage] mbarriers,
  // for its nw working warps; with smem_merge, from p.merge_offset (after the larger role's rings)
  // the merge area [warp][G][D] fp32 partial outputs then [G][2] fp32 (m, l). An idle warp's
  // pointers lie past its CTA's rings and are never used.
  bf16* s_pad = reinterpret_cast<bf16*>(smem) + warp * (staged ? 1 : stages) * kPadElems;
  bf16* s_stg = reinterpret_cast<bf16*>(smem + nw * ta::padded_step_bytes(D)) + warp * stages * kStgElems;
  uint64_t* s_full =
      reinterpret_cast<uint64_t*>(smem + nw * (ta::padded_step_bytes(D) + stages * ta::staging_step_bytes(D))) +
      warp * stages;

  const int64_t Hkv = s.shape.num_kv_heads, H = s.shape.num_heads;
  const int32_t max_ctx = int32_t(s.shape.max_ctx);
  const int G = int(s.shape.group());
  const int S = s.split.num_splits, split_keys = s.split.split_keys;
  const bool append = a.g_new != nullptr, rope_q = append && a.g_inv_freq != nullptr;
  const bf16* t_k = host ? a.h_k : a.g_k;  // this side's tier: [slots][Hkv][max_ctx][D]
  const bf16* t_v = host ? a.h_v : a.g_v;
  const int64_t slot0 = host ? 0 : s.b_host;

  // Keys of sequence `seq`, clamped to [0, max_ctx] (the item loop and the CTA merge read it).
  auto len_of = [&](int64_t seq) { return min(max(__ldg(a.g_len + seq), 0), max_ctx); };
  auto work_of = [&](int64_t k) {  // the k-th item of this worker
    const TieredAttentionSchedule::Item it = s.item(host, wid + k * workers);
    Work w;
    w.seq = it.seq;
    w.hk = it.kv_head;
    w.split = it.split;
    w.len = len_of(it.seq);
    w.kb = it.split * split_keys;
    w.ke = int32_t(min(int64_t(w.len), int64_t(w.kb) + split_keys));
    w.steps = w.ke > w.kb ? (w.ke - w.kb + ta::kStepKeys - 1) / ta::kStepKeys : 0;
    return w;
  };

  if (staged && !idle) {
    if (lane == 0) {
      for (int st = 0; st < stages; ++st) ptx::mbarrier_init(&s_full[st], 1);
      ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    }
    __syncwarp();
  }
  // HBM warps with bulk row copies: one "full" mbarrier per ring slot.
  const bool bulk = !staged && s.hbm_bulk_rows;
  __shared__ uint64_t s_hbm_full_all[ta::kWarps][ta::kMaxStages];
  uint64_t* s_hfull = s_hbm_full_all[warp];
  if (bulk) {
    if (lane == 0) {
      for (int st = 0; st < stages; ++st) ptx::mbarrier_init(&s_hfull[st], 1);
      ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
    }
    __syncwarp();
  }

  // Load cursor: the next step to bring in is step lc of item lk (lw). Loads run ahead of the
  // consumer across item boundaries, through the same sequence of steps.
  int64_t lk = 0;
  int32_t lc = 0;
  Work lw{};
  auto seek = [&](int64_t k) {
    for (; k < my_items; ++k) {
      lw = work_of(k);
      if (lw.steps > 0) break;
    }
    lk = k;
    lc = 0;
  };
  seek(0);
  int issue_slot = 0;
  auto issue = [&]() {  // all lanes: loads the cursor's step into ring slot issue_slot
    if (lk >= my_items) return;
    const int key0 = lw.kb + lc * ta::kStepKeys;
    const int n = min(ta::kStepKeys, lw.ke - key0);                      // live rows, >= 1
    const int64_t row0 = ((lw.seq - slot0) * Hkv + lw.hk) * int64_t(max_ctx) + key0;  // tier row
    if (staged) {
      if (lane == 0) {
        bf16* dst = s_stg + issue_slot * kStgElems;
        const uint32_t bytes = uint32_t(n) * D * 2;
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &s_full[issue_slot],
                                       2 * bytes);
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dst, t_k + row0 * D, bytes, &s_full[issue_slot]);
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dst + ta::kStepKeys * D, t_v + row0 * D, bytes,
                           &s_full[issue_slot]);
      }
    } else {
      bf16* dst = s_pad + issue_slot * kPadElems;
      if (bulk) {  // lane r < 16: K row r, lane 16 + r: V row r (live rows only; the consumer zeroes the rest)
        const int r = lane & (ta::kStepKeys - 1);
        if (r < n) {
          ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dst + ((lane >> 4) * ta::kStepKeys + r) * kRow,
                             (lane < ta::kStepKeys ? t_k : t_v) + (row0 + r) * D, uint32_t(D * 2),
                             &s_hfull[issue_slot]);
        }
        if (lane == 0) {
          ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &s_hfull[issue_slot],
                                         uint32_t(2 * n * D * 2));
        }
      } else {
        for (int e = lane; e < ta::kStepKeys * kVecs; e += 32) {
          const int r = e / kVecs, v = e % kVecs;
          const bool live = r < n;  // rows past len are zero-filled, never read
          const int64_t off = (row0 + (live ? r : 0)) * D + v * 8;
          __pipeline_memcpy_async(dst + r * kRow + v * 8, t_k + off, 16, live ? 0 : 16);
          __pipeline_memcpy_async(dst + (ta::kStepKeys + r) * kRow + v * 8, t_v + off, 16, live ? 0 : 16);
        }
      }
    }
    if (++issue_slot == stages) issue_slot = 0;
    if (++lc == lw.steps) seek(lk + 1);
  };

  // Prologue: a host ring is filled completely (each slot completes on its own mbarrier); a
  // cp.async ring keeps one slot free for the copy issued at each step. The lengths and the keys
  // [0, len - 1) were written before the previous kernel on the stream began (the contract in
  // tiered_attention.h: in a decode step only key len - 1 is new, appended by the kernel just
  // before), so the steps that end before key len - 1 are requested before the dependency wait,
  // while the previous kernels finish; q, key len - 1 and the outputs wait for it.
  const int prologue = staged ? stages : stages - 1;
  int j = 0;
  for (; p.early_kv && j < prologue && lk < my_items && lw.kb + (lc + 1) * ta::kStepKeys < lw.len; ++j) {
    issue();
    if (!staged) __pipeline_commit();
  }
#ifdef DAK_ATT_TRACE
  trp = cuda::ptx::get_sreg_globaltimer();
#endif
  dependency_wait();
#ifdef DAK_ATT_TRACE
  trw = cuda::ptx::get_sreg_globaltimer();
#endif
  for (; j < prologue; ++j) {
    issue();
    if (!staged) __pipeline_commit();
  }

  const int g = lane >> 2, j2 = 2 * (lane & 3);  // mma fragment row (and row g + 8) and column pair
  const int mi = lane >> 3, mr = lane & 7;       // ldmatrix: matrix and row this lane addresses
  ta::PipeState ps{stages, 0, 0};                // consumer's ring position

  // Runs item k of this worker: its steps, then its output row (the only live split) or partial.
  auto run_item = [&](int64_t k) {
    const Work w = work_of(k);
    const int n_live = s.live_splits(w.len);
    if (w.steps == 0 && !(w.split == 0 && w.len == 0)) return;  // a split past the live keys

    // Q fragments (A operand of S = Q K^T): rows = the G query heads of kv head hk, zero rows >= G.
    uint32_t qa[kKSteps][4];
    {
      const bf16* q = a.g_q + w.seq * a.q_stride + int64_t(w.hk) * G * D;  // [G][D]
#pragma unroll
      for (int ks = 0; ks < kKSteps; ++ks) {
#pragma unroll
        for (int r = 0; r < 4; ++r) {  // r: {row g, row g + 8} x {columns j2, j2 + 8}
          const int row = g + (r & 1) * 8, col = ks * 16 + (r >> 1) * 8 + j2;
          qa[ks][r] = row < G ? __ldg(reinterpret_cast<const unsigned int*>(q + row * D + col)) : 0u;
        }
      }
    }
#ifdef DAK_ATT_TRACE
    if (trq == 0) {  // the stamp waits for the first q load (an asm input must be in a register)
      asm volatile("" ::"r"(qa[0][0]) : "memory");
      trq = cuda::ptx::get_sreg_globaltimer();
    }
#endif
    if (rope_q && w.len > 0) {  // fused RoPE: column i of k-step ks pairs with i + D/2 of ks + kKSteps/2
      if constexpr ((D / 2) % 16 == 0) {
        const float pos = float(w.len - 1);
#pragma unroll
        for (int ks = 0; ks < kKSteps / 2; ++ks) {
#pragma unroll
          for (int hc = 0; hc < 2; ++hc) {  // columns j2 (+ 1) and 8 + j2 (+ 1) of the k-step
            const int col = ks * 16 + hc * 8 + j2;
            const float f0 = __ldg(a.g_inv_freq + col), f1 = __ldg(a.g_inv_freq + col + 1);
#pragma unroll
            for (int rr = 0; rr < 2; ++rr) {  // rows g, g + 8
              const int r = hc * 2 + rr;
              uint32_t& lo = qa[ks][r];
              uint32_t& hi = qa[ks + kKSteps / 2][r];
              const float2 x1 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&lo));
              const float2 x2 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&hi));
              __nv_bfloat162 y1, y2;
              rope_pair(x1.x, x2.x, pos, f0, a.rope_attention_factor, y1.x, y2.x);
              rope_pair(x1.y, x2.y, pos, f1, a.rope_attention_factor, y1.y, y2.y);
              lo = bf16x2_bits(y1);
              hi = bf16x2_bits(y2);
            }
          }
        }
      }
    }
    float o[kNTiles][4];
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;  // rows g and g + 8 (l: this thread's part)

    for (int c = 0; c < w.steps; ++c) {
      const int n = min(ta::kStepKeys, w.ke - (w.kb + c * ta::kStepKeys));  // live keys of the step, >= 1
      bf16* pad;
      if (staged) {
        while (!ptx::mbarrier_try_wait_parity(&s_full[ps.stage], ps.phase)) {
        }
        const bf16* stg = s_stg + ps.stage * kStgElems;
        for (int e = lane; e < 2 * ta::kStepKeys * kVecs; e += 32) {  // staging [32][D] -> padded [32][kRow]
          const int r = e / kVecs, v = e % kVecs;
          uint4 x = make_uint4(0u, 0u, 0u, 0u);
          if ((r % ta::kStepKeys) < n) x = *reinterpret_cast<const uint4*>(stg + r * D + v * 8);
          *reinterpret_cast<uint4*>(s_pad + r * kRow + v * 8) = x;
        }
        __syncwarp();
        issue();  // the staging slot just read is the next one to fill
        pad = s_pad;
      } else if (bulk) {
        issue();  // into the slot the previous step freed
        bf16* slot = s_pad + ps.stage * kPadElems;
        while (!ptx::mbarrier_try_wait_parity(&s_hfull[ps.stage], ps.phase)) {
        }
        if (n < ta::kStepKeys) {  // rows past len: zeros (V rows meet P = 0; stale SMEM may hold NaN bits)
          for (int e = lane; e < 2 * ta::kStepKeys * kVecs; e += 32) {
            const int r = e / kVecs, v = e % kVecs;
            if ((r % ta::kStepKeys) >= n) *reinterpret_cast<uint4*>(slot + r * kRow + v * 8) = make_uint4(0u, 0u, 0u, 0u);
          }
          ptx::fence_proxy_async(ptx::space_shared);  // these generic writes before later TMA writes to the slot
        }
        __syncwarp();
        pad = slot;
      } else {
        issue();
        __pipeline_commit();
        __pipeline_wait_prior(size_t(stages - 1));
        __syncwarp();  // every lane's copies of this step have landed
        pad = s_pad + ps.stage * kPadElems;
      }
      ps.advance();
#ifdef DAK_ATT_TRACE
      if (tr1 == 0) tr1 = cuda::ptx::get_sreg_globaltimer();
#endif
      if (append) {  // fused append: the step holding key len - 1 takes the new row, as does the cache
        const int key0 = w.kb + c * ta::kStepKeys, rr = w.len - 1 - key0;
        if (rr >= 0 && rr < n) {
          const int64_t crow = (((w.seq - slot0) * Hkv + w.hk) * int64_t(max_ctx) + (w.len - 1)) * D;
          bf16* c_k = const_cast<bf16*>(t_k) + crow;  // [D] row len - 1 of the tier
          bf16* c_v = const_cast<bf16*>(t_v) + crow;
          const bf16* n_k = a.g_new + w.seq * a.new_stride + a.new_k_offset + int64_t(w.hk) * D;
          const bf16* n_v = a.g_new + w.seq * a.new_stride + a.new_v_offset + int64_t(w.hk) * D;
          bf16* p_k = pad + rr * kRow;
          bf16* p_v = pad + (ta::kStepKeys + rr) * kRow;
          if (a.g_inv_freq) {
            const float pos = float(w.len - 1);
            for (int i = lane; i < D / 2; i += 32) {
              bf16 y1, y2;
              rope_pair(__bfloat162float(n_k[i]), __bfloat162float(n_k[i + D / 2]), pos, __ldg(a.g_inv_freq + i),
                        a.rope_attention_factor, y1, y2);
              p_k[i] = c_k[i] = y1;
              p_k[i + D / 2] = c_k[i + D / 2] = y2;
            }
          } else {
            for (int i = lane; i < D; i += 32) p_k[i] = c_k[i] = n_k[i];
          }
          for (int i = lane; i < D; i += 32) p_v[i] = c_v[i] = n_v[i];
          if (bulk) ptx::fence_proxy_async(ptx::space_shared);  // before later TMA writes to the slot
          __syncwarp();
        }
      }

      // S = Q K^T for the step's 16 keys: n-tile t holds keys 8t .. 8t + 7.
      float sc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
      {
        // matrix mi: keys 8 * (mi >> 1) + row, dims 16 ks + 8 * (mi & 1) .. + 7
        const bf16* krow = pad + ((mi >> 1) * 8 + mr) * kRow + (mi & 1) * 8;
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks) {
          uint32_t kb[4];
          ldsm_x4(krow + ks * 16, kb);
          mma_bf16(sc[0], qa[ks], kb[0], kb[1]);
          mma_bf16(sc[1], qa[ks], kb[2], kb[3]);
        }
      }
      // Online softmax, base 2. Element e of tile t: row g (e < 2) or g + 8, key 8t + j2 + (e & 1).
      float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
      for (int t = 0; t < 2; ++t) {
#pragma unroll
        for (int e = 0; e < 4; ++e) sc[t][e] = t * 8 + j2 + (e & 1) < n ? sc[t][e] * p.scale_log2 : -INFINITY;
        mx0 = fmaxf(mx0, fmaxf(sc[t][0], sc[t][1]));
        mx1 = fmaxf(mx1, fmaxf(sc[t][2], sc[t][3]));
      }
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);  // finite: key 0 of the step is live
      const float c0 = exp2f(m0 - mn0), c1 = exp2f(m1 - mn1);  // 0 on the first step (m = -inf)
      m0 = mn0;
      m1 = mn1;
      float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        sc[t][0] = exp2f(sc[t][0] - mn0);
        sc[t][1] = exp2f(sc[t][1] - mn0);
        sc[t][2] = exp2f(sc[t][2] - mn1);
        sc[t][3] = exp2f(sc[t][3] - mn1);
        sum0 += sc[t][0] + sc[t][1];
        sum1 += sc[t][2] + sc[t][3];
      }
      l0 = l0 * c0 + sum0;
      l1 = l1 * c1 + sum1;
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        o[nt][0] *= c0;
        o[nt][1] *= c0;
        o[nt][2] *= c1;
        o[nt][3] *= c1;
      }
      // P as the A operand of O += P V (its C layout is the A layout), split into bf16 hi + lo.
      uint32_t ph[4], pl[4];
      split_bf16x2(sc[0][0], sc[0][1], ph[0], pl[0]);  // row g, keys j2, j2 + 1
      split_bf16x2(sc[0][2], sc[0][3], ph[1], pl[1]);  // row g + 8
      split_bf16x2(sc[1][0], sc[1][1], ph[2], pl[2]);  // row g, keys 8 + j2, 9 + j2
      split_bf16x2(sc[1][2], sc[1][3], ph[3], pl[3]);  // row g + 8
      {
        // matrix mi (transposed): keys 8 * (mi & 1) + row, dims 16 pp + 8 * (mi >> 1) .. + 7
        const bf16* vrow = pad + (ta::kStepKeys + (mi & 1) * 8 + mr) * kRow + (mi >> 1) * 8;
#pragma unroll
        for (int pp = 0; pp < kNTiles / 2; ++pp) {
          uint32_t vb[4];
          ldsm_x4_trans(vrow + pp * 16, vb);
          mma_bf16(o[2 * pp], ph, vb[0], vb[1]);
          mma_bf16(o[2 * pp], pl, vb[0], vb[1]);
          mma_bf16(o[2 * pp + 1], ph, vb[2], vb[3]);
          mma_bf16(o[2 * pp + 1], pl, vb[2], vb[3]);
        }
      }
      __syncwarp();  // the slot is free for the next copy into it
    }

#ifdef DAK_ATT_TRACE
    tr2 = cuda::ptx::get_sreg_globaltimer();
#endif
    // The item's row sums (the row max is already the same on the 4 lanes of a row).
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    bf16* g_out = a.g_out + w.seq * H * D + int64_t(w.hk) * G * D;  // [G][D] of this kv head
    if (n_live == 1) {  // the only live split (split 0): normalize and write
      const float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        if (g < G) {
          *reinterpret_cast<__nv_bfloat162*>(g_out + g * D + nt * 8 + j2) =
              __floats2bfloat162_rn(o[nt][0] * i0, o[nt][1] * i0);
        }
        if (g + 8 < G) {
          *reinterpret_cast<__nv_bfloat162*>(g_out + (g + 8) * D + nt * 8 + j2) =
              __floats2bfloat162_rn(o[nt][2] * i1, o[nt][3] * i1);
        }
      }
      return;
    }
    // Several live splits: write this one's partial; the CTA (cta_combine) or the combine kernel
    // merges them. With smem_merge the warp's SMEM slot holds it: [G][D] outputs, then [G][2] (m, l).
    if (s.smem_merge) {
      float* mo = reinterpret_cast<float*>(smem + p.merge_offset) + warp * G * (D + 2);
      float* mml = mo + G * D;
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt) {
        if (g < G) *reinterpret_cast<float2*>(mo + g * D + nt * 8 + j2) = make_float2(o[nt][0], o[nt][1]);
        if (g + 8 < G) *reinterpret_cast<float2*>(mo + (g + 8) * D + nt * 8 + j2) = make_float2(o[nt][2], o[nt][3]);
      }
      if ((lane & 3) == 0) {
        if (g < G) *reinterpret_cast<float2*>(mml + g * 2) = make_float2(m0, l0);
        if (g + 8 < G) *reinterpret_cast<float2*>(mml + (g + 8) * 2) = make_float2(m1, l1);
      }
      return;
    }
    const int64_t hb = (w.seq * H + int64_t(w.hk) * G) * S + w.split;  // (sequence, head hk*G, split); + row*S
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt) {
      if (g < G) {
        *reinterpret_cast<float2*>(p.g_part_o + (hb + g * S) * D + nt * 8 + j2) = make_float2(o[nt][0], o[nt][1]);
      }
      if (g + 8 < G) {
        *reinterpret_cast<float2*>(p.g_part_o + (hb + (g + 8) * S) * D + nt * 8 + j2) = make_float2(o[nt][2], o[nt][3]);
      }
    }
    if ((lane & 3) == 0) {
      if (g < G) *reinterpret_cast<float2*>(p.g_part_ml + (hb + g * S) * 2) = make_float2(m0, l0);
      if (g + 8 < G) *reinterpret_cast<float2*>(p.g_part_ml + (hb + (g + 8) * S) * 2) = make_float2(m1, l1);
    }
  };

  for (int64_t k = 0; k < rounds; ++k) {
    if (k < my_items) run_item(k);
    if (!cta_combine) continue;
    // Merge the round's pairs: nw / S pairs of G heads x D columns over the CTA's threads.
    // The partials were written to the workspace (or, with smem_merge, the merge area) by this
    // CTA's warps; the barrier makes them visible. In the workspace the next round writes other
    // items' partials, so one barrier per round suffices; the merge area's slots are reused, so
    // with smem_merge a second barrier ends the round's merge.
    __syncthreads();
    const int64_t u0 = cta_first + k * workers;
    const int per_pair = G * D;
    for (int e = int(threadIdx.x); e < (nw / S) * per_pair; e += ta::kThreads) {
      const int64_t u = u0 + int64_t(e / per_pair) * S;  // the pair's split 0
      if (u >= n_items) break;                           // e only grows: so do the pairs
      const TieredAttentionSchedule::Item it = s.item(host, u);
      const int n_live = s.live_splits(len_of(it.seq));
      if (n_live == 1) continue;  // written by its only split
      const int i = (e % per_pair) / D, d = e % D;
      const int64_t row = it.seq * H + int64_t(it.kv_head) * G + i;  // (sequence, query head)
      float m[ta::kWarps], l[ta::kWarps], ov[ta::kWarps];
      const int w0 = (e / per_pair) * S;  // the warp that ran the pair's split 0 (split sp: w0 + sp)
#pragma unroll
      for (int sp = 0; sp < ta::kWarps; ++sp) {
        if (sp < n_live) {
          if (s.smem_merge) {
            const float* mo = reinterpret_cast<const float*>(smem + p.merge_offset) + (w0 + sp) * G * (D + 2);
            const float2 ml = *reinterpret_cast<const float2*>(mo + G * D + i * 2);
            m[sp] = ml.x;
            l[sp] = ml.y;
            ov[sp] = mo[i * D + d];
          } else {
            const float2 ml = *reinterpret_cast<const float2*>(p.g_part_ml + (row * S + sp) * 2);
            m[sp] = ml.x;
            l[sp] = ml.y;
            ov[sp] = p.g_part_o[(row * S + sp) * D + d];
          }
        }
      }
      float M = m[0];
#pragma unroll
      for (int sp = 1; sp < ta::kWarps; ++sp) {
        if (sp < n_live) M = fmaxf(M, m[sp]);
      }
      float L = 0.f, acc = 0.f;
#pragma unroll
      for (int sp = 0; sp < ta::kWarps; ++sp) {
        if (sp < n_live) {
          const float wgt = exp2f(m[sp] - M);
          L = fmaf(wgt, l[sp], L);
          acc = fmaf(wgt, ov[sp], acc);
        }
      }
      a.g_out[row * D + d] = __float2bfloat16_rn(acc * (L > 0.f ? 1.f / L : 0.f));
    }
    if (s.smem_merge && k + 1 < rounds) __syncthreads();  // the next round's partials reuse the slots
  }
}

/// One CTA per (head, sequence) with several live splits: out = sum_k 2^(m_k - M) O_k /
/// sum_k 2^(m_k - M) l_k over the live splits (M = max_k m_k; the numerator in split order, the
/// denominator as a fixed reduction tree). Its memory round trips are what it costs (the partials
/// sit in L2, behind the next GEMM's early W loads): each thread's first kCombinePrefetch partial
/// outputs are requested together with the (m, l) pairs, so up to kCombinePrefetch live splits
/// take one round trip.
constexpr int kCombinePrefetch = 8;
constexpr int kCombineSmemSplits = 1024;  // weights 2^(m_k - M) kept in SMEM; later splits recompute theirs

__global__ void __launch_bounds__(kCombineThreads) tiered_attention_combine_kernel(const __grid_constant__ KernelParams p) {
  constexpr int kCols = 256 / kCombineThreads;  // columns per thread (head_dim <= 256)
  __shared__ float s_red[32];
  __shared__ float s_w[kCombineSmemSplits];
  dependency_wait();  // launched by launch_dependent (gpu/launch.h)
  const TieredAttentionSchedule& s = p.s;
  const int64_t h = blockIdx.x, b = blockIdx.y, H = s.shape.num_heads;
  const int D = int(s.shape.head_dim), S = s.split.num_splits;
  const int n_live = s.live_splits(__ldg(p.a.g_len + b));
  if (n_live == 1) return;  // the split kernel wrote this row
  const float* ml = p.g_part_ml + (b * H + h) * S * 2;  // [S][2]
  const float* po = p.g_part_o + (b * H + h) * S * D;   // [S][D]
  const int t = int(threadIdx.x);
  float pre[kCols][kCombinePrefetch];
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int d = t + c * kCombineThreads;
#pragma unroll
    for (int i = 0; i < kCombinePrefetch; ++i) pre[c][i] = d < D && i < n_live ? po[int64_t(i) * D + d] : 0.f;
  }
  float m_max = -INFINITY;
  for (int sp = t; sp < n_live; sp += kCombineThreads) m_max = fmaxf(m_max, ml[2 * sp]);
  const float M = block_max(m_max, s_red);
  float l_sum = 0.f;
  for (int sp = t; sp < n_live; sp += kCombineThreads) {
    const float w = exp2f(ml[2 * sp] - M);
    if (sp < kCombineSmemSplits) s_w[sp] = w;
    l_sum = fmaf(w, ml[2 * sp + 1], l_sum);
  }
  const float L = block_sum(l_sum, s_red);  // its barriers also publish s_w
  const float inv = L > 0.f ? 1.f / L : 0.f;
  bf16* out = p.a.g_out + (b * H + h) * D;  // [D]
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int d = t + c * kCombineThreads;
    if (d >= D) break;
    float acc = 0.f;
#pragma unroll
    for (int i = 0; i < kCombinePrefetch; ++i) {
      if (i < n_live) acc = fmaf(s_w[i], pre[c][i], acc);
    }
#pragma unroll 8
    for (int sp = kCombinePrefetch; sp < n_live; ++sp) {
      const float w = sp < kCombineSmemSplits ? s_w[sp] : exp2f(ml[2 * sp] - M);
      acc = fmaf(w, po[int64_t(sp) * D + d], acc);
    }
    out[d] = __float2bfloat16_rn(acc * inv);
  }
}

bool aligned(const void* q, uintptr_t n) { return reinterpret_cast<uintptr_t>(q) % n == 0; }

/// Host tiers must be pinned and mapped with the same address on the device (PinnedHostArena).
void check_host_tier(const void* h, const std::string& what, const std::string& where) {
  cudaPointerAttributes attr{};
  DAK_CUDA_CHECK(cudaPointerGetAttributes(&attr, h));
  if (attr.type != cudaMemoryTypeHost || attr.devicePointer != h) {
    fail(what + " is not pinned, mapped host memory with a device address equal to the host address", where,
         "allocate the host tier from a PinnedHostArena (cudaHostRegister with cudaHostRegisterMapped)");
  }
}

template <int D>
void launch(const KernelParams& kp, cudaStream_t stream) {
  const int64_t smem = kp.s.smem_bytes();
  DAK_CUDA_CHECK(
      cudaFuncSetAttribute(tiered_attention_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  launch_dependent(tiered_attention_kernel<D>, dim3(unsigned(kp.s.host_ctas + kp.s.hbm_ctas)), dim3(ta::kThreads),
                   size_t(smem), stream, kp);
  DAK_CUDA_CHECK(cudaGetLastError());
  if (kp.s.split.num_splits == 1 || kp.s.cta_combine) return;  // every row written by the first kernel
  const dim3 grid(unsigned(kp.s.shape.num_heads), unsigned(kp.s.shape.batch));
  launch_dependent(tiered_attention_combine_kernel, grid, dim3(kCombineThreads), 0, stream, kp);
  DAK_CUDA_CHECK(cudaGetLastError());
}

// Calls f(std::integral_constant<int, D>{}) with D = head_dim, one of the compiled head_dims
// (ta::head_dim_supported), and returns its result; `otherwise` for any other head_dim.
template <class R, class F>
R with_head_dim(int64_t head_dim, R otherwise, F&& f) {
  switch (head_dim) {
    case 64: return f(std::integral_constant<int, 64>{});
    case 80: return f(std::integral_constant<int, 80>{});
    case 96: return f(std::integral_constant<int, 96>{});
    case 128: return f(std::integral_constant<int, 128>{});
    case 256: return f(std::integral_constant<int, 256>{});
    default: return otherwise;
  }
}

template <int D>
int64_t static_smem() {
  cudaFuncAttributes a{};
  DAK_CUDA_CHECK(cudaFuncGetAttributes(&a, tiered_attention_kernel<D>));
  return int64_t(a.sharedSizeBytes);
}

template <int D>
int occupancy(int64_t smem) {
  DAK_CUDA_CHECK(
      cudaFuncSetAttribute(tiered_attention_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  int n = 0;
  DAK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, tiered_attention_kernel<D>, ta::kThreads,
                                                               size_t(smem)));
  return n;
}

}  // namespace

#ifdef DAK_ATT_TRACE
void att_trace_copy(unsigned long long* host, int n) {
  DAK_CUDA_CHECK(cudaMemcpyFromSymbol(host, g_att_trace, sizeof(unsigned long long) * size_t(n)));
}
void att_trace_reset() {
  static unsigned long long zeros[kAttTraceFields * 65536] = {};
  DAK_CUDA_CHECK(cudaMemcpyToSymbol(g_att_trace, zeros, sizeof(zeros)));
}
void att_trace_report(const char* label, int host_ctas) {
  std::vector<unsigned long long> tr(size_t(kAttTraceFields) * 65536);
  att_trace_copy(tr.data(), int(tr.size()));
  // Warps of the last launch: post-wait stamps within 1 ms of the latest one (a warp past the last
  // launch's grid keeps the stamps of an earlier, larger launch). Time 0: their earliest return from
  // the dependency wait (the previous kernel's completion).
  unsigned long long latest = 0, t0 = ~0ull;
  for (size_t w = 0; w < 65536; ++w) latest = std::max(latest, tr[kAttTraceFields * w + 5]);
  const auto current = [&](size_t w) {
    const unsigned long long t = tr[kAttTraceFields * w + 5];
    return t != 0 && t + 1000000ull >= latest;
  };
  for (size_t w = 0; w < 65536; ++w) {
    if (current(w)) t0 = std::min(t0, tr[kAttTraceFields * w + 5]);
  }
  if (t0 == ~0ull) {
    std::fprintf(stderr, "att trace %s: no warp passed its dependency wait\n", label);
    return;
  }
  // One line for every warp, then (with host CTAs) one for the host CTAs' warps and one for the HBM
  // CTAs' warps: which side ends last at a balance point.
  const size_t host_warps = size_t(std::max(host_ctas, 0)) * ta::kWarps;
  const char* names[7] = {"start", "first step", "last step", "end", "pre-wait", "post-wait", "q loaded"};
  for (int side = 0; side < (host_ctas > 0 ? 3 : 1); ++side) {
    const size_t lo = side == 2 ? host_warps : 0, hi = side == 1 ? host_warps : 65536;
    std::fprintf(stderr, "att trace %s%s (us after the first post-wait stamp; min / p50 / max over warps):", label,
                 side == 0 ? "" : side == 1 ? " host warps" : " HBM warps");
    for (int f : {0, 4, 5, 6, 1, 2, 3}) {
      std::vector<double> v;
      for (size_t w = lo; w < hi; ++w) {
        const unsigned long long t = tr[kAttTraceFields * w + size_t(f)];
        // Differences in integers first: a double near 1.8e18 ns (the epoch) resolves only 256 ns.
        if (t != 0 && current(w)) v.push_back(double(static_cast<long long>(t - t0)) / 1e3);
      }
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      std::fprintf(stderr, " | %s %.2f / %.2f / %.2f", names[f], v.front(), v[v.size() / 2], v.back());
    }
    std::fprintf(stderr, "\n");
  }
}
#endif

int tiered_attention_ctas_per_sm(int64_t head_dim, int64_t smem) {
  return with_head_dim(head_dim, 0, [&](auto d) {
    constexpr int D = decltype(d)::value;
    // Dynamic plus static SMEM must stay within the opt-in maximum (cudaFuncSetAttribute refuses more).
    return smem < 0 || smem > hopper::kSmemPerCtaMaxBytes - static_smem<D>() ? 0 : occupancy<D>(smem);
  });
}

int tiered_attention_ctas_per_sm(const TieredAttentionSchedule& s) {
  return tiered_attention_ctas_per_sm(s.shape.head_dim, s.smem_bytes());
}

int64_t tiered_attention_static_smem_bytes(int64_t head_dim) {
  return with_head_dim(head_dim, int64_t(0), [](auto d) { return static_smem<decltype(d)::value>(); });
}

TieredAttentionSchedule tiered_attention_schedule(const TieredAttentionShape& shape, int64_t b_host,
                                                  const TieredAttentionLinkLimits& limits) {
  const int sms = device_sm_count();
  TieredAttentionSchedule s = plan_tiered_attention(shape, b_host, sms, 2, limits);
  const int per_sm = tiered_attention_ctas_per_sm(s);
  if (per_sm < 1) {
    fail("the tiered attention kernel does not fit on an SM with " + std::to_string(s.smem_bytes()) +
             " bytes of SMEM",
         "tiered_attention_schedule " + s.to_string(),
         "unset DAK_ATTN_HBM_STAGES (an A/B override) if it is set; otherwise report this as a bug (the default "
         "plans fit the 227 KiB of SMEM of every Hopper GPU)");
  }
  if (per_sm != 2) s = plan_tiered_attention(shape, b_host, sms, per_sm, limits);
  return s;
}

void tiered_attention(const TieredAttentionArgs& a, const TieredAttentionSchedule& s, void* g_workspace,
                      cudaStream_t stream) {
  s.validate();
  const std::string where = "tiered attention " + s.to_string();
  const TieredAttentionShape& sh = s.shape;
  const bool has_host = s.b_host > 0, has_hbm = s.b_host < sh.batch;
  if (!a.g_q || !a.g_len || !a.g_out || !g_workspace || (has_host && (!a.h_k || !a.h_v)) ||
      (has_hbm && (!a.g_k || !a.g_v))) {
    fail("a required pointer is null (q, len, out, workspace, or the K/V of a tier that has sequences)", where,
         "pass every operand; the host tier may be null only when b_host == 0 and the HBM tier only when b_host == B");
  }
  if ((has_host && (!aligned(a.h_k, 16) || !aligned(a.h_v, 16))) ||
      (has_hbm && (!aligned(a.g_k, 16) || !aligned(a.g_v, 16))) || !aligned(a.g_q, 4) || !aligned(a.g_out, 4) ||
      !aligned(g_workspace, 256) || a.q_stride % 2 != 0 || a.q_stride < sh.num_heads * sh.head_dim) {
    fail("K/V tiers must be 16-byte aligned, q and out 4-byte aligned with an even q_stride >= H * D, and the "
             "workspace 256-byte aligned",
         where, "allocate from the HBM / pinned host arenas (256-byte aligned slices)");
  }
  if (!std::isfinite(a.scale)) fail("the softmax scale is not finite", where, "pass 1 / sqrt(head_dim)");
  if (a.g_new && (a.new_stride < a.new_k_offset + sh.num_kv_heads * sh.head_dim ||
                  a.new_stride < a.new_v_offset + sh.num_kv_heads * sh.head_dim || a.new_k_offset < 0 ||
                  a.new_v_offset < 0)) {
    fail("the new K / V rows do not fit in new_stride", where, "pass the fused QKV row stride and the k / v offsets");
  }
  if (a.g_new && a.g_inv_freq && !tiered_attention_rope_fusable(sh.head_dim)) {
    fail("RoPE cannot be fused for head_dim " + std::to_string(sh.head_dim), where,
         "apply RoPE before the kernel (apply_rope_kv_append) for head_dim 80");
  }
  if (a.g_inv_freq && !a.g_new) fail("g_inv_freq without g_new", where, "pass the new QKV rows to fuse RoPE");
  if (has_host) {
    check_host_tier(a.h_k, "the host tier's K", where);
    check_host_tier(a.h_v, "the host tier's V", where);
  }
  KernelParams kp;
  kp.a = a;
  kp.s = s;
  auto* ws = static_cast<uint8_t*>(g_workspace);
  kp.g_part_ml = reinterpret_cast<float*>(ws);
  kp.g_part_o = reinterpret_cast<float*>(ws + s.workspace_o_offset());
  kp.scale_log2 = a.scale * 1.4426950408889634f;
  kp.early_kv = early_kv_enabled();
  kp.merge_offset = s.smem_merge ? s.smem_bytes() - ta::merge_smem_bytes(sh.group(), sh.head_dim) : 0;
  const bool launched = with_head_dim(sh.head_dim, false, [&](auto d) {
    launch<decltype(d)::value>(kp, stream);
    return true;
  });
  if (!launched) {
    fail("head_dim " + std::to_string(sh.head_dim) + " is not compiled", where, "use 64, 80, 96, 128 or 256");
  }
}

}  // namespace dak::gpu
