// Diagnostic probe of the tiered attention's all-HBM side (b_host = 0): GPU time of one launch
// (split kernel + combine, CUDA events, a 256 MiB HBM read between launches so the KV does not sit
// in L2; DAK_PROBE_NOFLUSH=1 leaves it out; session 16's calls 3-7 used a memset, see read_flush)
// for Llama-2-7B shapes at batch 8 and contexts 512 / 4096 / 32768, next to B_g measured in the
// same run with the TMA bulk stream (hbm_stream.h) at 32 KiB and at 4 KiB chunks (the attention's
// per-operand step size). Medians of 7 after 2 warm-ups, with min and max.
// `attention_probe B H Hkv D ctx [hbm_stages]` runs one shape; `attention_probe once B H Hkv D ctx`
// launches it 3 times without timing (for Nsight Compute).
// DAK_ATTN_HBM_COPY=cp.async|bulk|staged forces the HBM load path. With -DDAK_ATT_TRACE (building
// src/gpu/kernels/tiered_attention.cu next to the probe, whose object overrides the library's
// copy) each warp records %globaltimer stamps and the probe prints their distribution after each
// shape: tools/device/session16_e.sh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/tiered_attention_schedule.h"
#include "gpu/cuda_check.h"
#include "gpu/kernels/hbm_stream.h"
#include "gpu/kernels/tiered_attention.h"

#ifdef DAK_ATT_TRACE
namespace dak::gpu {
void att_trace_copy(unsigned long long* host, int n);
void att_trace_reset();
}  // namespace dak::gpu
#endif

namespace {

struct Stats {
  double med, lo, hi;
};

/// Enqueues one TMA bulk stream over `bytes` of `src` (hbm_stream.h) in `chunk`-byte copies,
/// `stages` in flight per CTA, with every resident CTA of every SM.
void stream(const void* src, size_t bytes, uint32_t chunk = 32 << 10, int stages = 4) {
  static unsigned long long* sum = [] {
    unsigned long long* p = nullptr;
    DAK_CUDA_CHECK(cudaMalloc(&p, 8));
    return p;
  }();
  int dev = 0, sms = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&dev));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  dak::gpu::HbmStreamParams p;
  p.g_src = src;
  p.bytes = bytes;
  p.chunk_bytes = chunk;
  p.stages = stages;
  p.g_checksum = sum;
  dak::gpu::hbm_stream(p, sms * std::max(1, dak::gpu::hbm_stream_ctas_per_sm(chunk, stages)), nullptr);
}

/// Evicts the L2 by reading `bytes` of `src` (a memset here left ~50 MB of dirty lines to be
/// written back during the timed launch, session 16).
void read_flush(const void* src, size_t bytes) { stream(src, bytes); }

template <class Launch>
Stats time_us(Launch&& launch, void* flush, size_t flush_bytes) {
  cudaEvent_t e0, e1;
  DAK_CUDA_CHECK(cudaEventCreate(&e0));
  DAK_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> t;
  for (int r = 0; r < 9; ++r) {
    if (flush) read_flush(flush, flush_bytes);
    DAK_CUDA_CHECK(cudaEventRecord(e0));
    launch();
    DAK_CUDA_CHECK(cudaEventRecord(e1));
    DAK_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (r >= 2) t.push_back(ms * 1e3);
  }
  DAK_CUDA_CHECK(cudaEventDestroy(e0));
  DAK_CUDA_CHECK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front(), t.back()};
}

double stream_gbps(const void* src, size_t bytes, uint32_t chunk, int stages) {
  const Stats s = time_us([&] { stream(src, bytes, chunk, stages); }, nullptr, 0);
  return double(bytes) / (s.lo * 1e3);  // best launch, GB/s
}

}  // namespace

int main(int argc, char** argv) {
  const bool once = argc > 1 && std::string(argv[1]) == "once";
  const int a0 = once ? 2 : 1;
  struct Case {
    int64_t B, H, Hkv, D, ctx;
  };
  std::vector<Case> cases;
  int hbm_stages = 0;
  if (argc > a0 + 4) {
    cases.push_back({atoll(argv[a0]), atoll(argv[a0 + 1]), atoll(argv[a0 + 2]), atoll(argv[a0 + 3]), atoll(argv[a0 + 4])});
    if (argc > a0 + 5) hbm_stages = atoi(argv[a0 + 5]);
  } else {
    for (int64_t ctx : {512, 4096, 32768}) cases.push_back({8, 32, 32, 128, ctx});
  }
  size_t kv_max = 0;
  for (const Case& c : cases) kv_max = std::max(kv_max, size_t(c.B * c.Hkv * c.ctx * c.D * 2));
  void *k = nullptr, *v = nullptr, *flush = nullptr;
  // DAK_PROBE_NOFLUSH=1: no L2 flush between launches (the kernel's code and metadata stay in L2).
  const bool no_flush = std::getenv("DAK_PROBE_NOFLUSH") != nullptr;
  const size_t flush_bytes = size_t(256) << 20;
  DAK_CUDA_CHECK(cudaMalloc(&k, kv_max));
  DAK_CUDA_CHECK(cudaMalloc(&v, kv_max));
  DAK_CUDA_CHECK(cudaMalloc(&flush, flush_bytes));
  DAK_CUDA_CHECK(cudaMemset(flush, 0, flush_bytes));
  DAK_CUDA_CHECK(cudaMemset(k, 0x3c, kv_max));  // bf16 0x3c3c ~ 0.0115: finite keys and values
  DAK_CUDA_CHECK(cudaMemset(v, 0x3c, kv_max));
  if (!once) {
    const size_t sb = std::min(kv_max, size_t(1) << 30) & ~size_t(0xffff);
    std::printf("B_g (TMA bulk stream of %.2f GiB, best launch): 32 KiB x 4 chunks %.1f GB/s, 4 KiB x 16 chunks %.1f GB/s\n",
                double(sb) / (1 << 30), stream_gbps(k, sb, 32 << 10, 4), stream_gbps(k, sb, 4 << 10, 16));
  }
  for (const Case& c : cases) {
    dak::TieredAttentionShape sh{c.B, c.H, c.Hkv, c.D, c.ctx};
    dak::TieredAttentionSchedule s = dak::gpu::tiered_attention_schedule(sh, 0);
    if (hbm_stages > 0) s.hbm_stages = hbm_stages;
    dak::refit_smem_merge(s);  // the SMEM merge only where it still fits beside the forced ring
    // DAK_ATTN_HBM_COPY=cp.async|bulk|staged forces the HBM warps' load path (plan_tiered_attention).
    void *q = nullptr, *out = nullptr, *ws = nullptr, *len = nullptr;
    DAK_CUDA_CHECK(cudaMalloc(&q, size_t(c.B * c.H * c.D * 2)));
    DAK_CUDA_CHECK(cudaMalloc(&out, size_t(c.B * c.H * c.D * 2)));
    DAK_CUDA_CHECK(cudaMalloc(&ws, size_t(std::max<int64_t>(256, s.workspace_bytes()))));
    DAK_CUDA_CHECK(cudaMalloc(&len, size_t(c.B * 4)));
    DAK_CUDA_CHECK(cudaMemset(q, 0x3c, size_t(c.B * c.H * c.D * 2)));
    std::vector<int32_t> lens(size_t(c.B), int32_t(c.ctx));
    DAK_CUDA_CHECK(cudaMemcpy(len, lens.data(), lens.size() * 4, cudaMemcpyHostToDevice));
    dak::gpu::TieredAttentionArgs a;
    a.g_q = static_cast<const __nv_bfloat16*>(q);
    a.q_stride = c.H * c.D;
    a.g_k = static_cast<const __nv_bfloat16*>(k);
    a.g_v = static_cast<const __nv_bfloat16*>(v);
    a.g_len = static_cast<const int32_t*>(len);
    a.g_out = static_cast<__nv_bfloat16*>(out);
    a.scale = 0.08838834764831845f;
    auto launch = [&] { dak::gpu::tiered_attention(a, s, ws, nullptr); };
    const double bytes = double(c.B * c.Hkv * c.ctx * c.D * 4);
    if (once) {
      for (int r = 0; r < 3; ++r) launch();
      DAK_CUDA_CHECK(cudaDeviceSynchronize());
      std::printf("launched 3x %s\n", s.to_string().c_str());
    } else {
      const Stats t = time_us(launch, no_flush ? nullptr : flush, flush_bytes);
      std::printf("B %lld ctx %6lld KV %7.1f MB: %9.2f us [%.2f, %.2f]  %7.1f GB/s  %s\n", (long long)c.B,
                  (long long)c.ctx, bytes / 1e6, t.med, t.lo, t.hi, bytes / (t.med * 1e3), s.to_string().c_str());
#ifdef DAK_ATT_TRACE
      // One traced launch: per-warp start / first step landed / last step done / end, us after the earliest start.
      dak::gpu::att_trace_reset();
      const Stats t1 = time_us(launch, no_flush ? nullptr : flush, flush_bytes);  // the last of these launches is the traced one
      std::vector<unsigned long long> tr(8 * 65536);
      dak::gpu::att_trace_copy(tr.data(), int(tr.size()));
      unsigned long long t0 = ~0ull;
      std::vector<double> st, fi, la, en;
      for (size_t w = 0; w < 65536; ++w) {
        if (tr[8 * w] == 0 || tr[8 * w + 1] == 0) continue;  // no warp, or a warp without items
        t0 = std::min(t0, tr[8 * w]);
      }
      for (size_t w = 0; w < 65536; ++w) {
        if (tr[8 * w] == 0 || tr[8 * w + 1] == 0) continue;
        st.push_back((tr[8 * w] - t0) / 1e3);
        fi.push_back((tr[8 * w + 1] - t0) / 1e3);
        la.push_back((tr[8 * w + 2] - t0) / 1e3);
        en.push_back((tr[8 * w + 3] - t0) / 1e3);
      }
      auto pct = [](std::vector<double> v, double q) {
        std::sort(v.begin(), v.end());
        return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
      };
      std::printf("  trace (%zu busy warps, launch median %.2f us): start p50 %.2f max %.2f | first step p50 %.2f max %.2f | "
                  "last step p0 %.2f p10 %.2f p50 %.2f p90 %.2f max %.2f | end max %.2f us\n",
                  st.size(), t1.med, pct(st, 0.5), pct(st, 1), pct(fi, 0.5), pct(fi, 1), pct(la, 0), pct(la, 0.1),
                  pct(la, 0.5), pct(la, 0.9), pct(la, 1), pct(en, 1));
#endif
    }
    DAK_CUDA_CHECK(cudaFree(q));
    DAK_CUDA_CHECK(cudaFree(out));
    DAK_CUDA_CHECK(cudaFree(ws));
    DAK_CUDA_CHECK(cudaFree(len));
  }
  return 0;
}
