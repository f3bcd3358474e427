// OpGraph: the operators of one forward step (prefill or one decode step) of a decoder-only
// transformer, with the bytes, FLOPs and shapes the planner needs (DESIGN.md §2).
//
// Every operator that owns a large tensor (a weight matrix or the KV cache of one layer) can be
// split between HBM and pinned host memory along one axis, its *split axis*:
//   kLinear     y[N, M] = x[N, K] · W[M, K]^T (+ bias): W splits along M into tile rows
//               (units of `unit_rows` rows, the tiered GEMM's tile height; the last unit may be
//               partial). Host rows are the first rows [0, m_h).
//   kAttention  one layer's attention over its KV cache [B, ctx, 2, Hkv, D]: splits along the batch,
//               whole sequences (unit_rows = 1): sequences [0, b_h) keep their KV on the host.
//   kEmbedding  a gather of N rows of a [V, E] table (token or OPT learned-position embedding):
//               splits along V in tile rows; a step reads only the gathered rows.
//   kNorm       RMSNorm / LayerNorm over N × hidden: its small weights stay in HBM (not splittable).
// Fused operators follow what the GPU kernels fuse: q/k/v projections are one operator
// (M = H·D + 2·Hkv·D, rows in the order q, k, v), gate/up one operator (rows gate then up),
// RoPE is part of qkv_proj, the MLP activation part of the first MLP projection.
//
// Bytes are bf16 (2 bytes per element). `resident_bytes` is what the tensor occupies (capacity,
// KV at the maximum context); `step_bytes` is what one step reads of it (equal for weights, KV at
// the step's context plus the written token, the gathered rows for embeddings). Both split
// proportionally to host rows / split rows.
//
// Sources: transformers/models/{llama,mistral,qwen2,opt}/modeling_*.py for the operator order
// and tensor names; FLOPs count 2 per multiply-add.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_config.h"
#include "core/shape_terms.h"

namespace dak {

enum class Phase : uint8_t { kPrefill, kDecode };
enum class OpKind : uint8_t { kEmbedding, kNorm, kLinear, kAttention };

/// "prefill" / "decode".
std::string phase_name(Phase p);
/// Parses "prefill" / "decode"; throws dak::Error naming `where` otherwise.
Phase parse_phase(const std::string& s, const std::string& where);
/// "embedding", "norm", "linear", "attention".
std::string op_kind_name(OpKind k);
/// Inverse of op_kind_name; throws dak::Error naming `where`.
OpKind parse_op_kind(const std::string& s, const std::string& where);

/// One checkpoint tensor covered by a fused operator, in split-axis order.
struct TensorPart {
  std::string name;  // HF tensor name, e.g. "model.layers.3.self_attn.k_proj.weight"
  int64_t rows = 0;  // rows of the operator's split axis it covers
  bool operator==(const TensorPart&) const = default;
};

/// One operator of a forward step.
struct Op {
  std::string name;    // unique: "embed_tokens", "layers.3.qkv_proj", "lm_head"
  std::string role;    // the same for every layer: "qkv_proj", "attention", ...
  int64_t layer = -1;  // decoder layer, -1 outside the layer stack
  OpKind kind = OpKind::kNorm;

  // Shapes. kLinear: M out features, N tokens, K in features. kEmbedding: M = V table rows,
  // K = E row width, N gathered rows. kAttention: batch B, q_len new tokens per sequence,
  // context = cached positions each new token attends to (mean over the phase for decode),
  // heads H, kv_heads Hkv, head_dim D. kNorm: N tokens, K = hidden.
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 0, q_len = 0, context = 0;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;

  // Bytes and work.
  int64_t resident_bytes = 0;  // splittable tensor bytes held (capacity); 0 if none
  double step_bytes = 0;       // bytes of the splittable tensor read/written per step
  int64_t fixed_bytes = 0;     // bytes that always stay in HBM and are read each step (biases, norm weights)
  double act_bytes = 0;        // activation bytes read + written per step (HBM)
  double flops = 0;            // per step

  // Split axis.
  bool splittable = false;
  int64_t split_rows = 0;           // M (linear), V (embedding), B (attention)
  int64_t unit_rows = 1;            // rows per allocation unit (tile rows, or 1 sequence)
  int64_t row_bytes = 0;            // resident bytes per split row (resident_bytes == split_rows * row_bytes)
  int64_t items_per_unit = 1;       // CTA work items per unit (N tiles of a linear, kv heads of attention)
  int64_t passes = 1;               // forward passes of the step that each read this operator's weights and
                                    //   launch its kernels: a prefill longer than one engine pass
                                    //   (StepShape::prefill_passes) reads every weight once per pass;
                                    //   step_bytes, fixed_bytes and kernels are per pass, act_bytes
                                    //   and flops per step; 1 for decode, and for the embeddings and
                                    //   attention (bytes once a step), whose kernels count every pass
  int64_t kernels = 1;              // kernel launches for this operator in a pass (as the engine runs it:
                                    //   attention 2 with its RoPE / KV append, a gated gate_up 2 with
                                    //   the activation, fc1 2 unless ReLU rides in the epilogue, an
                                    //   in-layer RMSNorm 0 in passes of <= kTieredDecodeMaxTokens,
                                    //   where the tiered GEMMs' epilogues carry it)
  std::vector<TensorPart> tensors;  // checkpoint tensors in split-axis order (splittable ops)
  std::string tied_to;              // op whose tensor this one reads (tied embeddings), else ""

  int64_t units() const { return splittable ? (split_rows + unit_rows - 1) / unit_rows : 0; }
  /// Kernel launches of the step: kernels in each of its passes.
  int64_t step_kernels() const { return kernels * passes; }
  /// Host rows when the first `host_units` units live on the host (clamped to split_rows).
  int64_t host_rows(int64_t host_units) const;
  /// Resident host bytes for `host_units` units.
  int64_t host_resident_bytes(int64_t host_units) const { return host_rows(host_units) * row_bytes; }
};

/// Largest StepShape::tile_rows the planner accepts (build_op_graph, plan files).
constexpr int64_t kMaxTileRows = 16384;

/// Largest StepShape::batch the planner accepts (build_op_graph): KV placement is quantized to
/// whole sequences, so the allocators' work grows with the batch; 65536 sequences is far beyond
/// any single-GPU decode batch.
constexpr int64_t kMaxPlanBatch = 65536;

/// Largest StepShape::prompt_len and gen_len each the planner accepts (build_op_graph, plan files):
/// the largest context a config may declare, so prompt + gen cannot overflow.
constexpr int64_t kMaxPlanTokens = int64_t(1) << 24;

/// What a step looks like: batch, lengths, phase, and the tile geometry of the kernels.
struct StepShape {
  int64_t batch = 1;
  int64_t prompt_len = 1;
  int64_t gen_len = 1;
  Phase phase = Phase::kDecode;
  int64_t tile_rows = 128;  // weight rows per split unit (tiered GEMM tile height), 1..kMaxTileRows
  int64_t tile_n = 256;     // tokens per CTA work item of a linear
  /// Rows the engine packs into one forward pass (GpuEngineOptions::max_pass_tokens: dak generate's
  /// 1024); the engine raises a pass to the batch and lowers it to what the KV cache holds.
  int64_t max_pass_tokens = 1024;

  /// Positions held per sequence at the end of generation (KV capacity): prompt + gen.
  int64_t max_context() const { return prompt_len + gen_len; }
  /// Mean cached positions attended by a decode step: prompt + gen / 2.
  int64_t mean_decode_context() const { return prompt_len + gen_len / 2; }
  /// Rows of one engine pass: max(batch, min(batch x (prompt + gen), max_pass_tokens)), as
  /// GpuEngine::start sizes it.
  int64_t pass_tokens() const;
  /// Passes of the step: ceil(batch x prompt / pass_tokens()) for prefill (each reads every weight:
  /// a 4096-token prompt in passes of 1024 reads the host rows 4 times), 1 for decode.
  int64_t prefill_passes() const;
};

struct OpGraph {
  ModelConfig config;
  StepShape shape;
  std::vector<Op> ops;

  /// Σ resident bytes of splittable weights (KV excluded).
  int64_t weight_resident_bytes() const;
  /// Σ resident bytes of KV caches.
  int64_t kv_resident_bytes() const;
  /// Σ fixed (HBM-only) weight bytes: norms and biases.
  int64_t fixed_bytes() const;
  /// Bytes the step reads from weights + KV (what EB divides by TPOT), fixed bytes included.
  double step_model_bytes() const;
};

/// Builds the operator list of one step. Throws dak::Error if the shape is invalid
/// (batch, lengths or tile sizes < 1; prompt + gen beyond max_position_embeddings is allowed but
/// must be positive), its KV cache exceeds 2^62 bytes (byte counts are int64), or the config fails
/// validate(). `terms`: how the calling command names the shape, for the errors' where and fix.
OpGraph build_op_graph(const ModelConfig& config, const StepShape& shape, const ShapeTerms& terms = {});

}  // namespace dak
