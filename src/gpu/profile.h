// The measurements of `dak profile` (issue 4, item 3): every quantity of the hardware profile
// (core/hardware_profile.h), measured on the current GPU, plus the tiered-GEMM launch sweep.
// docs/profile.md describes each quantity and how the planner uses it; core/profile_fit.h turns
// the raw numbers below into a profile.
//
// Every figure is a median of `runs` (>= 3; 5 by default) timed runs after one untimed warm-up:
//   B_g         measure_hbm_bandwidth (gpu/bench.h): TMA bulk stream of an HBM buffer, all SMs.
//   B_h (SM)    kernels/link_probe.h, host role only: CTAs {1, 2, 4, 8} x stages {1, 2, 4} of 32 KiB
//               from pinned host memory, bandwidth = bytes / global-timer span of the CTAs; the best
//               point is sm_read_gbps, 1 CTA x 1 stage gives the stage latency.
//   B_h (CE)    cudaMemcpyAsync H2D from the pinned arena into HBM, CUDA events.
//   shared      a copy-engine H2D copy on one stream while 8 host CTAs x 2 stages stream the
//               host on another, until the copy ends (a memset behind it stops the kernel);
//               the total is (both byte counts) / the longer of the two spans.
//   slowdown    the B_g stream alone, then during H2D copies enqueued first on another stream
//               (events prove the overlap).
//   contention  link_probe with 100 HBM CTAs and k in {0, 2, 4, 8, 12, 16, 24, 32} host CTAs, both
//               with stages {2, 4} of 32 KiB; host CTAs stream until every HBM CTA is done.
//   tensor      cuBLASLt bf16 y[N, M] = x[N, K] W[M, K]^T at M = K = 8192, random data.
//   launches    CUDA graphs of back-to-back B_g-stream kernels of S bytes (each its own region,
//               the L2 flushed before each replay), S from 256 KiB to 1 GiB; t(S) = a + S / B by
//               least squares, a = overhead.
//   zero copy   the ordinary kernels reading pinned mapped host memory in place (the zero-copy
//               offload mode): cuBLASLt y[N, rows] = x[N, K] W^T with W in host memory, N in
//               {8, 512}, K in {4096, 8192, 16384}, rows every multiple of 128 up to 2048, then
//               3072 ... 16384 (those whose W fits the host buffer): host bytes / median time; and
//               attention_decode over 8 sequences x 32 heads x 128 with all K/V in host memory.
//   pin         mmap + cudaHostRegister of the pin-test size (PinnedHostArena::pin_seconds).
//   tiered GEMM per shape, N and offload ratio: plan_tiered_gemm's schedule, then host CTAs
//               {1, 2, 4, ...} x host stages {1, 2, 4, ...} with HBM CTAs = the remaining SMs,
//               CUDA events around each run with the L2 flushed before it, all runs enqueued behind
//               a host gate (kernels/host_gate.h) so host launch work is not timed; the best one's output
//               must equal the all-HBM output bit for bit. A (shape, N) the kernel refuses at its
//               first launch is skipped and listed (ProfileMeasurements::gemm_skipped).
// Buffers: one pinned host arena (the pin test) doubles as the host source; HBM buffers are
// HbmArenas freed at return.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/profile_fit.h"
#include "core/tiered_gemm_schedule.h"

namespace dak::gpu {

/// A linear layer to tune: y[N, M] = x[N, K] . W[M, K]^T.
struct GemmShape {
  int64_t M = 0, K = 0;
  std::string label;  // "llama-2-7b qkv_proj"
};

struct ProfileOptions {
  int runs = 5;                                // timed runs behind each median (>= 3)
  uint64_t hbm_buffer_bytes = 4ull << 30;      // HBM stream buffer (several times the L2)
  uint64_t host_buffer_bytes = 1ull << 30;     // host source of the link measurements
  uint64_t pin_test_bytes = 4ull << 30;        // pinned and timed (at least host_buffer_bytes)
  uint64_t host_bytes_per_cta = 32ull << 20;   // read by each CTA of a host read sweep point
  std::vector<int64_t> tensor_tokens = {256, 512, 1024, 8192, 16384};
  bool gemm = true;                            // run the tiered-GEMM sweep
  std::vector<GemmShape> gemm_shapes;
  std::vector<int64_t> gemm_tokens = {8, 512};
  std::vector<double> gemm_ratios = {0, 0.1, 0.5, 1.0};
  std::function<void(const std::string&)> log;  // progress lines; may be empty

  /// Smaller buffers and 3 runs (tests and smoke runs; the figures are noisier).
  static ProfileOptions quick();
};

/// Runs every measurement above on the current device. Throws dak::Error for invalid options, when
/// memory cannot be had (HBM buffers, the pinned arena), when a measurement cannot overlap what it
/// must overlap, when the host read path returns other bytes than were written, or when a tiered
/// GEMM launch fails or its output differs from the all-HBM output.
ProfileMeasurements measure_profile(const ProfileOptions& options);

/// The SM-path host read sweep alone: `ctas` x `stages` points of `chunk_bytes` TMA copies from
/// `h_src` ([h_bytes] pinned mapped host memory, a multiple of chunk_bytes), each CTA reading
/// `bytes_per_cta` (wrapping around h_src).
std::vector<HostReadPoint> measure_host_reads(const void* h_src, uint64_t h_bytes, const std::vector<int>& ctas,
                                              const std::vector<int>& stages, uint32_t chunk_bytes,
                                              uint64_t bytes_per_cta, int runs);

/// The zero-copy measurements alone (into m.zero_copy_*; see `zero copy` above): cuBLASLt GEMMs
/// y[N, rows] = x[N, K] W^T for N in {8, 512}, K in {4096, 8192, 16384}, rows in {128, 256, ...,
/// 2048, 3072, 4096, 6144, 8192, 12288, 16384} (those whose W fits), with W in `h_w`, and attention_decode over 8 sequences x 32
/// heads x 128 with K and V in `h_w` (context up to 2048, as fits; none below 128). `h_w`: pinned,
/// mapped host memory of `h_bytes` (read only). Throws dak::Error for runs < 1 or a CUDA failure.
void measure_zero_copy(const void* h_w, uint64_t h_bytes, int runs, ProfileMeasurements& m);

/// The tiered-GEMM sweep alone (see above) on `sm_count` SMs with the congestion limits `limits`.
/// A (shape, N) whose first launch the kernel refuses (dak::Error, e.g. a tile that is not compiled
/// in) is skipped and described in `skipped` (may be null); later failures throw.
std::vector<GemmSweepResult> sweep_tiered_gemm(const std::vector<GemmShape>& shapes, const std::vector<int64_t>& tokens,
                                               const std::vector<double>& ratios, int64_t sm_count,
                                               const TieredGemmLinkLimits& limits, int runs,
                                               const std::function<void(const std::string&)>& log,
                                               std::vector<std::string>* skipped);

}  // namespace dak::gpu
