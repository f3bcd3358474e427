#include "core/op_graph.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/hardware_profile.h"
#include "core/rope_layout.h"

namespace dak {

namespace {

constexpr int64_t kBf16Bytes = 2;

// a >= 0, b >= 1; no overflow for any such pair (a plan file may give tile_n 2^63 - 1: fuzz_plan_json).
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// HF tensor-name prefix of the decoder stack.
std::string model_prefix(const ModelConfig& c) { return c.arch == Arch::kOpt ? "model.decoder." : "model."; }

// Bytes of a norm's parameters: RMSNorm has a weight, LayerNorm a weight and a bias.
int64_t norm_param_bytes(const ModelConfig& c) {
  if (!c.norm_elementwise_affine) return 0;
  return (c.norm == NormKind::kLayerNorm ? 2 : 1) * c.hidden_size * kBf16Bytes;
}

class GraphBuilder {
 public:
  GraphBuilder(const ModelConfig& c, const StepShape& s) : c_(c), s_(s) {
    tokens_ = s.phase == Phase::kPrefill ? s.batch * s.prompt_len : s.batch;
    passes_ = s.prefill_passes();
  }

  std::vector<Op> build() {
    add_embeddings();
    for (int64_t l = 0; l < c_.num_layers; ++l) add_layer(l);
    // Below the head, linears and norms read their weights and launch their kernels once per pass;
    // the embeddings gather each token's row once and attention writes each token's K / V once,
    // their kernels running in every pass.
    for (Op& op : ops_) {
      if (op.kind == OpKind::kLinear || op.kind == OpKind::kNorm) {
        op.passes = passes_;
      } else {
        op.kernels *= passes_;
      }
    }
    // The head runs in the passes that hold a sequence's last token (at most one per sequence).
    const size_t head = ops_.size();
    add_head();
    for (size_t i = head; i < ops_.size(); ++i) ops_[i].passes = std::min(passes_, s_.batch);
    return std::move(ops_);
  }

 private:
  Op& push(std::string role, int64_t layer, OpKind kind) {
    Op op;
    op.name = layer >= 0 ? fmt::format("layers.{}.{}", layer, role) : role;
    op.role = std::move(role);
    op.layer = layer;
    op.kind = kind;
    ops_.push_back(std::move(op));
    return ops_.back();
  }

  // y[N, M] = x[N, K] W[M, K]^T over `n` tokens; `parts` are the fused tensors in row order.
  void add_linear(std::string role, int64_t layer, int64_t n, int64_t k, std::vector<TensorPart> parts, bool bias) {
    Op& op = push(std::move(role), layer, OpKind::kLinear);
    int64_t m = 0;
    for (const TensorPart& p : parts) m += p.rows;
    op.m = m;
    op.n = n;
    op.k = k;
    op.splittable = true;
    op.split_rows = m;
    op.unit_rows = s_.tile_rows;
    op.row_bytes = k * kBf16Bytes;
    op.resident_bytes = m * op.row_bytes;
    op.step_bytes = double(op.resident_bytes);
    op.fixed_bytes = bias ? m * kBf16Bytes : 0;
    op.act_bytes = double(n) * double(k + m) * kBf16Bytes;
    op.flops = 2.0 * double(n) * double(m) * double(k);
    op.items_per_unit = ceil_div(n, s_.tile_n);
    op.tensors = std::move(parts);
  }

  void add_norm(std::string role, int64_t layer, int64_t n) {
    Op& op = push(std::move(role), layer, OpKind::kNorm);
    op.n = n;
    op.k = c_.hidden_size;
    op.fixed_bytes = norm_param_bytes(c_);
    op.act_bytes = 2.0 * double(n) * double(c_.hidden_size) * kBf16Bytes;
    op.flops = 8.0 * double(n) * double(c_.hidden_size);
  }

  // Gather of tokens_ rows from a [rows, width] table.
  void add_embedding(std::string role, int64_t rows, int64_t width, std::string tensor, std::string tied_to) {
    Op& op = push(std::move(role), -1, OpKind::kEmbedding);
    op.m = rows;
    op.n = tokens_;
    op.k = width;
    op.act_bytes = double(tokens_) * double(width) * kBf16Bytes;
    op.step_bytes = double(tokens_) * double(width) * kBf16Bytes;
    op.tied_to = std::move(tied_to);
    if (!op.tied_to.empty()) {
      op.fixed_bytes = 0;  // the table is held (and split) by the op it is tied to
      op.act_bytes += op.step_bytes;
      op.step_bytes = 0;
      return;
    }
    op.splittable = true;
    op.split_rows = rows;
    op.unit_rows = s_.tile_rows;
    op.row_bytes = width * kBf16Bytes;
    op.resident_bytes = rows * op.row_bytes;
    op.tensors = {{std::move(tensor), rows}};
  }

  void add_embeddings() {
    const std::string p = model_prefix(c_);
    const bool tied = c_.tie_word_embeddings;
    add_embedding("embed_tokens", c_.vocab_size, c_.embed_dim(), p + "embed_tokens.weight", tied ? "lm_head" : "");
    if (c_.arch == Arch::kOpt) {
      add_embedding("embed_positions", c_.max_position_embeddings + c_.position_offset, c_.hidden_size,
                    p + "embed_positions.weight", "");
    }
    if (c_.embed_dim() != c_.hidden_size)
      add_linear("project_in", -1, tokens_, c_.embed_dim(), {{p + "project_in.weight", c_.hidden_size}}, false);
  }

  void add_attention(int64_t layer) {
    Op& op = push("attention", layer, OpKind::kAttention);
    // The engine's RoPE + KV append (or KV append), then attention; passes of up to
    // kTieredDecodeMaxTokens of a RoPE model with a pairable head_dim run RoPE and the append in
    // qkv's epilogue (gpu_engine.cc, kernels/tiered_gemm.h TieredGemmRopeOut): the attention alone.
    const bool rope_epilogue =
        rope_layout::engine_pairs_rows(c_) && tokens_ <= kTieredDecodeMaxTokens;
    op.kernels = rope_epilogue ? 1 : 2;
    const bool prefill = s_.phase == Phase::kPrefill;
    const int64_t kv_token_bytes = 2 * c_.kv_dim() * kBf16Bytes;  // K and V of one position
    op.batch = s_.batch;
    op.q_len = prefill ? s_.prompt_len : 1;
    op.context = prefill ? s_.prompt_len : s_.mean_decode_context();
    op.heads = c_.num_heads;
    op.kv_heads = c_.num_kv_heads;
    op.head_dim = c_.head_dim;
    op.n = s_.batch * op.q_len;
    op.splittable = true;
    op.split_rows = s_.batch;
    op.unit_rows = 1;
    op.row_bytes = s_.max_context() * kv_token_bytes;
    op.resident_bytes = s_.batch * op.row_bytes;
    // CTA work items per sequence: kv heads × query tiles of 128 rows (prefill) or × context
    // splits of 256 positions (decode, flash-decoding style).
    const int64_t group = c_.num_heads / c_.num_kv_heads;
    op.items_per_unit = c_.num_kv_heads * (prefill ? ceil_div(s_.prompt_len * group, 128) : ceil_div(op.context, 256));
    const int64_t window = c_.sliding_window > 0 ? c_.sliding_window : INT64_MAX;
    double attended = 0;  // Σ over the q_len new positions of the positions each attends to
    if (prefill) {
      // Σ_{t=1..P} min(t, W) in closed form (a loop took 30 s for 4096 layers of 8 M positions).
      const double p = double(s_.prompt_len), w = double(std::min(window, s_.prompt_len));
      attended = w * (w + 1.0) / 2.0 + (p - w) * w;
      op.step_bytes = double(s_.batch) * double(s_.prompt_len) * double(kv_token_bytes);  // KV written
      op.act_bytes = op.step_bytes;  // flash attention re-reads the fresh K/V from HBM
    } else {
      attended = double(std::min(op.context, window));
      op.step_bytes = double(s_.batch) * (attended + 1.0) * double(kv_token_bytes);  // read + append
    }
    op.act_bytes += 2.0 * double(op.n) * double(c_.q_dim()) * kBf16Bytes;  // q in, output out
    op.flops = 4.0 * double(s_.batch) * double(c_.num_heads) * double(c_.head_dim) * attended;
    op.tensors = {{fmt::format("kv_cache.layers.{}", layer), s_.batch}};
  }

  void add_layer(int64_t l) {
    const std::string p = model_prefix(c_) + fmt::format("layers.{}.", l);
    const bool opt = c_.arch == Arch::kOpt;
    // Passes of up to kTieredDecodeMaxTokens of a pre-LN RMSNorm model carry the norms between two
    // linears in the tiered GEMMs' epilogues (the engine's fused norm: gpu_engine.cc fused_norm,
    // kernels/tiered_gemm.h TieredGemmNormOut / NormIn): only layer 0's attention norm launches.
    const bool fused_norm = (!opt || c_.do_layer_norm_before) && c_.norm == NormKind::kRmsNorm &&
                            c_.hidden_size % 64 == 0 && tokens_ <= kTieredDecodeMaxTokens;
    add_norm("attn_norm", l, tokens_);
    if (fused_norm && l > 0) ops_.back().kernels = 0;
    add_linear("qkv_proj", l, tokens_, c_.hidden_size,
               {{p + "self_attn.q_proj.weight", c_.q_dim()},
                {p + "self_attn.k_proj.weight", c_.kv_dim()},
                {p + "self_attn.v_proj.weight", c_.kv_dim()}},
               c_.qkv_bias);
    add_attention(l);
    add_linear("o_proj", l, tokens_, c_.q_dim(),
               {{p + (opt ? "self_attn.out_proj.weight" : "self_attn.o_proj.weight"), c_.hidden_size}}, c_.o_bias);
    add_norm("mlp_norm", l, tokens_);
    if (fused_norm) ops_.back().kernels = 0;
    const int64_t inter = c_.intermediate_size;
    if (c_.gated_mlp) {
      add_linear("gate_up_proj", l, tokens_, c_.hidden_size,
                 {{p + "mlp.gate_proj.weight", inter}, {p + "mlp.up_proj.weight", inter}}, c_.mlp_bias);
      // + the gated activation kernel. In passes of up to kTieredDecodeMaxTokens with the paired
      // gate_up order the engine runs it in gate_up's epilogue (kernels/tiered_gemm.h
      // TieredGemmActOut), but its cost stays priced as a kernel: removing it measured 10-22 us a
      // step (docs/perf-notes.md sessions 33 and 35), less than the model's per-kernel overhead
      // (2.5-4.3 us a layer), which would make the calibrated decode predictions ~3 % fast.
      ops_.back().kernels = 2;
      add_linear("down_proj", l, tokens_, inter, {{p + "mlp.down_proj.weight", c_.hidden_size}}, c_.mlp_bias);
    } else {
      const std::string mlp = opt ? "" : "mlp.";
      add_linear("fc1", l, tokens_, c_.hidden_size, {{p + mlp + "fc1.weight", inter}}, c_.mlp_bias);
      if (c_.activation != Activation::kRelu) ops_.back().kernels = 2;  // ReLU rides in the GEMM epilogue
      add_linear("fc2", l, tokens_, inter, {{p + mlp + "fc2.weight", c_.hidden_size}}, c_.mlp_bias);
    }
  }

  void add_head() {
    const std::string p = model_prefix(c_);
    const bool opt = c_.arch == Arch::kOpt;
    // Logits are needed for the last position of each sequence only.
    const int64_t n_last = s_.batch;
    if (!opt || c_.do_layer_norm_before) add_norm("final_norm", -1, n_last);
    if (c_.embed_dim() != c_.hidden_size)
      add_linear("project_out", -1, n_last, c_.hidden_size, {{p + "project_out.weight", c_.embed_dim()}}, false);
    const std::string head = c_.tie_word_embeddings ? p + "embed_tokens.weight" : "lm_head.weight";
    add_linear("lm_head", -1, n_last, c_.embed_dim(), {{head, c_.vocab_size}}, false);
  }

  const ModelConfig& c_;
  const StepShape& s_;
  int64_t tokens_ = 0;
  int64_t passes_ = 1;
  std::vector<Op> ops_;
};

}  // namespace

std::string phase_name(Phase p) { return p == Phase::kPrefill ? "prefill" : "decode"; }

Phase parse_phase(const std::string& s, const std::string& where) {
  if (s == "prefill") return Phase::kPrefill;
  if (s == "decode") return Phase::kDecode;
  fail(fmt::format("unknown phase '{}'", s), where, "use 'prefill' or 'decode'");
}

std::string op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::kEmbedding:
      return "embedding";
    case OpKind::kNorm:
      return "norm";
    case OpKind::kLinear:
      return "linear";
    case OpKind::kAttention:
      return "attention";
  }
  return "?";
}

OpKind parse_op_kind(const std::string& s, const std::string& where) {
  for (OpKind k : {OpKind::kEmbedding, OpKind::kNorm, OpKind::kLinear, OpKind::kAttention})
    if (op_kind_name(k) == s) return k;
  fail(fmt::format("unknown operator kind '{}'", s), where, "use embedding, norm, linear or attention");
}

int64_t Op::host_rows(int64_t host_units) const {
  if (!splittable || host_units <= 0) return 0;
  return std::min(host_units * unit_rows, split_rows);
}

int64_t OpGraph::weight_resident_bytes() const {
  int64_t s = 0;
  for (const Op& op : ops)
    if (op.kind != OpKind::kAttention) s += op.resident_bytes;
  return s;
}

int64_t OpGraph::kv_resident_bytes() const {
  int64_t s = 0;
  for (const Op& op : ops)
    if (op.kind == OpKind::kAttention) s += op.resident_bytes;
  return s;
}

int64_t OpGraph::fixed_bytes() const {
  int64_t s = 0;
  for (const Op& op : ops) s += op.fixed_bytes;
  return s;
}

double OpGraph::step_model_bytes() const {
  double s = 0;
  for (const Op& op : ops) s += (op.step_bytes + double(op.fixed_bytes)) * double(op.passes);
  return s;
}

int64_t StepShape::pass_tokens() const {
  const int64_t held = batch > kMaxPlanTokens ? INT64_MAX : batch * max_context();  // no overflow: both bounded
  return std::max(batch, std::min(held, std::max<int64_t>(1, max_pass_tokens)));
}

int64_t StepShape::prefill_passes() const {
  if (phase != Phase::kPrefill) return 1;
  const int64_t p = pass_tokens();
  return (batch * prompt_len + p - 1) / p;
}

OpGraph build_op_graph(const ModelConfig& config, const StepShape& shape, const ShapeTerms& terms) {
  const std::string where = "step shape";
  auto require_positive = [&](int64_t v, const char* what) {
    if (v < 1)
      fail(fmt::format("{} must be at least 1, got {}", what, v), where, fmt::format("pass a positive value for the {}", what));
  };
  require_positive(shape.batch, "batch");
  require_positive(shape.prompt_len, "prompt length");
  require_positive(shape.gen_len, "generation length");
  require_positive(shape.tile_rows, "tile rows");
  require_positive(shape.tile_n, "tile tokens");
  if (shape.tile_rows > kMaxTileRows) {
    fail(fmt::format("tile rows {} is more than the planner supports ({})", shape.tile_rows, kMaxTileRows), where,
         fmt::format("pass --tile-rows between 1 and {} (default 128: the rows of one tiered GEMM tile)",
                     kMaxTileRows));
  }
  if (shape.batch > kMaxPlanBatch) {
    fail(fmt::format("batch {} is larger than the planner supports ({} sequences)", shape.batch, kMaxPlanBatch),
         terms.flags(ShapeTerms::kBatch), terms.lower(ShapeTerms::kBatch));
  }
  // prompt + gen is the context: each at most the largest context a config may declare (2^24), so
  // the sum cannot overflow (the session-8 trial: prompt 2^63 - 1 + gen 1 wrapped past the checks).
  if (shape.prompt_len > kMaxPlanTokens || shape.gen_len > kMaxPlanTokens) {
    fail(fmt::format("prompt length {} + generation length {} is more than the planner supports ({} tokens each)",
                     shape.prompt_len, shape.gen_len, kMaxPlanTokens),
         terms.flags(ShapeTerms::kPrompt | ShapeTerms::kGen),
         terms.lower(ShapeTerms::kPrompt | ShapeTerms::kGen) + " to within the model's context");
  }
  config.validate("model config");
  // Byte counts are int64: the KV cache of the largest shapes accepted (4096 layers x batch 65536 x
  // 2^25 positions x 2^24 bytes each) reaches 2^77. Refused before an operator's bytes could wrap.
  const long double kv_bytes = (long double)config.num_layers * (long double)shape.batch *
                               (long double)shape.max_context() * 4.0L * (long double)config.kv_dim();
  if (kv_bytes > (long double)(int64_t(1) << 62)) {
    fail(fmt::format("the KV cache of {} layers at batch {} and {} positions ({:.3g} bytes) is beyond what the "
                     "planner can count (2^62 bytes, 4 EiB)",
                     config.num_layers, shape.batch, shape.max_context(), double(kv_bytes)),
         terms.flags(ShapeTerms::kAll), terms.lower(ShapeTerms::kAll));
  }
  OpGraph g;
  g.config = config;
  g.shape = shape;
  g.ops = GraphBuilder(config, shape).build();
  return g;
}

}  // namespace dak
