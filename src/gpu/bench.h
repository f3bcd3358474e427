// The measurements of `dak bench` (issue 3, item 7): HBM read bandwidth B_g, and TTFT / TPOT /
// tokens/s / EB with the floor and a per-operator breakdown of a decode step, for one GpuEngine.
//
// Definitions (DESIGN.md §6):
//   B_g    best HBM read bandwidth of this run: kernels/hbm_stream.h (TMA bulk copies into an
//          SMEM ring, all SMs) over a buffer several times the L2, a few (chunk, stages)
//          configurations, best single launch; every launch's checksum must agree.
//   TTFT   GPU time of the prefill step (batch x prompt_len tokens, first ids sampled and copied
//          back), CUDA events (GpuEngine::last_step_gpu_s); median over repeats.
//   TPOT   GPU time of one decode step (graph replay + sampling + id copy), CUDA events; median
//          over every decode step of every repeat; min/max = the extreme per-repeat medians.
//   bytes  what one decode step must read at the mean decode context prompt + gen/2: every
//          weight except the embedding table (only the batch's rows; a tied table is read in
//          full as lm_head), norm weights and biases, and the K/V cache read plus the token
//          appended (core/op_graph.h step_model_bytes(), the planner's own definition).
//   EB     bytes / TPOT;  floor = bytes / B_g;  ratio = TPOT / floor (1.0 = at the HBM floor).
//   model  the cost model's TPOT (core/cost_model.h, no offload) with the H200 default profile
//          and this run's B_g.
// Procedure per (batch, prompt, gen): one untimed warm-up generation, then `repeats` timed
// ones; each is start() (same shape: allocation, GEMM plans and decode graph reused), the
// prefill, and gen - 1 decode steps, greedy, without stopping at EOS; then one generation whose
// decode steps around the mean context run eagerly with an event between operators
// (GpuEngine::profile_decode_step), median per operator over those steps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/gpu_engine.h"

namespace dak::gpu {

struct HbmBandwidth {
  double best_bytes_per_s = 0;    // B_g
  double median_bytes_per_s = 0;  // median launch of the best configuration
  uint64_t buffer_bytes = 0;
  uint32_t chunk_bytes = 0;       // best configuration
  int32_t stages = 0;
  int ctas_per_sm = 0;
  int sm_count = 0;
  int runs = 0;                   // timed launches per configuration
  int configs = 0;                // configurations tried
};

/// Measures B_g on the current device with a buffer of `buffer_bytes` (rounded down to 16 bytes)
/// and `runs` timed launches per configuration. Throws dak::Error when the buffer does not fit
/// in free HBM, or when two launches disagree on the checksum (the data was not read).
HbmBandwidth measure_hbm_bandwidth(uint64_t buffer_bytes, int runs);

/// B_h: SMs reading pinned host memory with TMA bulk copies (kernels/hbm_stream.h launched on a
/// host buffer), 32 KiB chunks, (CTAs x stages) in {4 x 4, 1 x 4, 8 x 2, 2 x 4, 4 x 2, 16 x 1}
/// (64-512 KiB in flight GPU-wide, around the link's bandwidth-delay product, DESIGN.md §1); per
/// configuration the median of `runs` launches after 2 warm-ups; B_h is the best configuration's
/// median. The one B_h of `dak bench gemm` and `dak bench attention`.
struct HostReadBandwidth {
  double best_bytes_per_s = 0;    // B_h (median launch of the best configuration)
  double max_bytes_per_s = 0;     // fastest single launch of that configuration
  uint64_t buffer_bytes = 0;
  uint32_t chunk_bytes = 0;       // best configuration
  int32_t stages = 0;
  int ctas = 0;
  int runs = 0;                   // timed launches per configuration
  int configs = 0;                // configurations tried
};

/// Measures B_h over `h_buf` [bytes] (pinned, mapped host memory, 16-byte aligned; rounded down
/// to a multiple of 16 bytes). Fills the buffer with a pattern first; every launch's checksum
/// must equal the host's sum of the buffer's 32-bit words. Throws dak::Error for runs < 1, an
/// empty or misaligned buffer, or a checksum mismatch (the data was not read).
HostReadBandwidth measure_host_read_bandwidth(void* h_buf, uint64_t bytes, int runs);

struct BenchShape {
  int64_t batch = 1;
  int64_t prompt_len = 32;
  int64_t gen_len = 32;  // tokens generated per sequence: 1 from the prefill + gen - 1 decode steps
};

/// Median and the spread around it.
struct Spread {
  double median = 0, min = 0, max = 0;
};

/// The copy engine's host-to-HBM rate, B_ce: cudaMemcpyAsync of `bytes` from `h_src` (pinned host
/// memory) to `g_dst` (HBM) between CUDA events, a warm-up then `runs` timed copies; GB/s (1e9
/// B/s): median, min and max. Throws dak::Error on a CUDA error.
Spread measure_h2d_copy_gbps(void* g_dst, const void* h_src, uint64_t bytes, int runs);

struct OpBreakdown {
  StepOp op = StepOp::kEmbedding;
  double time_s = 0;     // median over the profiled steps
  double share = 0;      // of the profiled step's summed time
  int64_t launches = 0;  // per step
  double bytes = 0;      // weight / KV bytes the kind reads per step (0: activations only)
};

struct BenchResult {
  BenchShape shape;
  int64_t repeats = 0;
  int64_t decode_steps_timed = 0;  // all of them served by the CUDA graph
  Spread ttft_s;
  Spread tpot_s;
  double tpot_wall_s = 0;          // median host wall time of a decode step (step_and_sample)
  double decode_tokens_per_s = 0;  // batch / TPOT
  double e2e_tokens_per_s = 0;     // batch * gen / (TTFT + (gen - 1) * TPOT)
  double step_bytes = 0;           // weights + KV, as defined above
  double kv_step_bytes = 0;        // the K/V part of step_bytes
  double eb_bytes_per_s = 0;
  double floor_s = 0;
  double ratio = 0;                // TPOT / floor
  double model_tpot_s = 0;
  double profiled_step_s = 0;      // sum of the breakdown (eager step, events between operators)
  bool profile_gated = true;       // every profiled step ran behind the host gate (no host gaps)
  std::vector<OpBreakdown> ops;    // every StepOp kind with launches > 0, in enum order
};

/// Engine options for benchmarking `shapes`: one prefill pass per batch where the activation
/// buffers stay modest (at most 8192 rows; longer prefills take several passes).
GpuEngineOptions bench_engine_options(const std::vector<BenchShape>& shapes);

/// Runs the procedure above on `engine` for `shape`. `hbm_bytes_per_s` is B_g of this run.
/// Throws dak::Error for repeats < 1, a shape outside the model's context, or when the KV cache
/// does not fit (GpuEngine::start refuses before allocating).
BenchResult run_bench(GpuEngine& engine, const BenchShape& shape, int64_t repeats, double hbm_bytes_per_s);

}  // namespace dak::gpu
