#include "gpu/profile.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/op_graph.h"
#include "core/tiered_gemm_schedule.h"
#include "gpu/bench.h"
#include "gpu/bench_util.h"
#include "gpu/cuda_check.h"
#include "gpu/gemm_cublaslt.h"
#include "gpu/hbm_arena.h"
#include "gpu/host_arena.h"
#include "gpu/kernels/attention_decode.h"
#include "gpu/kernels/hbm_stream.h"
#include "gpu/kernels/link_probe.h"
#include "gpu/kernels/random_fill.h"
#include "gpu/kernels/tiered_gemm.h"

namespace dak::gpu {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint32_t kLinkChunk = 32u << 10;  // bytes per TMA copy of every link measurement (the probe's tile)
constexpr int kSharedHostCtas = 8;          // SM readers next to the copy engine (the probe's hybrid run)
constexpr int kSharedStages = 2;
constexpr int kContentionHbmCtas = 100;     // HBM CTAs of the contention curve (the probe's)
constexpr int kContentionHostCtas[] = {0, 2, 4, 8, 12, 16, 24, 32};
constexpr int kContentionStages[] = {2, 4};
constexpr int64_t kTensorMK = 8192;
constexpr uint64_t kLaunchSizes[] = {256ull << 10, 1ull << 20, 4ull << 20, 16ull << 20,
                                     64ull << 20,  256ull << 20, 1ull << 30};
constexpr int kLaunchesPerGraph = 64;
// Zero-copy measurements (the ordinary kernels reading pinned mapped host memory in place): cuBLASLt
// GEMMs with W [rows, K] in host memory, and attention_decode over a KV cache in host memory with
// Llama-2-7B's heads (32 x 128, MHA) for 8 sequences.
constexpr int64_t kZeroCopyK[] = {4096, 8192, 16384};
// Rows: every multiple of 128 (the planner's split unit) up to 2048, then coarser. cuBLASLt's choice
// of kernel makes the rate jump between neighbouring row counts (zero_copy_probe, session 11, N = 8,
// K = 4096: 256 rows 32.6 GB/s, 384 rows 15.2, 512 rows 34.9, 640 rows 21.4), so small host parts
// are measured exactly, not interpolated.
constexpr int64_t kZeroCopyRows[] = {128,  256,  384,  512,  640,  768,  896,  1024, 1152, 1280, 1408,
                                     1536, 1664, 1792, 1920, 2048, 3072, 4096, 6144, 8192, 12288, 16384};
constexpr int64_t kZeroCopyTokens[] = {8, 512};
constexpr int64_t kZeroCopyLdy = 32768;  // columns of the zero-copy GEMMs' y (>= every rows value)
constexpr int64_t kZeroCopyAttnBatch = 8, kZeroCopyAttnHeads = 32, kZeroCopyAttnDim = 128, kZeroCopyAttnCtx = 2048;

class Event {
 public:
  Event() { DAK_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t s) const { DAK_CUDA_CHECK(cudaEventRecord(e_, s)); }
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

/// Seconds from `a` to `b` (negative when b completed first).
double seconds_between(const Event& a, const Event& b) {
  float ms = 0;
  DAK_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
  return double(ms) * 1e-3;
}

void say(const std::function<void(const std::string&)>& log, const std::string& line) {
  if (log) log(line);
}

int device_sm_count() {
  int device = 0, sms = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

double gbps(uint64_t bytes, double seconds) {
  if (!(seconds > 0)) fail("a measurement took no time", "dak profile", "report this as a bug (timer resolution)");
  return double(bytes) / seconds * 1e-9;
}

/// What one role of a link_probe launch did: bytes read and its global-timer span.
struct LinkSpan {
  uint64_t bytes = 0;
  uint64_t begin_ns = 0, end_ns = 0;
  double seconds() const { return double(end_ns - begin_ns) * 1e-9; }
};
struct LinkOutcome {
  LinkSpan hbm, host;
};

/// HBM scratch of link_probe launches (per-CTA stats, checksums, the stop word) and the launch
/// bookkeeping.
class LinkProbeRunner {
 public:
  explicit LinkProbeRunner(int sm_count)
      : arena_(HbmArena::aligned_size(uint64_t(sm_count) * sizeof(LinkProbeCtaStats)) + 2 * HbmArena::kAlignment,
               "link probe scratch") {
    g_stats_ = arena_.allocate_array<LinkProbeCtaStats>(uint64_t(sm_count), "per-CTA stats");  // [sm_count]
    g_sums_ = arena_.allocate_array<unsigned long long>(2, "checksums");                      // [2]
    g_stop_ = arena_.allocate_array<unsigned int>(1, "stop word");                            // [1]
  }
  /// Zeroes the checksums and the stop word on `s`.
  void reset(cudaStream_t s) const {
    DAK_CUDA_CHECK(cudaMemsetAsync(g_sums_, 0, 2 * sizeof(unsigned long long), s));
    DAK_CUDA_CHECK(cudaMemsetAsync(g_stop_, 0, sizeof(unsigned int), s));
  }
  /// Launches `p` with host_ctas host CTAs on `s`; `use_stop` wires the stop word.
  void launch(LinkProbeParams p, int host_ctas, bool use_stop, cudaStream_t s) {
    p.g_stats = g_stats_;
    p.g_checksum = g_sums_;
    p.g_stop = use_stop ? g_stop_ : nullptr;
    grid_ = p.hbm_ctas + host_ctas;
    hbm_ctas_ = p.hbm_ctas;
    chunk_bytes_ = p.chunk_bytes;
    link_probe(p, host_ctas, s);
  }
  unsigned int* stop_word() const { return g_stop_; }
  /// The last launch's outcome; its stream must have been synchronized.
  LinkOutcome collect() const {
    std::vector<LinkProbeCtaStats> st(static_cast<size_t>(grid_));
    DAK_CUDA_CHECK(cudaMemcpy(st.data(), g_stats_, st.size() * sizeof(LinkProbeCtaStats), cudaMemcpyDeviceToHost));
    LinkOutcome o;
    auto role = [&](int lo, int hi, LinkSpan& r) {
      if (lo >= hi) return;
      r.begin_ns = std::numeric_limits<uint64_t>::max();
      for (int i = lo; i < hi; ++i) {
        r.begin_ns = std::min<uint64_t>(r.begin_ns, st[size_t(i)].begin_ns);
        r.end_ns = std::max<uint64_t>(r.end_ns, st[size_t(i)].end_ns);
        r.bytes += st[size_t(i)].chunks * chunk_bytes_;
      }
    };
    role(0, hbm_ctas_, o.hbm);
    role(hbm_ctas_, grid_, o.host);
    return o;
  }

 private:
  HbmArena arena_;
  LinkProbeCtaStats* g_stats_ = nullptr;
  unsigned long long* g_sums_ = nullptr;
  unsigned int* g_stop_ = nullptr;
  int grid_ = 0, hbm_ctas_ = 0;
  uint64_t chunk_bytes_ = 0;
};

/// The B_g stream configuration, launched on `s` over g_src[0, bytes).
struct HbmStreamLauncher {
  uint32_t chunk_bytes = 0;
  int32_t stages = 0;
  int grid = 0;
  unsigned long long* g_sum = nullptr;
  void operator()(const void* g_src, uint64_t bytes, cudaStream_t s) const {
    hbm_stream(HbmStreamParams{g_src, bytes, chunk_bytes, stages, g_sum}, grid, s);
  }
};

/// Checksum of src[0, bytes) by the HBM stream kernel (which reads any 16-byte aligned global
/// address, mapped host memory included).
unsigned long long stream_checksum(const HbmStreamLauncher& launch, const void* src, uint64_t bytes, cudaStream_t s) {
  DAK_CUDA_CHECK(cudaMemsetAsync(launch.g_sum, 0, sizeof(unsigned long long), s));
  launch(src, bytes, s);
  unsigned long long sum = 0;
  DAK_CUDA_CHECK(cudaMemcpyAsync(&sum, launch.g_sum, sizeof(sum), cudaMemcpyDeviceToHost, s));
  DAK_CUDA_CHECK(cudaStreamSynchronize(s));
  return sum;
}

struct Shared {
  double sm = 0, ce = 0, total = 0;
};

/// kSharedHostCtas SM readers stream h_src[0, half) while the copy engine moves h_src[half, 2 half)
/// into g_dst; a memset behind the copy stops the readers, so both run over the same interval.
Shared measure_shared_link(LinkProbeRunner& probe, const void* h_src, uint64_t h_bytes, void* g_dst, int runs) {
  const uint64_t half = h_bytes / 2 / kLinkChunk * kLinkChunk;
  LinkProbeParams p;
  p.h_src = h_src;
  p.h_bytes = half;
  p.chunk_bytes = kLinkChunk;
  p.hbm_ctas = 0;
  p.host_stages = kSharedStages;
  // A bound only (64 times the copy's bytes, wrapping around the source): the copy's end stops it.
  p.host_chunks_per_cta = 64 * (half / kLinkChunk) / kSharedHostCtas + kSharedStages;
  p.stop_at = 1;
  Stream s_sm, s_ce;
  Event k0, k1, c0, c1;
  std::vector<double> sm, ce, total;
  for (int r = 0; r <= runs; ++r) {
    probe.reset(s_sm);
    k0.record(s_sm);
    probe.launch(p, kSharedHostCtas, true, s_sm);
    k1.record(s_sm);
    DAK_CUDA_CHECK(cudaStreamWaitEvent(s_ce, k0.get(), 0));  // the copy starts once the stop word is reset
    c0.record(s_ce);
    DAK_CUDA_CHECK(cudaMemcpyAsync(g_dst, static_cast<const char*>(h_src) + half, half, cudaMemcpyHostToDevice, s_ce));
    c1.record(s_ce);
    DAK_CUDA_CHECK(cudaMemsetAsync(probe.stop_word(), 0xff, sizeof(unsigned int), s_ce));
    s_ce.sync();
    s_sm.sync();
    if (seconds_between(c1, k1) < 0) {
      fail("the SM readers stopped before the concurrent copy ended (no overlap)", "dak profile: shared link",
           "report this as a bug in dak profile");
    }
    const LinkOutcome o = probe.collect();
    const double copy_s = seconds_between(c0, c1);
    if (r == 0) continue;
    sm.push_back(gbps(o.host.bytes, o.host.seconds()));
    ce.push_back(gbps(half, copy_s));
    total.push_back(gbps(o.host.bytes + half, std::max(o.host.seconds(), copy_s)));
  }
  return {median_of(sm), median_of(ce), median_of(total)};
}

struct Slowdown {
  double alone = 0, during = 0;
};

/// The B_g stream over g_src alone, then while H2D copies (enqueued first, on another stream) run.
Slowdown measure_copy_slowdown(const HbmStreamLauncher& launch, const void* g_src, uint64_t g_bytes, void* g_dst,
                               const void* h_src, uint64_t copy_bytes, double copy_gbps, int runs) {
  Stream s_read, s_copy;
  std::vector<Event> b(size_t(runs) + 1), e(size_t(runs) + 1);
  std::vector<double> alone, during;
  for (int r = 0; r <= runs; ++r) {
    b[size_t(r)].record(s_read);
    launch(g_src, g_bytes, s_read);
    e[size_t(r)].record(s_read);
  }
  s_read.sync();
  for (int r = 1; r <= runs; ++r) alone.push_back(gbps(g_bytes, seconds_between(b[size_t(r)], e[size_t(r)])));
  // Copies covering about three times the reads.
  const double reads_s = double(runs + 1) * double(g_bytes) / (median_of(alone) * 1e9);
  const double copy_s = double(copy_bytes) / (copy_gbps * 1e9);
  const int copies = int(std::clamp(std::ceil(3.0 * reads_s / copy_s), 1.0, 256.0));
  Event c0, c1;
  c0.record(s_copy);
  for (int i = 0; i < copies; ++i)
    DAK_CUDA_CHECK(cudaMemcpyAsync(g_dst, h_src, copy_bytes, cudaMemcpyHostToDevice, s_copy));
  c1.record(s_copy);
  DAK_CUDA_CHECK(cudaStreamWaitEvent(s_read, c0.get(), 0));
  for (int r = 0; r <= runs; ++r) {
    b[size_t(r)].record(s_read);
    launch(g_src, g_bytes, s_read);
    e[size_t(r)].record(s_read);
  }
  s_read.sync();
  s_copy.sync();
  if (seconds_between(e[size_t(runs)], c1) <= 0) {
    fail("the H2D copies ended before the HBM reads they should slow down", "dak profile: HBM slowdown during a copy",
         "report this as a bug in dak profile");
  }
  for (int r = 1; r <= runs; ++r) during.push_back(gbps(g_bytes, seconds_between(b[size_t(r)], e[size_t(r)])));
  return {median_of(alone), median_of(during)};
}

void measure_contention(LinkProbeRunner& probe, const void* g_src, uint64_t g_bytes, const void* h_src,
                        uint64_t h_bytes, int sm_count, int runs, ProfileMeasurements& m) {
  int max_k = 0;
  for (int k : kContentionHostCtas) max_k = std::max(max_k, k);
  const int hbm_ctas = std::max(1, std::min(kContentionHbmCtas, sm_count - max_k));
  LinkProbeParams p;
  p.g_src = g_src;
  p.g_bytes = g_bytes;
  p.h_src = h_src;
  p.h_bytes = h_bytes;
  p.chunk_bytes = kLinkChunk;
  p.hbm_ctas = hbm_ctas;
  p.hbm_chunks_per_cta = g_bytes / kLinkChunk / uint64_t(hbm_ctas);  // the HBM buffer once
  p.stop_at = unsigned(hbm_ctas);
  Stream s;
  for (int stages : kContentionStages) {
    for (int k : kContentionHostCtas) {
      if (hbm_ctas + k > sm_count) continue;
      p.hbm_stages = p.host_stages = stages;
      // A bound only (one second at 64 GB/s): the host CTAs stop when the HBM CTAs are done.
      p.host_chunks_per_cta = k > 0 ? uint64_t(64e9 / kLinkChunk) / uint64_t(k) : 0;
      std::vector<double> hbm, host;
      for (int r = 0; r <= runs; ++r) {
        probe.reset(s);
        probe.launch(p, k, true, s);
        s.sync();
        const LinkOutcome o = probe.collect();
        if (o.hbm.bytes != uint64_t(hbm_ctas) * p.hbm_chunks_per_cta * kLinkChunk) {
          fail(fmt::format("the HBM CTAs read {} of {} bytes", o.hbm.bytes,
                           uint64_t(hbm_ctas) * p.hbm_chunks_per_cta * kLinkChunk),
               "dak profile: contention", "report this as a bug in dak profile");
        }
        // The host CTAs must stream for the whole HBM span (slack: CTA start-up and the stop signal).
        const uint64_t slack_ns = std::max<uint64_t>(20000, (o.hbm.end_ns - o.hbm.begin_ns) / 100);
        if (k > 0 && (o.host.begin_ns > o.hbm.begin_ns + slack_ns || o.host.end_ns + slack_ns < o.hbm.end_ns)) {
          fail(fmt::format("{} host CTAs did not overlap the HBM CTAs' span", k), "dak profile: contention",
               "report this as a bug in dak profile");
        }
        if (r == 0) continue;
        hbm.push_back(gbps(o.hbm.bytes, o.hbm.seconds()));
        host.push_back(k > 0 ? gbps(o.host.bytes, o.host.seconds()) : 0.0);
      }
      m.contention.push_back(ContentionPoint{k, stages, int64_t(kLinkChunk), hbm_ctas, median_of(hbm)});
      m.contention_host_gbps.push_back(median_of(host));
    }
  }
}

std::vector<TensorRatePoint> measure_tensor_rates(const std::vector<int64_t>& tokens, int runs) {
  int64_t n_max = 0;
  for (int64_t n : tokens) n_max = std::max(n_max, n);
  const int64_t M = kTensorMK, K = kTensorMK;
  HbmArena arena(HbmArena::aligned_size(uint64_t(M * K * 2)) + HbmArena::aligned_size(uint64_t(n_max * K * 2)) +
                     HbmArena::aligned_size(uint64_t(n_max * M * 2)) + CublasLtGemm::kWorkspaceBytes,
                 "tensor-rate GEMM operands");
  auto* g_w = arena.allocate_array<__nv_bfloat16>(uint64_t(M * K), "W");      // [M, K]
  auto* g_x = arena.allocate_array<__nv_bfloat16>(uint64_t(n_max * K), "x");  // [N, K]
  auto* g_y = arena.allocate_array<__nv_bfloat16>(uint64_t(n_max * M), "y");  // [N, M]
  void* g_ws = arena.allocate(CublasLtGemm::kWorkspaceBytes, "cuBLASLt workspace");
  Stream s;
  random_fill_bf16(RandomFillParams{g_w, M * K, 7, 1, 0.0f, 1.0f}, s);
  random_fill_bf16(RandomFillParams{g_x, n_max * K, 7, 2, 0.0f, 1.0f}, s);
  CublasLtGemm gemm(g_ws, CublasLtGemm::kWorkspaceBytes);
  std::vector<Event> b(static_cast<size_t>(runs)), e(static_cast<size_t>(runs));
  std::vector<TensorRatePoint> out;
  for (int64_t n : tokens) {
    GemmArgs a;
    a.g_x = g_x;
    a.g_w = g_w;
    a.g_y = g_y;
    a.N = n;
    a.M = M;
    a.K = K;
    // Warm-ups (plan, clocks) and timed runs back to back: the GPU stays busy while the host
    // enqueues the next one, so its launch work is not timed.
    for (int i = 0; i < 3; ++i) gemm.run(a, s);
    for (int r = 0; r < runs; ++r) {
      b[size_t(r)].record(s);
      gemm.run(a, s);
      e[size_t(r)].record(s);
    }
    s.sync();
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) t.push_back(seconds_between(b[size_t(r)], e[size_t(r)]));
    out.push_back({n, 2.0 * double(M) * double(n) * double(K) / median_of(t) * 1e-12});
  }
  return out;
}

/// Median seconds of `runs` back-to-back launches `run(s, i)` on `s` after 2 warm-ups (i counts every
/// launch, warm-ups first; CUDA events around each; the GPU stays busy while the host enqueues, so
/// launch work is not timed).
template <class F>
double median_launch_seconds(F&& run, cudaStream_t s, int runs) {
  std::vector<Event> b(static_cast<size_t>(runs)), e(static_cast<size_t>(runs));
  for (int i = 0; i < 2; ++i) run(s, i);
  for (int r = 0; r < runs; ++r) {
    b[size_t(r)].record(s);
    run(s, 2 + r);
    e[size_t(r)].record(s);
  }
  DAK_CUDA_CHECK(cudaStreamSynchronize(s));
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) t.push_back(seconds_between(b[size_t(r)], e[size_t(r)]));
  return median_of(t);
}

/// The zero-copy GEMM points (kZeroCopyTokens x kZeroCopyK x kZeroCopyRows, W rows x K bf16 in
/// `h_w`, pinned mapped host memory of `h_bytes`; points that do not fit are left out) and the
/// zero-copy attention rate (the KV cache in `h_w`, its context cut to fit), into `m`. As in the
/// engine, where each linear's host rows are bytes no recent kernel read, launch i reads W from
/// region i mod R of the R = h_bytes / W bytes regions of `h_w`, and writes columns [0, rows) of a
/// y with kZeroCopyLdy columns (the engine's host GEMM writes the first m_host columns of the
/// layer's [N, M] output). Neither changed a rate by more than ~10 % on the H200 (session 11: one
/// region and a narrow y, calls 2 and 3; zero_copy_probe): what differs between shapes is
/// cuBLASLt's kernel choice per row count (kZeroCopyRows).
void zero_copy_reads(const void* h_w, uint64_t h_bytes, int sms, int runs, ProfileMeasurements& m) {
  const int64_t n_max = *std::max_element(std::begin(kZeroCopyTokens), std::end(kZeroCopyTokens));
  const int64_t B = kZeroCopyAttnBatch, H = kZeroCopyAttnHeads, D = kZeroCopyAttnDim;
  // Context: as much of kZeroCopyAttnCtx as K and V of B x H sequences fit in h_bytes (128 keys at least).
  const int64_t ctx = std::min<int64_t>(kZeroCopyAttnCtx, int64_t(h_bytes) / (2 * B * H * D * 2) / 128 * 128);
  const DecodeSplit split = choose_decode_split(B, H, H, std::max<int64_t>(ctx, 128), sms);
  const int64_t k_max = *std::max_element(std::begin(kZeroCopyK), std::end(kZeroCopyK));
  HbmArena arena(HbmArena::aligned_size(uint64_t(n_max * k_max * 2)) +
                     HbmArena::aligned_size(uint64_t(n_max * kZeroCopyLdy * 2)) + CublasLtGemm::kWorkspaceBytes +
                     2 * HbmArena::aligned_size(uint64_t(B * H * D * 2)) + HbmArena::aligned_size(uint64_t(B) * 4 * 4) +
                     HbmArena::aligned_size(decode_workspace_bytes(B, H, D, split)),
                 "dak profile's zero-copy operands");
  auto* g_x = arena.allocate_array<__nv_bfloat16>(uint64_t(n_max * k_max), "x");  // [N, K]
  static_assert(*std::max_element(std::begin(kZeroCopyRows), std::end(kZeroCopyRows)) <= kZeroCopyLdy);
  auto* g_y = arena.allocate_array<__nv_bfloat16>(uint64_t(n_max * kZeroCopyLdy), "y");  // [N, kZeroCopyLdy]
  void* g_ws = arena.allocate(CublasLtGemm::kWorkspaceBytes, "cuBLASLt workspace");
  auto* g_q = arena.allocate_array<__nv_bfloat16>(uint64_t(B * H * D), "q");      // [B, H * D]
  auto* g_out = arena.allocate_array<__nv_bfloat16>(uint64_t(B * H * D), "out");  // [B, H * D]
  auto* g_meta = arena.allocate_array<int32_t>(uint64_t(B) * 4, "segments");      // slot, pos0, len, row0
  auto* g_part = arena.allocate_array<float>(decode_workspace_bytes(B, H, D, split) / 4, "decode workspace");
  Stream s;
  random_fill_bf16(RandomFillParams{g_x, n_max * k_max, 11, 0, 0.0f, 1.0f}, s);
  random_fill_bf16(RandomFillParams{g_q, B * H * D, 11, 1, 0.0f, 1.0f}, s);

  CublasLtGemm gemm(g_ws, CublasLtGemm::kWorkspaceBytes);
  for (int64_t n : kZeroCopyTokens) {
    for (int64_t k : kZeroCopyK) {
      for (int64_t rows : kZeroCopyRows) {
        const uint64_t w_bytes = uint64_t(rows * k * 2);
        if (w_bytes > h_bytes) continue;
        const uint64_t regions = h_bytes / w_bytes;
        GemmArgs a;
        a.g_x = g_x;
        a.g_y = g_y;
        a.ldy = kZeroCopyLdy;
        a.N = n;
        a.M = rows;
        a.K = k;
        const auto run = [&](cudaStream_t st, int i) {
          a.g_w = reinterpret_cast<const __nv_bfloat16*>(static_cast<const char*>(h_w) + (uint64_t(i) % regions) * w_bytes);
          gemm.run(a, st);
        };
        const double t = median_launch_seconds(run, s, runs);
        m.zero_copy_gemm.push_back({n, k, rows, double(rows * k * 2) / t * 1e-9});
      }
    }
  }

  if (ctx >= 128) {
    std::vector<int32_t> meta(size_t(B) * 4);
    for (int64_t b = 0; b < B; ++b) {
      meta[size_t(b)] = int32_t(b);                // slot
      meta[size_t(B + b)] = int32_t(ctx - 1);      // position of the query: attends ctx keys
      meta[size_t(2 * B + b)] = 1;                 // one query
      meta[size_t(3 * B + b)] = int32_t(b);        // output row
    }
    DAK_CUDA_CHECK(cudaMemcpyAsync(g_meta, meta.data(), meta.size() * 4, cudaMemcpyHostToDevice, s));
    auto* h_kv = static_cast<__nv_bfloat16*>(const_cast<void*>(h_w));
    const int64_t tier = B * H * ctx * D;  // elements of K (or V)
    DecodeAttentionParams dp;
    dp.attn.g_q = g_q;
    dp.attn.q_stride = H * D;
    dp.attn.kv = KvCacheLayer{h_kv, h_kv + tier, nullptr, nullptr, int32_t(B), int32_t(B), int32_t(H), int32_t(D), ctx};
    dp.attn.g_out = g_out;
    dp.attn.segs = {g_meta, g_meta + B, g_meta + 2 * B, g_meta + 3 * B, int32_t(B)};
    dp.attn.num_heads = int32_t(H);
    dp.attn.num_kv_heads = int32_t(H);
    dp.attn.head_dim = int32_t(D);
    dp.attn.scale = float(1.0 / std::sqrt(double(D)));
    dp.split = split;
    dp.g_partial = g_part;
    const double t = median_launch_seconds([&](cudaStream_t st, int) { attention_decode(dp, st); }, s, runs);
    m.zero_copy_attention_bytes = 2 * tier * 2;
    m.zero_copy_attention_gbps = double(m.zero_copy_attention_bytes) / t * 1e-9;
  }
}

/// Graph-replayed B_g streams of each size (kLaunchesPerGraph per graph, each on its own region of
/// the pool, the L2 flushed by a memset of g_flush before each replay): per-kernel time, then the
/// line fit.
void measure_launch_overhead(const HbmStreamLauncher& launch, const void* g_pool, uint64_t pool_bytes, void* g_flush,
                             uint64_t flush_bytes, int runs, ProfileMeasurements& m) {
  Stream s;
  Event e0, e1;
  std::vector<double> xs, ys;
  for (uint64_t size : kLaunchSizes) {
    if (size > pool_bytes) continue;
    const int per_graph = int(std::min<uint64_t>(kLaunchesPerGraph, pool_bytes / size));
    const Graph graph(
        s, [&] { for (int i = 0; i < per_graph; ++i) launch(static_cast<const char*>(g_pool) + uint64_t(i) * size, size, s); },
        cudaStreamCaptureModeRelaxed);
    std::vector<double> t;
    for (int r = 0; r <= runs; ++r) {
      DAK_CUDA_CHECK(cudaMemsetAsync(g_flush, r & 0xff, flush_bytes, s));
      e0.record(s);
      graph.launch(s);
      e1.record(s);
      s.sync();
      if (r > 0) t.push_back(seconds_between(e0, e1) / per_graph);
    }
    const double per_kernel = median_of(t);
    m.launch_points.push_back({int64_t(size), per_kernel});
    xs.push_back(double(size));
    ys.push_back(per_kernel);
  }
  const LineFit f = fit_line(xs, ys);
  m.launch_overhead_us = f.intercept * 1e6;
  m.launch_fit_gbps = f.slope > 0 ? 1e-9 / f.slope : 0;
}

TieredGemmTuning tuning_of(const TieredGemmSchedule& s, double seconds) {
  TieredGemmTuning t;
  t.M = s.M;
  t.N = s.N;
  t.K = s.K;
  t.m_host = s.m_host;
  t.host_ctas = s.host_ctas;
  t.host_stages = s.host_stages;
  t.hbm_ctas = s.hbm_ctas;
  t.hbm_stages = s.hbm_stages;
  t.k_splits = s.k_splits;
  t.cluster = s.cluster;
  t.k_chunks = s.k_chunks;
  t.time_us = seconds * 1e6;
  t.eb_gbps = double(s.M) * double(s.K) * 2.0 / seconds * 1e-9;
  return t;
}

bool same_launch(const TieredGemmSchedule& a, const TieredGemmSchedule& b) {
  return a.host_ctas == b.host_ctas && a.host_stages == b.host_stages && a.hbm_ctas == b.hbm_ctas &&
         a.hbm_stages == b.hbm_stages && a.cluster == b.cluster;
}

}  // namespace

void measure_zero_copy(const void* h_w, uint64_t h_bytes, int runs, ProfileMeasurements& m) {
  if (runs < 1) fail(fmt::format("{} runs per median", runs), "dak profile", "use at least 1");
  zero_copy_reads(h_w, h_bytes, device_sm_count(), runs, m);
}

ProfileOptions ProfileOptions::quick() {
  ProfileOptions o;
  o.runs = 3;
  o.hbm_buffer_bytes = 1ull << 30;
  o.host_buffer_bytes = 256ull << 20;
  o.pin_test_bytes = 1ull << 30;
  o.host_bytes_per_cta = 8ull << 20;
  return o;
}

std::vector<HostReadPoint> measure_host_reads(const void* h_src, uint64_t h_bytes, const std::vector<int>& ctas,
                                              const std::vector<int>& stages, uint32_t chunk_bytes,
                                              uint64_t bytes_per_cta, int runs) {
  LinkProbeRunner probe(device_sm_count());
  Stream s;
  std::vector<HostReadPoint> out;
  LinkProbeParams p;
  p.h_src = h_src;
  p.h_bytes = h_bytes / chunk_bytes * chunk_bytes;
  p.chunk_bytes = chunk_bytes;
  p.hbm_ctas = 0;
  p.host_chunks_per_cta = std::max<uint64_t>(1, bytes_per_cta / chunk_bytes);
  for (int st : stages) {
    for (int c : ctas) {
      p.host_stages = st;
      std::vector<double> bw;
      for (int r = 0; r <= runs; ++r) {
        probe.reset(s);
        probe.launch(p, c, false, s);
        s.sync();
        const LinkOutcome o = probe.collect();
        if (o.host.bytes != uint64_t(c) * p.host_chunks_per_cta * chunk_bytes) {
          fail(fmt::format("{} host CTAs read {} bytes instead of {}", c, o.host.bytes,
                           uint64_t(c) * p.host_chunks_per_cta * chunk_bytes),
               "dak profile: host reads", "report this as a bug in dak profile");
        }
        if (r > 0) bw.push_back(gbps(o.host.bytes, o.host.seconds()));
      }
      out.push_back({c, st, int64_t(chunk_bytes), median_of(bw)});
    }
  }
  return out;
}

std::vector<GemmSweepResult> sweep_tiered_gemm(const std::vector<GemmShape>& shapes, const std::vector<int64_t>& tokens,
                                               const std::vector<double>& ratios, int64_t sm_count,
                                               const TieredGemmLinkLimits& limits, int runs,
                                               const std::function<void(const std::string&)>& log,
                                               std::vector<std::string>* skipped) {
  std::vector<GemmSweepResult> out;
  if (shapes.empty() || tokens.empty() || ratios.empty()) return out;
  uint64_t w_max = 0, x_max = 0, y_max = 0, ws_max = 0;
  std::vector<int64_t> ns;  // distinct token counts, in the order given
  for (int64_t n : tokens)
    if (std::find(ns.begin(), ns.end(), n) == ns.end()) ns.push_back(n);
  for (const GemmShape& sh : shapes) {
    for (int64_t n : ns) {
      const TieredGemmSchedule base = plan_tiered_gemm(sh.M, n, sh.K, 0, sm_count, limits);
      w_max = std::max<uint64_t>(w_max, uint64_t(sh.M * sh.K * 2));
      x_max = std::max<uint64_t>(x_max, uint64_t(n * sh.K * 2));
      y_max = std::max<uint64_t>(y_max, uint64_t(n * sh.M * 2));
      ws_max = std::max<uint64_t>(ws_max, uint64_t(base.workspace_bytes()));
    }
  }
  int device = 0, l2 = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  DAK_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  const uint64_t flush_bytes = 2 * uint64_t(std::max(l2, 1 << 20));
  HbmArena arena(HbmArena::aligned_size(w_max) + HbmArena::aligned_size(x_max) + HbmArena::aligned_size(y_max) +
                     HbmArena::aligned_size(ws_max) + HbmArena::aligned_size(flush_bytes),
                 "tiered GEMM sweep operands");
  auto* g_w = arena.allocate_array<__nv_bfloat16>(w_max / 2, "W");  // [M, K] bf16, all rows
  auto* g_x = arena.allocate_array<__nv_bfloat16>(x_max / 2, "x");  // [N, K] bf16
  auto* g_y = arena.allocate_array<__nv_bfloat16>(y_max / 2, "y");  // [N, M] bf16
  void* g_ws = arena.allocate(ws_max, "tiered GEMM workspace");
  void* g_flush = arena.allocate(flush_bytes, "L2 flush buffer");
  PinnedHostArena host(PinnedHostArena::aligned_size(w_max) + 8, "host rows of the tiered GEMM sweep");
  auto* h_w = host.allocate_array<__nv_bfloat16>(w_max / 2, "W host copy");  // [M, K] bf16, rows [0, m_host) read
  HostGate gate(host.allocate_array<int32_t>(2, "host gate flag"), 2000000000ull);
  Stream s;
  std::vector<Event> b(size_t(runs) + 1), e(size_t(runs) + 1);

  for (size_t si = 0; si < shapes.size(); ++si) {
    const GemmShape& sh = shapes[si];
    const int64_t M = sh.M, K = sh.K;
    const bool repeat = std::any_of(shapes.begin(), shapes.begin() + std::ptrdiff_t(si),
                                    [&](const GemmShape& o) { return o.M == M && o.K == K; });
    if (repeat) continue;  // one entry per (M, N, K, m_host)
    random_fill_bf16(RandomFillParams{g_w, M * K, 11, uint64_t(si), 0.0f, 1.0f}, s);
    DAK_CUDA_CHECK(cudaMemcpyAsync(h_w, g_w, uint64_t(M * K * 2), cudaMemcpyDeviceToHost, s));
    for (int64_t n : ns) {
      random_fill_bf16(RandomFillParams{g_x, n * K, 12, uint64_t(si), 0.0f, 1.0f}, s);
      const TieredGemmSchedule base = plan_tiered_gemm(M, n, K, 0, sm_count, limits);
      TieredGemmArgs args;
      args.g_x = g_x;
      args.g_y = g_y;
      auto run = [&](const TieredGemmSchedule& sc) {
        args.h_w = sc.m_host > 0 ? h_w : nullptr;
        args.g_w = sc.m_host < M ? g_w + sc.m_host * K : nullptr;
        tiered_gemm(args, sc, g_ws, s);
      };
      // Every run of a configuration is enqueued behind a closed host gate, each after an L2 flush,
      // so the host's per-launch work (descriptor encoding, checks) never sits between the events.
      auto time = [&](const TieredGemmSchedule& sc) {
        const bool on_time = gate.run_gated(s, [&] {
          for (int r = 0; r <= runs; ++r) {  // r == 0: warm-up
            DAK_CUDA_CHECK(cudaMemsetAsync(g_flush, r & 0xff, flush_bytes, s));  // evict W and x from the L2
            b[size_t(r)].record(s);
            run(sc);
            e[size_t(r)].record(s);
          }
        });
        if (!on_time)
          say(log, "dak: note: the host gate timed out; " + sc.to_string() + " may include host gaps");
        std::vector<double> t;
        for (int r = 1; r <= runs; ++r) t.push_back(seconds_between(b[size_t(r)], e[size_t(r)]));
        return median_of(t);
      };
      const uint64_t y_bytes = uint64_t(n * M * 2);
      auto output = [&](const TieredGemmSchedule& sc) {
        DAK_CUDA_CHECK(cudaMemsetAsync(g_y, 0xff, y_bytes, s));  // poison: NaN bf16
        run(sc);
        std::vector<uint8_t> y(y_bytes);
        DAK_CUDA_CHECK(cudaMemcpyAsync(y.data(), g_y, y_bytes, cudaMemcpyDeviceToHost, s));
        s.sync();
        return y;
      };
      // NOTE: a shape the kernel refuses up front (e.g. a tile not compiled in) is skipped and
      // reported rather than ending the profile; any failure after this first launch is an error.
      std::vector<uint8_t> y_ref;
      try {
        tiered_gemm_workspace_init(g_ws, base, s);
        y_ref = output(base);
      } catch (const dak::Error& e) {
        s.sync();
        const std::string why = fmt::format("{} M={} N={} K={}: {}", sh.label, M, n, K, e.what_part());
        say(log, "dak: tiered GEMM skipped: " + why);
        if (skipped) skipped->push_back(why);
        continue;
      }

      std::vector<int64_t> done;  // host row counts measured for this (shape, N): one entry each
      for (double ratio : ratios) {
        // Host rows in the planner's units (whole 128-row tiles).
        const int64_t m_host = tiered_gemm_host_rows(ratio, M, StepShape{}.tile_rows);
        if (std::find(done.begin(), done.end(), m_host) != done.end()) continue;
        done.push_back(m_host);
        const TieredGemmSchedule planned = plan_tiered_gemm(M, n, K, m_host, sm_count, limits);
        if (planned.k_splits != base.k_splits || planned.k_chunks != base.k_chunks || !(planned.tile == base.tile)) {
          fail(fmt::format("the schedule of m_host = {} differs from the all-HBM one in tile, k_splits or k_chunks",
                           m_host),
               "dak profile: " + planned.to_string(), "report this as a bug (split invariance)");
        }
        std::vector<TieredGemmSchedule> cands = {planned};
        if (planned.host_units() > 0) {
          // Host CTA counts in whole clusters (multicast), within the CTAs that run at once.
          const int64_t C = planned.cluster;
          const int64_t grid = limits.grid_ctas(C, sm_count);
          for (int32_t hc : host_cta_candidates(planned.host_units() * C, planned.hbm_units() > 0, grid)) {
            for (int32_t hs : host_stage_candidates(planned.tile.max_stages())) {
              if (hc % C != 0) continue;
              const TieredGemmSchedule sc = with_congestion(planned, hc, hs, 0, grid);
              if (!same_launch(sc, planned)) cands.push_back(sc);
            }
          }
        }
        say(log, fmt::format("dak: tiered GEMM {} M={} N={} K={} m_host={}: {} launch configurations", sh.label, M, n,
                             K, m_host, cands.size()));
        GemmSweepResult res;
        res.label = sh.label;
        res.configs = int64_t(cands.size());
        double best_s = 0;
        size_t best_i = 0;
        for (size_t i = 0; i < cands.size(); ++i) {
          const double t = time(cands[i]);
          if (i == 0) res.planned = tuning_of(cands[i], t);
          if (i == 0 || t < best_s) {
            best_s = t;
            best_i = i;
          }
        }
        res.best = tuning_of(cands[best_i], best_s);
        const std::vector<uint8_t> y = output(cands[best_i]);
        if (std::memcmp(y.data(), y_ref.data(), y_bytes) != 0) {
          fail(fmt::format("tiered GEMM output with {} host rows differs from the all-HBM output (split invariance)",
                           m_host),
               "dak profile: " + cands[best_i].to_string(),
               "run dak_gpu_tests (the tiered GEMM tests) and report the failure; --skip-gemm profiles the rest");
        }
        out.push_back(res);
      }
    }
  }
  return out;
}

ProfileMeasurements measure_profile(const ProfileOptions& o) {
  const std::string where = "dak profile";
  if (o.runs < 3) fail(fmt::format("{} runs per median", o.runs), where, "use at least 3 (5 by default)");
  if (o.hbm_buffer_bytes < 64 * kMiB || o.host_buffer_bytes < 16 * kMiB || o.host_bytes_per_cta < kLinkChunk)
    fail("profile buffers too small", where, "use at least 64 MiB of HBM and 16 MiB of host buffer");
  for (double r : o.gemm_ratios)
    if (!(r >= 0 && r <= 1)) fail(fmt::format("offload ratio {}", r), where, "give ratios in [0, 1]");
  for (int64_t n : o.gemm_tokens)
    if (n < 1) fail(fmt::format("{} tokens", n), where, "give token counts >= 1");

  ProfileMeasurements m;
  m.runs = o.runs;
  int device = 0;
  DAK_CUDA_CHECK(cudaGetDevice(&device));
  DAK_CUDA_CHECK(cudaFree(nullptr));  // creates the context
  size_t free_b = 0, total_b = 0;
  DAK_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  cudaDeviceProp prop{};
  DAK_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  m.device_name = prop.name;
  m.sm_count = prop.multiProcessorCount;
  m.hbm_capacity_bytes = int64_t(total_b);
  m.hbm_free_after_context_bytes = int64_t(free_b);
  m.smem_optin_bytes = int64_t(prop.sharedMemPerBlockOptin);
  m.cluster4_ctas = tiered_gemm_cluster_limits().cluster4_ctas;
  const int sms = prop.multiProcessorCount;

  {
    say(o.log, fmt::format("dak: pinning {} of host memory", format_gib(std::max(o.pin_test_bytes, o.host_buffer_bytes))));
    PinnedHostArena pinned(std::max(o.pin_test_bytes, o.host_buffer_bytes), "dak profile's pin test and host source");
    m.pin_bytes = int64_t(pinned.mapped_bytes());
    m.pin_seconds = pinned.pin_seconds();

    say(o.log, "dak: HBM read bandwidth B_g (TMA bulk stream, all SMs)");
    const HbmBandwidth bg = measure_hbm_bandwidth(o.hbm_buffer_bytes, o.runs);
    m.hbm_read_gbps = bg.best_bytes_per_s * 1e-9;
    m.hbm_read_median_gbps = bg.median_bytes_per_s * 1e-9;
    m.hbm_buffer_bytes = int64_t(bg.buffer_bytes);
    m.hbm_chunk_bytes = bg.chunk_bytes;
    m.hbm_stages = bg.stages;

    const uint64_t g_bytes = o.hbm_buffer_bytes / kLinkChunk * kLinkChunk;
    const uint64_t h_bytes = o.host_buffer_bytes / kLinkChunk * kLinkChunk;
    HbmArena arena(HbmArena::aligned_size(g_bytes) + HbmArena::aligned_size(h_bytes) + HbmArena::kAlignment,
                   "dak profile's HBM buffers");
    auto* g_src = arena.allocate_array<__nv_bfloat16>(g_bytes / 2, "HBM source");  // [g_bytes / 2] bf16
    void* g_dst = arena.allocate(h_bytes, "copy destination");                      // [h_bytes]
    auto* g_sum = arena.allocate_array<unsigned long long>(1, "checksum");          // [1]
    void* h_src = pinned.allocate(h_bytes, "host source");                          // [h_bytes] pinned host
    const HbmStreamLauncher stream{bg.chunk_bytes, bg.stages, bg.ctas_per_sm * sms, g_sum};
    {
      Stream s;
      random_fill_bf16(RandomFillParams{g_src, int64_t(g_bytes / 2), 5, 0, 0.0f, 1.0f}, s);
      DAK_CUDA_CHECK(cudaMemcpyAsync(h_src, g_src, h_bytes, cudaMemcpyDeviceToHost, s));
      s.sync();
      // The host path returns the bytes written: the same checksum read from host memory and HBM.
      const unsigned long long from_host = stream_checksum(stream, h_src, h_bytes, s);
      const unsigned long long from_hbm = stream_checksum(stream, g_src, h_bytes, s);
      if (from_host != from_hbm) {
        fail(fmt::format("reading pinned host memory from the GPU gave checksum {:#x}, the same bytes in HBM {:#x}",
                         from_host, from_hbm),
             where, "the GPU cannot read mapped host memory correctly here: check the driver (nvidia-smi), IOMMU settings");
      }
    }

    LinkProbeRunner probe(sms);
    say(o.log, "dak: host reads by the SMs (TMA bulk, CTAs x stages)");
    m.host_reads = measure_host_reads(h_src, h_bytes, {1, 2, 4, 8}, {1, 2, 4}, kLinkChunk, o.host_bytes_per_cta, o.runs);

    say(o.log, "dak: copy engine H2D");
    const Spread ce = measure_h2d_copy_gbps(g_dst, h_src, h_bytes, o.runs);
    m.copy_engine_gbps = ce.median;
    m.copy_engine_min_gbps = ce.min;
    m.copy_engine_max_gbps = ce.max;
    m.copy_bytes = int64_t(h_bytes);

    say(o.log, "dak: copy engine and SM reads sharing the link");
    const Shared sh = measure_shared_link(probe, h_src, h_bytes, g_dst, o.runs);
    m.shared_host_ctas = kSharedHostCtas;
    m.shared_stages = kSharedStages;
    m.shared_sm_gbps = sh.sm;
    m.shared_ce_gbps = sh.ce;
    m.shared_total_gbps = sh.total;

    say(o.log, "dak: HBM reads during an H2D copy");
    const Slowdown sl = measure_copy_slowdown(stream, g_src, g_bytes, g_dst, h_src, h_bytes, ce.median, o.runs);
    m.hbm_alone_gbps = sl.alone;
    m.hbm_during_copy_gbps = sl.during;

    say(o.log, "dak: contention curve (HBM CTAs next to host CTAs)");
    measure_contention(probe, g_src, g_bytes, h_src, h_bytes, sms, o.runs, m);

    say(o.log, "dak: zero-copy reads (cuBLASLt and decode attention on host-mapped memory)");
    zero_copy_reads(h_src, h_bytes, sms, o.runs, m);

    say(o.log, "dak: kernel overhead inside a CUDA graph");
    measure_launch_overhead(stream, g_src, g_bytes, g_dst, std::min<uint64_t>(h_bytes, 2 * uint64_t(prop.l2CacheSize)),
                            o.runs, m);
  }

  say(o.log, "dak: bf16 tensor rate (cuBLASLt)");
  m.tensor_mk = kTensorMK;
  m.tensor = measure_tensor_rates(o.tensor_tokens, std::max(o.runs, 5));

  if (o.gemm && !o.gemm_shapes.empty()) {
    TieredGemmLinkLimits limits = tiered_gemm_cluster_limits();
    limits.inflight_cap_bytes = congestion_cap_bytes(m.contention, kCongestionKeepFraction);
    limits.min_inflight_bytes = saturating_inflight_bytes(m.host_reads, kLinkSaturatedFraction);
    say(o.log, "dak: tiered GEMM sweep");
    m.gemm = sweep_tiered_gemm(o.gemm_shapes, o.gemm_tokens, o.gemm_ratios, sms, limits, o.runs, o.log,
                               &m.gemm_skipped);
  }
  return m;
}

}  // namespace dak::gpu
