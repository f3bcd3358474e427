// CpuModel: one forward pass for every family; the families differ only by the tensor-name
// table below and by ModelConfig switches (norm kind, gated MLP, RoPE or learned positions,
// pre/post-LN, biases, sliding window).
//
// Per step, for the T = sum_b L_b appended tokens (row order: sequence 0's tokens, then 1's, ...):
//   x[T, Hd] = embed(ids) (OPT: project_in, + embed_positions[pos + 2])
//   per layer:  h = norm1(x) (pre-LN) | x (post-LN)
//               q, k, v = h W^T (+b); RoPE(q, k) at each token's position; k, v -> KV cache
//               a = causal softmax(q k^T / sqrt(D)) v over the sequence's cached keys
//                   (GQA: query head hq reads kv head hq / (H / Hkv); sliding window:
//                   keys j > pos - W, as modeling_mistral.py's mask)
//               x += a Wo^T (+b)          (post-LN: x = norm1(x))
//               h = norm2(x) | x
//               x += down(act(gate h) * up h) | fc2(act(fc1 h))   (post-LN: x = norm2(x))
//   out = final_norm(x) (not for OPT post-LN), OPT: project_out; logits = out W_lm^T.
#include "core/cpu_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <new>
#include <utility>

#include <omp.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/byte_size.h"
#include "core/checkpoint.h"
#include "core/cpu_ops.h"
#include "core/host_memory.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/generate.h"
#include "core/op_graph.h"
#include "core/tensor_names.h"

namespace dak {

namespace {

struct Linear {
  std::vector<float> w;  // [out, in]
  std::vector<float> b;  // [out] or empty
  int64_t out = 0, in = 0;
};

struct Norm {
  std::vector<float> w;  // [D] or empty (= ones)
  std::vector<float> b;  // [D] or empty (LayerNorm only)
};

// q/k/v are stored as one [q_dim + 2 kv_dim, Hd] matrix and gate/up as one [2 I, Hd] matrix
// (rows in that order), so that each is one pass over the activations and one OpenMP region.
struct Layer {
  Norm attn_norm, mlp_norm;
  Linear qkv, o, gate_up, down;  // gate_up holds only fc1 when the MLP is not gated
};

// A pending decode of one tensor into its destination rows (collected first, decoded in parallel).
struct Load {
  const TensorInfo* info;
  float* dst;
};

}  // namespace

struct CpuModel::Impl {
  ModelConfig cfg;
  std::vector<float> embed;      // [V, E]
  std::vector<float> positions;  // OPT: [max_pos + 2, Hd]
  Linear project_in, project_out;
  Norm final_norm;
  bool has_final_norm = false;
  Linear lm_head;                // lm_head.w empty when tied (embed is used)
  std::vector<Layer> layers;
  std::vector<float> inv_freq;   // [D/2], empty for OPT
  float rope_attention_factor = 1.0f;  // cos / sin multiplier (cpu::rope_attention_factor; yarn)

  // KV cache: [layers][B][max_context][Hkv * D] for keys and values.
  std::unique_ptr<float[]> k_cache, v_cache;
  int64_t batch = 0, max_context = 0;
  std::vector<int64_t> pos;      // [B]
  CpuModel::LayerProgress progress;

  const float* lm_weight() const { return lm_head.w.empty() ? embed.data() : lm_head.w.data(); }
  float* kv_row(float* cache, int64_t layer, int64_t b, int64_t p) const {
    return cache + ((layer * batch + b) * max_context + p) * cfg.kv_dim();
  }

  void norm(const Norm& n, const float* x, int64_t t, float* y) const {
    const int64_t d = cfg.hidden_size;
    if (cfg.norm == NormKind::kRmsNorm) {
      cpu::rms_norm(x, t, d, n.w.data(), cfg.norm_eps, y);
    } else {
      cpu::layer_norm(x, t, d, n.w.empty() ? nullptr : n.w.data(), n.b.empty() ? nullptr : n.b.data(),
                      cfg.norm_eps, y);
    }
  }
  static void apply(const Linear& l, const float* x, int64_t t, float* y) {
    cpu::linear(x, t, l.in, l.w.data(), l.b.empty() ? nullptr : l.b.data(), l.out, y);
  }

  // The rows of one step: token tok[r] of sequence seq[r] at position pos[r].
  struct Rows {
    std::vector<int32_t> tok;
    std::vector<int64_t> seq, pos;
    int64_t size() const { return int64_t(tok.size()); }
  };

  void load(const Checkpoint& ckpt, const LoadProgress& progress);
  std::vector<float> forward(std::span<const std::vector<int32_t>> tokens, bool all_logits);
  std::vector<float> embed_rows(const Rows& rw) const;                      // [T, Hd]
  void attention_block(int64_t layer, const Rows& rw, std::vector<float>& x);  // x [T, Hd] in place
  void mlp_block(const Layer& L, int64_t t, std::vector<float>& x) const;      // x [T, Hd] in place
  std::vector<float> head(const std::vector<float>& x, const std::vector<int64_t>& rows) const;  // [n, V]
};

// ------------------------------------------------------------------------------ loading

void CpuModel::Impl::load(const Checkpoint& ckpt, const LoadProgress& progress) {
  const ModelConfig& c = cfg;
  const TensorNames& nm = tensor_names(c.arch);
  const std::string where = ckpt.path().string();
  std::vector<Load> loads;

  auto find = [&](const std::string& name) -> const TensorInfo* {
    if (const TensorInfo* t = ckpt.find(name)) return t;
    // Some checkpoints (facebook/opt-*) are saved without the wrapper's "model." prefix.
    if (name.starts_with("model.")) return ckpt.find(std::string_view(name).substr(6));
    return nullptr;
  };
  auto tensor = [&](const std::string& name, std::vector<int64_t> shape, float* dst) {
    const TensorInfo* t = find(name);
    if (!t) {
      fail(fmt::format("missing tensor '{}' ({} model)", name, arch_name(c.arch)), where,
           "check that the checkpoint is complete and that config.json belongs to it");
    }
    if (t->shape != shape) {
      fail(fmt::format("tensor '{}' has shape [{}], the config needs [{}]", name,
                       fmt::join(t->shape, ", "), fmt::join(shape, ", ")),
           t->file.empty() ? where : t->file,
           "check that the config (config.json, or a GGUF file's metadata) belongs to this checkpoint");
    }
    loads.push_back({t, dst});
  };
  auto vec = [&](const std::string& name, std::vector<int64_t> shape, std::vector<float>& dst) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    dst.resize(static_cast<size_t>(n));
    tensor(name, std::move(shape), dst.data());
  };
  // One Linear from the row-wise concatenation of `parts` (name, rows), all with `in` columns.
  auto linear = [&](std::initializer_list<std::pair<std::string, int64_t>> parts, int64_t in, bool bias,
                    Linear& l) {
    l.in = in;
    l.out = 0;
    for (const auto& part : parts) l.out += part.second;
    l.w.resize(static_cast<size_t>(l.out * in));
    if (bias) l.b.resize(static_cast<size_t>(l.out));
    int64_t row = 0;
    for (const auto& [base, rows] : parts) {
      tensor(base + ".weight", {rows, in}, l.w.data() + row * in);
      if (bias) tensor(base + ".bias", {rows}, l.b.data() + row);
      row += rows;
    }
  };
  auto norm = [&](const std::string& base, Norm& n) {
    const bool affine = c.norm == NormKind::kRmsNorm || c.norm_elementwise_affine;
    if (!affine) return;
    vec(base + ".weight", {c.hidden_size}, n.w);
    if (c.norm == NormKind::kLayerNorm) vec(base + ".bias", {c.hidden_size}, n.b);
  };

  const int64_t hd = c.hidden_size, e = c.embed_dim();
  vec(std::string(nm.embed) + ".weight", {c.vocab_size, e}, embed);
  if (*nm.positions)
    vec(std::string(nm.positions) + ".weight", {c.max_position_embeddings + c.position_offset, hd},
        positions);
  if (e != hd) {
    if (!*nm.project_in)
      fail(fmt::format("{} models have no word_embed_proj_dim", arch_name(c.arch)), where,
           "fix config.json");
    linear({{nm.project_in, hd}}, e, false, project_in);
    linear({{nm.project_out, e}}, hd, false, project_out);
  }
  // OPTDecoder has a final LayerNorm only with do_layer_norm_before (pre-LN models).
  has_final_norm = c.arch != Arch::kOpt || c.do_layer_norm_before;
  if (has_final_norm) norm(nm.final_norm, final_norm);
  // Tied embeddings: the HF model ties lm_head to embed_tokens even if the file also stores it.
  if (!c.tie_word_embeddings) linear({{nm.lm_head, c.vocab_size}}, e, false, lm_head);

  layers.resize(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    Layer& L = layers[l];
    const std::string p = fmt::format("{}{}.", nm.layer, l);
    norm(p + nm.attn_norm, L.attn_norm);
    norm(p + nm.mlp_norm, L.mlp_norm);
    linear({{p + nm.q, c.q_dim()}, {p + nm.k, c.kv_dim()}, {p + nm.v, c.kv_dim()}}, hd, c.qkv_bias, L.qkv);
    linear({{p + nm.o, hd}}, c.q_dim(), c.o_bias, L.o);
    if (c.gated_mlp) {
      linear({{p + nm.gate, c.intermediate_size}, {p + nm.up, c.intermediate_size}}, hd, c.mlp_bias,
             L.gate_up);
    } else {
      linear({{p + nm.up, c.intermediate_size}}, hd, c.mlp_bias, L.gate_up);
    }
    linear({{p + nm.down, hd}}, c.intermediate_size, c.mlp_bias, L.down);
  }

  // Decode in parallel; exceptions cannot leave an OpenMP region, so the first is kept. Progress is
  // reported under the same lock, in the order the tensors finish.
  std::exception_ptr error;
  const int64_t n = static_cast<int64_t>(loads.size());
  uint64_t total = 0, done = 0;
  for (const Load& ld : loads) total += uint64_t(ld.info->num_elements());
  const int threads = cpu::parallel_threads(cpu::kMinParallelMacs);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
  for (int64_t i = 0; i < n; ++i) {
    try {
      const std::vector<float> v = ckpt.read_f32(*loads[i].info);
      std::copy(v.begin(), v.end(), loads[i].dst);
      if (progress) {
        // The same lock as the error's: `error` is read here. A throwing callback must not leave the
        // critical section (std::terminate): its exception is kept like a read error's.
#pragma omp critical(dak_cpu_model_load)
        try {
          done += uint64_t(loads[i].info->num_elements());
          if (!error) progress(done, total);
        } catch (...) {
          if (!error) error = std::current_exception();
        }
      }
    } catch (...) {
#pragma omp critical(dak_cpu_model_load)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);

  if (c.arch != Arch::kOpt) {
    inv_freq = cpu::rope_inv_freq(c);
    rope_attention_factor = cpu::rope_attention_factor(c);
  }
}

uint64_t CpuModel::weight_bytes_for(const ModelConfig& c) {
  const uint64_t hd = uint64_t(c.hidden_size), e = uint64_t(c.embed_dim()), v = uint64_t(c.vocab_size);
  const bool affine = c.norm == NormKind::kRmsNorm || c.norm_elementwise_affine;
  const uint64_t norm = affine ? (c.norm == NormKind::kLayerNorm ? 2 * hd : hd) : 0;
  const uint64_t qkv = uint64_t(c.q_dim() + 2 * c.kv_dim()), q = uint64_t(c.q_dim()), ff = uint64_t(c.intermediate_size);
  const uint64_t up_rows = c.gated_mlp ? 2 * ff : ff;
  uint64_t n = v * e;                                                            // embed
  if (c.arch == Arch::kOpt) n += uint64_t(c.max_position_embeddings + c.position_offset) * hd;  // positions
  if (e != hd) n += 2 * hd * e;                                                  // project_in / out
  if (c.arch != Arch::kOpt || c.do_layer_norm_before) n += norm;                 // final norm
  if (!c.tie_word_embeddings) n += v * e;                                        // lm_head
  uint64_t layer = 2 * norm + qkv * hd + hd * q + up_rows * hd + hd * ff;
  if (c.qkv_bias) layer += qkv;
  if (c.o_bias) layer += hd;
  if (c.mlp_bias) layer += up_rows + hd;
  n += uint64_t(c.num_layers) * layer;
  return n * sizeof(float);
}

CpuModel::CpuModel(const Checkpoint& ckpt, const LoadProgress& progress) : impl_(std::make_unique<Impl>()) {
  impl_->cfg = ckpt.config();
  impl_->cfg.validate(ckpt.path().string());
  const uint64_t need = weight_bytes_for(impl_->cfg);
  const std::string fix = "free memory (or raise the process's limit, ulimit -v), run the model on a GPU (--device cuda), "
                          "or use a smaller model: the CPU path is dak's fp32 reference engine, which expands every "
                          "weight to 4 bytes";
  if (const std::optional<uint64_t> avail = mem_available_bytes(); avail && need > *avail)
    fail(fmt::format("the CPU path needs {} for this model's weights in fp32, more than the {} of memory available "
                     "({})",
                     format_gib(double(need)), format_gib(double(*avail)), kMemAvailableSource),
         ckpt.path().string(), fix);
  try {
    impl_->load(ckpt, progress);
  } catch (const std::bad_alloc&) {
    fail(fmt::format("out of memory while expanding the weights to fp32 ({} in all)", format_gib(double(need))),
         ckpt.path().string(), fix);
  }
}

CpuModel::~CpuModel() = default;

void CpuModel::set_layer_progress(LayerProgress progress) { impl_->progress = std::move(progress); }

const ModelConfig& CpuModel::config() const { return impl_->cfg; }

uint64_t CpuModel::weight_bytes() const {
  const Impl& m = *impl_;
  uint64_t n = m.embed.size() + m.positions.size() + m.final_norm.w.size() + m.final_norm.b.size();
  auto lin = [&](const Linear& l) { n += l.w.size() + l.b.size(); };
  auto nrm = [&](const Norm& x) { n += x.w.size() + x.b.size(); };
  lin(m.project_in);
  lin(m.project_out);
  lin(m.lm_head);
  for (const Layer& L : m.layers) {
    nrm(L.attn_norm);
    nrm(L.mlp_norm);
    for (const Linear* l : {&L.qkv, &L.o, &L.gate_up, &L.down}) lin(*l);
  }
  return n * sizeof(float);
}

// ------------------------------------------------------------------------------ state

void CpuModel::start(int64_t batch, int64_t max_context) {
  Impl& m = *impl_;
  const int64_t limit = m.cfg.max_position_embeddings;
  if (batch <= 0)
    fail(fmt::format("batch size must be positive, got {}", batch), "CpuModel::start",
         "pass at least one sequence");
  if (max_context <= 0 || max_context > limit)
    fail(fmt::format("context of {} tokens is outside the model's context of {} tokens", max_context,
                     limit),
         "CpuModel::start (max_position_embeddings)",
         "use a shorter prompt or fewer new tokens (--max-new-tokens)");
  const double cache_bytes =  // K and V, fp32; in double: the product of four sizes may pass 2^64
      2.0 * 4.0 * double(m.cfg.num_layers) * double(batch) * double(max_context) * double(m.cfg.kv_dim());
  const uint64_t elems = uint64_t(m.cfg.num_layers) * uint64_t(batch) * uint64_t(max_context) *
                         uint64_t(m.cfg.kv_dim());
  m.k_cache.reset();
  m.v_cache.reset();
  // Allocation alone does not touch the pages: a cache beyond the memory there is would be killed by
  // the kernel while it fills, so it is refused here (a limit, ulimit -v, fails the allocation below).
  const std::optional<uint64_t> avail = mem_available_bytes();
  if ((avail && cache_bytes > double(*avail)) || cache_bytes >= 0x1p63) {
    m.batch = 0;
    fail(fmt::format("the fp32 KV cache needs {} for {} sequences x {} positions, more than the {} of memory "
                     "available",
                     format_gib(cache_bytes), batch, max_context,
                     avail ? format_gib(double(*avail)) + " (" + kMemAvailableSource + ")"
                           : std::string("address space")),
         "the CPU path's KV cache",
         "use fewer prompts at once (--max-batch), shorter prompts or fewer new tokens (--max-new-tokens), or a "
         "smaller --max-context where one is given");
  }
  try {
    m.k_cache = std::make_unique_for_overwrite<float[]>(elems);
    m.v_cache = std::make_unique_for_overwrite<float[]>(elems);
  } catch (const std::bad_alloc&) {
    m.batch = 0;
    fail(fmt::format("cannot allocate the fp32 KV cache ({} for {} sequences x {} positions)",
                     format_gib(cache_bytes), batch, max_context),
         "the CPU path's KV cache",
         "use fewer prompts at once (--max-batch), shorter prompts, fewer new tokens (--max-new-tokens) or a smaller "
         "--max-context, or raise the process's memory limit (ulimit -v)");
  }
  m.batch = batch;
  m.max_context = max_context;
  m.pos.assign(static_cast<size_t>(batch), 0);
}

void CpuModel::reset(int64_t b) {
  check_sequence_index(b, impl_->batch, "CpuModel::reset");
  impl_->pos[b] = 0;
}

int64_t CpuModel::position(int64_t b) const {
  check_sequence_index(b, impl_->batch, "CpuModel::position");
  return impl_->pos[b];
}

std::vector<float> CpuModel::step(std::span<const std::vector<int32_t>> tokens, bool all_logits) {
  try {
    return impl_->forward(tokens, all_logits);
  } catch (const std::bad_alloc&) {  // the pass's activations (a long prefill: attention scores and MLP rows)
    int64_t n = 0;
    for (const auto& t : tokens) n += int64_t(t.size());
    fail(fmt::format("out of memory in a forward pass of {} token{} on the CPU path", n, n == 1 ? "" : "s"),
         "host memory",
         "use a shorter prompt or fewer prompts (dak perplexity: a smaller --context), free memory, or raise the "
         "process's limit (ulimit -v)");
  }
}

// ------------------------------------------------------------------------------ forward

std::vector<float> CpuModel::Impl::forward(std::span<const std::vector<int32_t>> tokens,
                                           bool all_logits) {
  const ModelConfig& c = cfg;
  if (batch == 0) fail("step() before start()", "CpuModel::step", "call start(batch, max_context) first");
  if (int64_t(tokens.size()) != batch)
    fail(fmt::format("step() got {} sequences, the cache holds {}", tokens.size(), batch),
         "CpuModel::step", "pass one (possibly empty) token list per sequence");

  // Flatten: row r is token tok[r] of sequence seq[r] at position tpos[r]. All checks come
  // before any state changes.
  Rows rw;
  std::vector<int64_t> last_row(static_cast<size_t>(batch), -1);
  for (int64_t b = 0; b < batch; ++b) {
    const auto& ids = tokens[b];
    if (pos[b] + int64_t(ids.size()) > max_context)
      fail(fmt::format("sequence {} would reach {} tokens ({} cached + {} new), beyond the "
                       "context of {} given to start()",
                       b, pos[b] + int64_t(ids.size()), pos[b], ids.size(), max_context),
           "CpuModel::step", "start() with a larger max_context, or generate fewer tokens");
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= c.vocab_size)
        fail(fmt::format("token id {} (sequence {}, index {}) is outside the vocabulary of {}", ids[i],
                         b, i, c.vocab_size),
             "CpuModel::step", "tokenize with the tokenizer that belongs to this model");
      last_row[b] = int64_t(rw.tok.size());
      rw.tok.push_back(ids[i]);
      rw.seq.push_back(b);
      rw.pos.push_back(pos[b] + int64_t(i));
    }
  }

  if (progress) progress(rw.size(), 0, c.num_layers);
  std::vector<float> x = embed_rows(rw);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    attention_block(l, rw, x);
    mlp_block(layers[l], rw.size(), x);
    if (progress) progress(rw.size(), l + 1, c.num_layers);
    throw_if_interrupted();  // Ctrl-C within a step of minutes (core/interrupt.h)
  }
  for (int64_t r = 0; r < rw.size(); ++r) pos[rw.seq[r]] = rw.pos[r] + 1;

  // Logits of every appended row, or of each sequence's last row (zeros where it has none).
  std::vector<int64_t> out_rows;
  if (all_logits) {
    for (int64_t r = 0; r < rw.size(); ++r) out_rows.push_back(r);
  } else {
    for (int64_t b = 0; b < batch; ++b)
      if (last_row[b] >= 0) out_rows.push_back(last_row[b]);
  }
  const std::vector<float> lg = head(x, out_rows);
  if (all_logits) return lg;
  const int64_t v = c.vocab_size;
  std::vector<float> logits(size_t(batch * v), 0.0f);
  for (int64_t b = 0, i = 0; b < batch; ++b)
    if (last_row[b] >= 0) std::copy_n(lg.data() + (i++) * v, v, logits.data() + b * v);
  return logits;
}

std::vector<float> CpuModel::Impl::embed_rows(const Rows& rw) const {
  const ModelConfig& c = cfg;
  const int64_t t = rw.size(), hd = c.hidden_size, e = c.embed_dim();
  std::vector<float> emb(size_t(t * e));
  for (int64_t r = 0; r < t; ++r) std::copy_n(embed.data() + int64_t(rw.tok[r]) * e, e, emb.data() + r * e);
  std::vector<float> x;
  if (e != hd) {
    x.resize(size_t(t * hd));
    apply(project_in, emb.data(), t, x.data());
  } else {
    x.swap(emb);
  }
  if (!positions.empty()) {
    // OPTLearnedPositionalEmbedding: row position + 2.
    for (int64_t r = 0; r < t; ++r) {
      const float* pr = positions.data() + (rw.pos[r] + c.position_offset) * hd;
      for (int64_t j = 0; j < hd; ++j) x[r * hd + j] += pr[j];
    }
  }
  return x;
}

void CpuModel::Impl::attention_block(int64_t l, const Rows& rw, std::vector<float>& x) {
  const ModelConfig& c = cfg;
  const Layer& L = layers[l];
  const int64_t t = rw.size(), hd = c.hidden_size, qd = c.q_dim(), kvd = c.kv_dim();
  const int64_t nh = c.num_heads, nkv = c.num_kv_heads, d = c.head_dim, group = nh / nkv;
  const int64_t qkvd = qd + 2 * kvd;  // row of the fused q/k/v output: [q | k | v]
  const bool pre_ln = c.arch != Arch::kOpt || c.do_layer_norm_before;

  std::vector<float> qkv(size_t(t * qkvd)), a(size_t(t * qd)), o(size_t(t * hd));
  if (pre_ln) {
    std::vector<float> h(size_t(t * hd));
    norm(L.attn_norm, x.data(), t, h.data());
    apply(L.qkv, h.data(), t, qkv.data());
  } else {
    apply(L.qkv, x.data(), t, qkv.data());
  }
  for (int64_t r = 0; r < t; ++r) {
    float* qr = qkv.data() + r * qkvd;
    if (!inv_freq.empty()) {
      cpu::apply_rope(qr, nh, d, inv_freq.data(), rw.pos[r], rope_attention_factor);
      cpu::apply_rope(qr + qd, nkv, d, inv_freq.data(), rw.pos[r], rope_attention_factor);
    }
    std::copy_n(qr + qd, kvd, kv_row(k_cache.get(), l, rw.seq[r], rw.pos[r]));
    std::copy_n(qr + qd + kvd, kvd, kv_row(v_cache.get(), l, rw.seq[r], rw.pos[r]));
  }

  // Every (row, query head) pair reads the keys of its sequence in [lo, pos]; with a sliding
  // window W only keys j > pos - W (modeling_mistral.py / masking_utils sliding window).
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const int64_t max_pos = t > 0 ? *std::max_element(rw.pos.begin(), rw.pos.end()) : 0;
  const int threads = cpu::parallel_threads(2 * t * nh * (max_pos + 1) * d);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> scratch(static_cast<size_t>(max_context));
#pragma omp for schedule(dynamic, 4)
    for (int64_t rh = 0; rh < t * nh; ++rh) {
      const int64_t r = rh / nh, hq = rh % nh, hk = hq / group;
      const int64_t p = rw.pos[r];
      const int64_t lo = c.sliding_window > 0 ? std::max<int64_t>(0, p - c.sliding_window + 1) : 0;
      const float* kr = kv_row(k_cache.get(), l, rw.seq[r], lo) + hk * d;
      const float* vr = kv_row(v_cache.get(), l, rw.seq[r], lo) + hk * d;
      cpu::attend_head(qkv.data() + r * qkvd + hq * d, kr, vr, kvd, p - lo + 1, d, scale,
                       a.data() + r * qd + hq * d, scratch.data());
    }
  }
  apply(L.o, a.data(), t, o.data());
  for (int64_t i = 0; i < t * hd; ++i) x[i] += o[i];
  if (!pre_ln) norm(L.attn_norm, x.data(), t, x.data());  // OPT-350m: post-LN
}

void CpuModel::Impl::mlp_block(const Layer& L, int64_t t, std::vector<float>& x) const {
  const ModelConfig& c = cfg;
  const int64_t hd = c.hidden_size, ff = c.intermediate_size;
  const int64_t gud = c.gated_mlp ? 2 * ff : ff;  // row of the fused output: [gate | up] or fc1
  const bool pre_ln = c.arch != Arch::kOpt || c.do_layer_norm_before;

  std::vector<float> gu(size_t(t * gud)), o(size_t(t * hd));
  if (pre_ln) {
    std::vector<float> h(size_t(t * hd));
    norm(L.mlp_norm, x.data(), t, h.data());
    apply(L.gate_up, h.data(), t, gu.data());
  } else {
    apply(L.gate_up, x.data(), t, gu.data());
  }
  if (c.gated_mlp) {
    // down(act(gate) * up), written over the gate half of each row's [gate | up].
    std::vector<float> m(size_t(t * ff));
    for (int64_t r = 0; r < t; ++r) {
      float* gr = gu.data() + r * gud;
      cpu::activate(gr, ff, c.activation);
      for (int64_t i = 0; i < ff; ++i) m[r * ff + i] = gr[i] * gr[ff + i];
    }
    apply(L.down, m.data(), t, o.data());
  } else {
    cpu::activate(gu.data(), t * ff, c.activation);
    apply(L.down, gu.data(), t, o.data());
  }
  for (int64_t i = 0; i < t * hd; ++i) x[i] += o[i];
  if (!pre_ln) norm(L.mlp_norm, x.data(), t, x.data());
}

std::vector<float> CpuModel::Impl::head(const std::vector<float>& x, const std::vector<int64_t>& rows) const {
  const ModelConfig& c = cfg;
  const int64_t hd = c.hidden_size, e = c.embed_dim(), n = int64_t(rows.size());
  std::vector<float> f(size_t(n * hd));
  for (int64_t i = 0; i < n; ++i) std::copy_n(x.data() + rows[i] * hd, hd, f.data() + i * hd);
  if (has_final_norm) norm(final_norm, f.data(), n, f.data());
  if (e != hd) {
    std::vector<float> p(size_t(n * e));
    apply(project_out, f.data(), n, p.data());
    f.swap(p);
  }
  std::vector<float> logits(size_t(n * c.vocab_size));
  cpu::linear(f.data(), n, e, lm_weight(), nullptr, c.vocab_size, logits.data());
  return logits;
}

namespace {

// The CPU reference path's rates on idle cores, fitted to SmolLM2-135M on the 2-core dev machine
// (cpu_model.h). Re-measured there (AMD EPYC, 2 cores, 2 MiB L2 each, 32 MiB L3) for the new-user
// trial whose ~20k-token perplexity took 2.4 x the notice's estimate: dak perplexity with the default
// model (SmolLM2-135M-Instruct Q4_1, fp32 on the CPU) and window (8192), while another agent's build
// kept a 1-minute load of 4.4-5.1 on the two cores:
//   tokens scored      measured   estimate on idle cores   ratio
//   1053                 15.3 s          5.9 s              2.6
//   2112                 50.5 s         18.2 s              2.8
//   4969                196.9 s         83.8 s              2.35
//   9869 (2 windows)    389.8 s        226.5 s              1.7  (the load fell to 2.2 during it)
//   25374 (--context 2048, 13 windows)
//                       390.3 s        211.4 s              1.85
// The ratio stays flat with the length (the 8191-token window's layers took 18.5 s each at a load of
// about 4.5, and 7.2 s once the load fell, against 6.9 s estimated on idle cores): the flop rates and
// the quadratic attention hold; the difference is the load. The fair share max(1, (load + threads) /
// cores) of cpu_contention_factor() puts it at 3.2-3.6 x from the figures at the start of the first
// four runs, which still held part of the run before (without it, about 2.9-3.1 x): at a steady load
// it overstates by some 10-15 %, and a load that falls during a long run makes it shorter still.
constexpr double kLinearFlopsPerCoreS = 60e9, kAttentionFlopsPerCoreS = 6e9;

int cores_for(int threads) { return threads > 0 ? threads : std::max(1, omp_get_max_threads()); }

// "3 min" (to the nearest minute, at least 1) below an hour, else "2.5 h". The estimate is a central
// one, not a bound: an 8191-token prefill estimated at 208 s took 186 s on idle cores (the trial that
// read "about 4 min or more" for it).
std::string about(double seconds) {
  return seconds < 3600 ? fmt::format("{:.0f} min", std::max(1.0, std::round(seconds / 60)))
                        : fmt::format("{:.1f} h", seconds / 3600);
}

// The notice's "estimated for 2 cores", and where the load makes the run longer ", shared with a
// load of 4.4 from other processes".
std::string estimated_for(int threads, const CpuContention& contention) {
  const int cores = cores_for(threads);
  std::string s = fmt::format("estimated for {} core{}", cores, cores == 1 ? "" : "s");
  if (cpu_contention_factor(contention, threads) > 1.0) {
    s += fmt::format(", shared with a load of {:.1f} from other processes", contention.load);
  }
  return s;
}

}  // namespace

CpuContention current_cpu_contention() {
  CpuContention c;
  // One read of /proc/loadavg (what getloadavg() reads): the 1-minute average, then "running/total"
  // threads (running 0 where that field cannot be read: the average alone).
  std::ifstream in("/proc/loadavg");
  double load_1min = 0, l5 = 0, l15 = 0;
  if (in >> load_1min >> l5 >> l15 && std::isfinite(load_1min) && load_1min > 0) {
    int running = 0;
    char slash = 0;
    if (!(in >> running >> slash) || slash != '/') running = 0;
    c.load = others_cpu_load(load_1min, running);
  }
  c.cores = std::max(1, omp_get_num_procs());
  return c;
}

double others_cpu_load(double load_1min, int running_now) {
  if (!std::isfinite(load_1min) || load_1min <= 0) return 0;
  if (running_now <= 0) return load_1min;
  return std::min(load_1min, double(running_now - 1));
}

double cpu_contention_factor(const CpuContention& contention, int threads) {
  const double t = double(cores_for(threads));
  const double cores = contention.cores > 0 ? double(contention.cores) : t;
  const double load = std::isfinite(contention.load) ? std::max(0.0, contention.load) : 0.0;
  return std::max(1.0, (load + t) / cores);
}

double estimate_cpu_prefill_s(const ModelConfig& config, int64_t prompt_len, int threads,
                              const CpuContention& contention) {
  const double cores = double(cores_for(threads));
  StepShape shape;
  shape.phase = Phase::kPrefill;
  shape.prompt_len = std::max<int64_t>(1, prompt_len);
  double linear = 0, attention = 0;
  for (const Op& op : build_op_graph(config, shape).ops) {
    (op.kind == OpKind::kAttention ? attention : linear) += op.flops;
  }
  return (linear / (kLinearFlopsPerCoreS * cores) + attention / (kAttentionFlopsPerCoreS * cores)) *
         cpu_contention_factor(contention, threads);
}

namespace {
// Where to run a long CPU job instead: --device cuda where this machine has a usable GPU.
std::string on_a_gpu(bool gpu_usable) {
  return gpu_usable ? "run it on a GPU (--device cuda)" : "run it on a machine with a usable GPU";
}
}  // namespace

std::string long_cpu_prefill_notice(const ModelConfig& config, std::span<const int64_t> prompt_lens, int threads,
                                    const CpuContention& contention, bool gpu_usable) {
  double seconds = 0;
  int64_t tokens = 0;
  for (int64_t n : prompt_lens) {
    seconds += estimate_cpu_prefill_s(config, n, threads, contention);
    tokens += n;
  }
  if (!(seconds > kLongCpuPrefillS)) return "";
  return fmt::format("the prefill of {} prompt tokens x {} layers on the CPU reference path will take about {} "
                     "({}); {} or give a shorter prompt",
                     tokens, config.num_layers, about(seconds), estimated_for(threads, contention),
                     on_a_gpu(gpu_usable));
}

namespace {

// perplexity()'s windows for `tokens` ids in windows of `window`: `full` windows of `window` tokens,
// then one of `last` tokens (0: none). Each window scores all its tokens but the first.
struct PerplexityWindows {
  int64_t full = 0, last = 0;
};

PerplexityWindows perplexity_windows(int64_t tokens, int64_t window) {
  window = std::max<int64_t>(2, window);
  if (tokens < 2) return {};
  const int64_t scored = tokens - 1;
  const int64_t rest = scored % (window - 1);
  return {scored / (window - 1), rest > 0 ? rest + 1 : 0};
}

}  // namespace

double estimate_cpu_perplexity_s(const ModelConfig& config, int64_t tokens, int64_t window, int threads,
                                 const CpuContention& contention) {
  const PerplexityWindows w = perplexity_windows(tokens, window);
  double seconds = 0;  // on idle cores
  if (w.full > 0) seconds += double(w.full) * estimate_cpu_prefill_s(config, std::max<int64_t>(2, window), threads);
  if (w.last > 0) seconds += estimate_cpu_prefill_s(config, w.last, threads);
  // The logits of every position but the last of each window (the prefill estimate has that one).
  const double rows = double(w.full) * double(std::max<int64_t>(2, window) - 1) + double(std::max<int64_t>(0, w.last - 1));
  const double head_flops = 2.0 * rows * double(config.embed_dim()) * double(config.vocab_size);
  seconds += head_flops / (kLinearFlopsPerCoreS * double(cores_for(threads)));
  // The log-softmax of each scored token's row (those same rows: a window scores all its tokens but
  // the first), on one thread whatever the cores.
  seconds += rows * double(config.vocab_size) * kCpuLogSoftmaxSPerLogit;
  return seconds * cpu_contention_factor(contention, threads);
}

std::string long_cpu_perplexity_notice(const ModelConfig& config, int64_t tokens, int64_t window, int threads,
                                       const CpuContention& contention, const std::string& part_command,
                                       bool gpu_usable) {
  const double seconds = estimate_cpu_perplexity_s(config, tokens, window, threads, contention);
  if (!(seconds > kLongCpuPrefillS)) return "";
  const PerplexityWindows w = perplexity_windows(tokens, window);
  const int64_t windows = w.full + (w.last > 0 ? 1 : 0);
  // The count the progress line and the result give: every token but the first (trial of session 49:
  // "scoring 1250001 tokens" here, "of 1250000 tokens scored" below it).
  return fmt::format("scoring {} tokens (all of the text's {} but the first) on the CPU reference path will take "
                     "about {} ({} window{} of up to {} tokens x {} layers, {}); {}, or score a "
                     "shorter text (e.g. its first {}: {})",
                     tokens - 1, tokens, about(seconds), windows, windows == 1 ? "" : "s", std::min(tokens, window),
                     config.num_layers, estimated_for(threads, contention), on_a_gpu(gpu_usable),
                     perplexity_part_words(kCpuPerplexityPartBytes),
                     part_command.empty() ? perplexity_part_command(kCpuPerplexityPartBytes, "FILE") : part_command);
}

}  // namespace dak
