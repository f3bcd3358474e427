// The measurements of `dak bench gemm` (issue 4, item 7): the tiered GEMM (kernels/tiered_gemm.h)
// at offload ratios x, next to cuBLAS at x = 0 and the prefetch baseline, and the host-link
// bandwidth B_h of the same run. The analysis (ideal EB, ratios, targets) is in the CLI
// (src/cli/cmd_bench_gemm.cc); docs/bench-gemm.md has the definitions.
//
// Operands of one experiment, for every (layer, op): W [M, K] bf16, HBM, random (mean 0, HF
// initializer scale), a copy of its rows [0, m_host_max) in pinned host memory (a slice of the
// caller's PinnedHostArena; m_host_max the largest m_host of the experiment's points, smaller
// m_host use a prefix), y [N, M] bf16 in HBM; one x [N, K_max] bf16 (random) in HBM shared by all.
// The tiered GEMM of a point reads rows [0, m_host) from the host copy and rows [m_host, M) from
// W in HBM: the same values as W, so its output must be bitwise identical to the x = 0 run.
//
// Two timing methods:
//   kPerLaunch  one op per experiment; CUDA events around each launch, launches enqueued back to
//               back (`warmup` untimed first); median, min, max of `runs`.
//   kGraphStack `layers` decoder layers, each with its own weights, all ops in order, captured
//               once per point into a CUDA graph; events around each replay; times are per layer
//               (replay / layers), median, min, max of `runs` replays after `warmup`.
// Baselines, same method:
//   cuBLAS      CublasLtGemm on the all-HBM W (x = 0).
//   prefetch    the FlexGen way: cudaMemcpyAsync H2D of the host rows into HBM (the first m_host
//               rows of W's HBM buffer, so the GEMM then reads one contiguous W), then the
//               all-HBM GEMM (the faster at x = 0 of cuBLAS and the tiered GEMM, named in
//               `prefetch_gemm`). Per launch: copy then GEMM, serial. Stack: layer-wise double
//               buffered: layer l+1's copies (copy stream) overlap layer l's GEMMs, and layer
//               l's copies wait for layer l-2's GEMMs (this baseline's own per-layer schedule; the
//               engine's --offload prefetch stages per linear through a ring of kStagingRingSlots
//               = 3 slots, core/plan.h: the copy of staged linear k waits for the GEMM of linear k-3).
// Every buffer is much larger than the L2 (per-launch weights >= the CLI's 256 MiB threshold,
// stacks several GB), so no L2 flush is needed between runs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tiered_gemm_schedule.h"
#include "gpu/bench.h"
#include "gpu/host_arena.h"

namespace dak::gpu {

enum class GemmTiming : int32_t { kPerLaunch, kGraphStack };

/// One linear layer: W [M, K] bf16 (M = out features, K = in features), y = x W^T.
struct LinearShape {
  std::string op;  // "qkv", "o", "gate_up", "down"
  int64_t M = 0, K = 0;
  uint64_t weight_bytes() const { return uint64_t(M) * uint64_t(K) * 2; }
};

/// One offload point: every op at the same ratio, one schedule per op (same order as ops).
struct GemmPointRequest {
  double ratio = 0;                            // requested x, fraction in [0, 1]
  std::vector<TieredGemmSchedule> schedules;   // schedule[i].m_host rows of op i on the host
};

struct GemmBenchRequest {
  GemmTiming timing = GemmTiming::kPerLaunch;
  std::vector<LinearShape> ops;                // kPerLaunch: exactly one
  int64_t N = 0;                               // tokens
  int layers = 1;                              // kGraphStack: decoder layers (each its own W); else 1
  std::vector<TieredGemmSchedule> reference;   // one per op with m_host = 0: the x = 0 tiered run
  std::vector<GemmPointRequest> points;
  int runs = 7;                                // timed launches / replays per measurement, >= 1
  int warmup = 2;                              // untimed before them
  double warmup_s = 0;                         // sustained load before each measurement, seconds (host
                                               //   clock; `dak bench gemm --warmup-ms`)
  uint64_t weights_seed = 0;
};

struct GemmPointResult {
  double ratio = 0;
  uint64_t host_bytes = 0;  // read from host memory per launch (kPerLaunch) or per layer
  Spread tiered_s;          // per launch or per layer
  Spread prefetch_s;        // per launch or per layer
  bool same_bits = false;   // every output identical to the reference's bits
};

struct GemmBenchResult {
  Spread tiered_ref_s;               // tiered GEMM at x = 0 (the reference), same method
  Spread cublas_s;                   // cuBLAS at x = 0, same method
  std::vector<Spread> cublas_op_s;   // per op, events around each cuBLAS launch (compute floor)
  std::string prefetch_gemm;         // "cublas" or "tiered": the all-HBM GEMM of the baseline
  double max_rel_diff_vs_cublas = 0; // max |tiered - cuBLAS| / max |cuBLAS| over all outputs, x = 0
  std::vector<GemmPointResult> points;
  bool gated = true;                 // every timed batch ran behind the host gate (no host gaps)
};

/// Pinned host bytes run_gemm_bench needs from its arena for `req` (256-byte aligned slices).
uint64_t gemm_bench_host_bytes(const GemmBenchRequest& req);

/// HBM bytes run_gemm_bench allocates for `req` (weights, activations, workspaces).
uint64_t gemm_bench_hbm_bytes(const GemmBenchRequest& req);

/// Runs the experiment described above on the current device. `host` is reset and its slices
/// reused (capacity >= gemm_bench_host_bytes(req)). Throws dak::Error for an inconsistent request
/// (op / schedule shapes, kPerLaunch with more than one op or layer), memory that does not fit,
/// or CUDA / kernel errors; a point whose bits differ from the reference is reported, not thrown.
GemmBenchResult run_gemm_bench(const GemmBenchRequest& req, PinnedHostArena& host);

}  // namespace dak::gpu
