// GpuEngine: the HBM-resident forward pass on one Hopper GPU (bf16 weights and KV cache,
// fp32 residual stream, fp32 softmax and accumulation), implementing dak::Engine.
//
// Per step (core/engine.h), the T = sum_b L_b new tokens are packed in sequence order into
// passes of at most max_pass_tokens() rows (a long prompt spans several passes; a pass holds
// at most one piece of each sequence), and each pass runs:
//   embed (+ OPT positions / project_in) -> per layer:
//     [pre-LN] residual_norm(sub + resid) -> qkv GEMM (+bias) -> RoPE + KV append (one kernel) ->
//     attention (prefill kernel; tiered decode attention for a decode step, flash-decoding for
//     other one-token passes and sliding windows) ->
//     o GEMM (+bias) -> residual_norm -> gate_up GEMM (+bias, ReLU epilogue for OPT) ->
//     SiLU-gate / GELU -> down GEMM (+bias)   [post-LN OPT: norms after the residual adds]
//   -> final norm -> (selected rows) -> OPT project_out -> logits GEMM (fp32 out).
// Same op order and tensor table as the CPU reference (core/cpu_model.cc).
// Decode steps (every sequence appends exactly one token) run from a CUDA graph: the first
// such step after start() runs eagerly (creating every cuBLASLt plan), the second captures the
// step once, and later steps only upload the ids/positions and replay it.
// Memory: weights in one arena (allocated at construction); KV cache + activations + workspaces
// in a second arena allocated by start(), refused before allocation when it does not fit.
// Weights come from a checkpoint or, for benchmarking shapes that cannot be downloaded, are
// generated on the GPU from a config and a seed (--random-weights; gpu_weights.h).
// Measuring (dak bench, gpu/bench.h): every step is bracketed by CUDA events (last_step_gpu_s),
// and profile_decode_step runs one decode step eagerly with an event between operators.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/env.h"
#include "core/generate.h"
#include "core/hardware_profile.h"
#include "core/placement.h"

namespace dak {
class Checkpoint;
}

namespace dak::gpu {

/// Operator kinds of a forward step, as profile_decode_step reports them.
enum class StepOp : uint8_t {
  kEmbedding,     // token (+ position) embedding gather, OPT project_in
  kNorm,          // every residual add + RMSNorm / LayerNorm, the final norm included
  kQkvProj,       // fused q/k/v GEMM (+ bias)
  kRopeKvAppend,  // RoPE on q and k, K/V append to the cache
  kAttention,     // decode (tiered attention, or flash-decoding split + combine) or prefill attention
  kOProj,         // attention output projection
  kMlpUp,         // gate_up (gated) or fc1 GEMM
  kActivation,    // SiLU-gate / GELU (ReLU rides the fc1 epilogue)
  kMlpDown,       // down_proj / fc2 GEMM
  kLogits,        // last-row gather, OPT project_out, lm_head GEMM (fp32 logits)
  kSampling,      // GPU sampling of the next ids and their copy to the host
  kCount
};

/// "qkv_proj", "attention", ... (snake_case of the enumerator).
const char* step_op_name(StepOp op);

/// GPU time of one operator kind within a profiled step.
struct StepOpTime {
  StepOp op = StepOp::kEmbedding;
  double time_s = 0;     // summed over the kind's launches (events between operators)
  int64_t launches = 0;  // operator calls of this kind in the step (a GEMM counts once)
};

/// One profiled decode step (profile_decode_step).
struct StepProfile {
  std::vector<StepOpTime> ops;  // every StepOp kind, in enum order (absent kinds: 0 launches)
  /// True when the whole step was enqueued before the GPU started it (kernels/host_gate.h), so
  /// the times hold no host launch gaps; false when the gate timed out (a full launch queue).
  bool gated = false;
};

/// The per-CTA trace of one tiered-GEMM launch (GpuEngine::gemm_trace, DAK_GEMM_TRACE): %globaltimer
/// stamps in ns, 0 where a CTA wrote none (a CTA without a unit has no first full stage).
struct GemmTraceCta {
  uint64_t entry = 0;       // the CTA began
  uint64_t dependency = 0;  // its producer returned from the dependency wait (previous kernel complete)
  uint64_t first_full = 0;  // its consumers saw the first full stage (W and x landed)
  uint64_t done = 0;        // its last math group ended
};
struct GemmTrace {
  const char* op = nullptr;         // the traced operator (step_op_name); null: no trace
  std::vector<GemmTraceCta> ctas;   // the launch's CTAs that wrote a record, in blockIdx order
};

/// `--gemm auto`: the largest GEMM token count N run on the tiered GEMM without a placement (its
/// bandwidth path, 64-row tiles with wide stages). Measured on the H200, Llama-2-7B decode TPOT,
/// tiered vs cuBLASLt: session 9 (docs/perf-notes.md) batch 1 4.27 vs 4.32 ms, batch 8 4.22 vs
/// 4.51, batch 16 4.37 vs 4.59, batch 32 4.71 vs 4.68; session 14 (early W stages, call 9) batch 16
/// 4.02 vs 4.55, batch 32 4.50 vs 4.69, batch 64 5.32 vs 5.14 (cuBLASLt wins). Tuned on
/// Llama-2-7B only: per GEMM, OPT-30B's gate_up at N = 8 is 9.6 % slower on the tiered GEMM (its
/// 8-layer stack 1.3 %; session 9).
inline constexpr int64_t kAutoTieredMaxTokens = 32;
static_assert(kAutoTieredMaxTokens == kTieredDecodeMaxTokens,
              "the planner prices decode steps of up to kTieredDecodeMaxTokens (core/hardware_profile.h) as tiered");

/// The largest pass (tokens) whose in-layer RMSNorms run inside the tiered GEMMs' epilogues
/// (TieredGemmNormOut / NormIn, kernels/tiered_gemm.h): the 64-row tiles' limit. Measured on the
/// H200: docs/perf-notes.md session 24. DAK_NO_FUSED_NORM=1 runs the separate norm kernel instead.
inline constexpr int64_t kFusedNormMaxTokens = 64;

/// Which GEMM runs the linear layers (all weights in HBM in this engine).
enum class GemmBackend : int32_t {
  kAuto,     // the tiered GEMM for small decode batches (N <= 32 tokens: its wide-stage bandwidth path
             //   beats cuBLASLt on the H200, docs/perf-notes.md sessions 9 and 14), cuBLASLt above
  kCublas,   // cuBLASLt everywhere (the reference)
  kTiered,   // tiered GEMM everywhere (its 128-row compute tiles above 64 tokens)
};

/// How the kernels read the host tier of an offload placement (the end-to-end issue's modes).
enum class OffloadMode : int32_t {
  kDirect,    // this design: the tiered GEMM / attention stream host tiles into SMEM by TMA
  kZeroCopy,  // the vLLM UVA approach: the ordinary kernels (cuBLASLt, flash-decoding attention)
              // dereference the host-mapped pointers; logits within bf16 tolerance of direct
  kPrefetch,  // the FlexGen / vLLM-prefetch approach for weights: the copy engine stages each
              // linear's host rows into a three-slot HBM ring (kStagingRingSlots) on a second stream, ahead of its GEMM
              // (captured in the decode graph), and the tiered GEMM reads them from HBM; the KV
              // host tier is still read in place by the tiered attention. Bitwise equal to direct.
};

struct GpuEngineOptions {
  /// Upper bound on the rows of one forward pass (the prefill chunk); the activation buffers
  /// and the logits buffer scale with it. start() raises it to the batch size if smaller.
  int64_t max_pass_tokens = 1024;
  GemmBackend gemm = GemmBackend::kAuto;
  /// Offload (core/placement.h): the leading rows of each weight group the plan names and, when
  /// start() gets the plan's batch, the KV cache of sequences [0, kv_host_seqs[l]) of each layer
  /// live in pinned host memory, read in place by the tiered GEMM / attention (direct path); a
  /// smaller batch fills the plan's HBM sequences first (batch - (plan batch - kv_host_seqs[l]) on
  /// the host, at least 0). nullopt: everything in HBM.
  std::optional<Placement> placement;
  OffloadMode offload_mode = OffloadMode::kDirect;
  /// Called while a checkpoint's weights upload (core/engine.h's LoadProgress); empty: none.
  LoadProgress load_progress;
  /// Tune the decode step's cuBLASLt plans (its linears above kAutoTieredMaxTokens tokens, or every
  /// one with --gemm cublas) on the eager step that creates them (CublasLtGemm::set_tuning): 20-40 ms
  /// per plan once per start() of a new batch / context, for decode steps 1-2.3 % faster on an H100
  /// (docs/perf-notes.md session 48). Worth it where many decode steps follow (dak bench's repeats);
  /// DAK_CUBLASLT_TUNE=0 / 1 overrides it.
  bool tune_cublaslt = false;
};

/// Whether an engine with GpuEngineOptions::tune_cublaslt = `option` tunes its cuBLASLt plans:
/// `option`, unless DAK_CUBLASLT_TUNE=0 or 1 says otherwise (A/B runs; read once per process).
inline bool cublaslt_tuning_enabled(bool option) {
  static const int forced = env_choice("DAK_CUBLASLT_TUNE", {"0", "1"});
  return forced < 0 ? option : forced == 1;
}

class GpuEngine : public Engine {
 public:
  /// Uploads every weight of `ckpt` as bf16 to CUDA device `device_index` (which must be a
  /// Hopper GPU). Throws dak::Error when there is no usable GPU, the weights do not fit in free
  /// HBM (giving needed vs free), or a tensor is missing / misshapen.
  GpuEngine(const Checkpoint& ckpt, int device_index, const GpuEngineOptions& options = {});
  /// Deterministic random bf16 weights for `config` (GpuWeights::random with `weight_seed`),
  /// generated on the GPU: no checkpoint and no host copy. `where` names the config in
  /// messages. Throws dak::Error like the checkpoint constructor.
  GpuEngine(const ModelConfig& config, uint64_t weight_seed, const std::string& where, int device_index,
            const GpuEngineOptions& options = {});
  ~GpuEngine() override;

  const ModelConfig& config() const override;
  std::string device_name() const override;
  /// Allocates the static bf16 KV cache, per layer [batch][Hkv][max_context][D] split along the
  /// batch into a host and an HBM tier (gpu/kernels/kv_cache.h; every sequence in the HBM tier
  /// for now), and the activation buffers. Throws dak::Error (before allocating) when they do not
  /// fit in free HBM, or when max_context exceeds the model's context. Called again with the same
  /// batch and max_context, it keeps the allocation, the GEMM plans and the captured decode graph
  /// and only rewinds every sequence to position 0 (stale cache entries are never read).
  void start(int64_t batch, int64_t max_context) override;
  std::vector<float> step(std::span<const std::vector<int32_t>> tokens, bool all_logits) override;
  int64_t position(int64_t b) const override;
  /// Sequence b back to position 0 (Engine::reset); the KV cache, its placement and the decode graph stay.
  void reset(int64_t b) override;
  /// True: a decode step of every sequence replays the captured graph (Engine::prefers_full_decode_steps).
  bool prefers_full_decode_steps() const override { return true; }

  /// Runs step(tokens, false) and samples the next id of every sequence on the GPU
  /// (kernels/sampling.h; greedy when temperature == 0), copying only the B ids back. The RNG
  /// counter of a sequence is its position, so a seeded run is reproducible. Ids of sequences
  /// with no new token are unspecified. Throws dak::Error like step() and for invalid sampling
  /// parameters.
  std::vector<int32_t> step_and_sample(std::span<const std::vector<int32_t>> tokens, const SamplingParams& sampling);

  /// GPU time of the most recent step() / step_and_sample() call, from a CUDA event recorded
  /// before its metadata upload to one recorded after its results were copied to the host
  /// (graph replay, sampling and copies included; host work shows only where the GPU waited
  /// for it). 0 before the first step.
  double last_step_gpu_s() const;

  /// Runs one decode step (every sequence gets exactly one token) eagerly, outside the CUDA
  /// graph, behind a host gate (the GPU starts once the whole step is enqueued) with a CUDA
  /// event between operators, samples like step_and_sample (ids into `ids` when non-null), and
  /// returns the GPU time per operator kind. The step advances positions like any other.
  /// Throws dak::Error like step_and_sample, and when `tokens` is not a decode step.
  StepProfile profile_decode_step(std::span<const std::vector<int32_t>> tokens, const SamplingParams& sampling,
                                  std::vector<int32_t>* ids = nullptr);

  /// Bytes of the bf16 weight arena (HBM).
  uint64_t weight_bytes() const;
  /// Bytes of offloaded weight rows in the pinned host tier (0 without a placement).
  uint64_t host_weight_bytes() const;
  /// Bytes of KV cache in the pinned host tier, allocated by start() (0 before, or without a KV
  /// placement).
  uint64_t host_kv_bytes() const;
  /// host_weight_bytes() + host_kv_bytes(): what this engine keeps in pinned host memory.
  uint64_t host_bytes() const { return host_weight_bytes() + host_kv_bytes(); }
  /// Bytes of the arena start() allocated (KV cache, activations, workspaces); 0 before start().
  uint64_t state_bytes() const;
  /// Rows processed per forward pass: max(batch, min(batch * max_context, max_pass_tokens));
  /// set by start().
  int64_t max_pass_tokens() const;
  /// Decode steps served by replaying the captured CUDA graph since start() (for tests/bench).
  int64_t graph_replays() const;
  /// A diagnostic, with DAK_GEMM_TRACE=OP in the environment (qkv_proj, o_proj, mlp_up, mlp_down):
  /// the per-CTA records of OP's last tiered-GEMM launch in a decode step (the last layer's;
  /// TieredGemmArgs::g_trace). Prefill passes are not traced. Empty (no op, no CTA) without the
  /// variable, or when no decode step since start() ran OP on the tiered GEMM (e.g. cuBLASLt above
  /// 32 tokens). Synchronizes the engine's stream; throws dak::Error on a CUDA error.
  GemmTrace gemm_trace() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The CLI's entry point: a GpuEngine on CUDA device `device_index`, after probing it
/// (gpu/device.h) and requiring a Hopper GPU. Throws dak::Error with a message the user can
/// act on when there is no usable GPU.
std::unique_ptr<dak::Engine> make_gpu_engine(const Checkpoint& ckpt, int device_index);

}  // namespace dak::gpu
