#include "core/gguf_config.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/gguf.h"

namespace dak {

namespace {

const char* const kFixMeta =
    "convert the model with a current llama.cpp (convert_hf_to_gguf.py), or use the Hugging Face "
    "safetensors checkpoint";

/// Reads an integer size and checks it lies in [lo, hi]: keeps absurd metadata from turning
/// into huge allocations or overflowing shape products later.
int64_t size_in_range(const GgufFile& g, const std::string& key, std::optional<int64_t> v,
                      int64_t lo, int64_t hi) {
  if (!v) {
    fail(fmt::format("GGUF metadata key '{}' is missing", key), g.path().string(), kFixMeta);
  }
  if (*v < lo || *v > hi) {
    fail(fmt::format("GGUF metadata '{}' = {} is outside the plausible range [{}, {}]", key, *v, lo,
                     hi),
         g.path().string(), kFixMeta);
  }
  return *v;
}

}  // namespace

ModelConfig model_config_from_gguf(const GgufFile& g) {
  const std::string file = g.path().string();
  const std::string arch = g.get_string("general.architecture");
  ModelConfig c;
  if (arch == "llama") {
    c.arch = Arch::kLlama;
  } else if (arch == "mistral") {
    c.arch = Arch::kMistral;
  } else if (arch == "qwen2") {
    c.arch = Arch::kQwen2;
  } else {
    fail(fmt::format("unsupported GGUF architecture '{}' (general.architecture)", arch), file,
         "dak reads llama, mistral and qwen2 GGUF files; for other models use the Hugging Face "
         "safetensors checkpoint");
  }
  const auto key = [&](std::string_view k) { return arch + "." + std::string(k); };
  const auto req = [&](std::string_view k, int64_t lo, int64_t hi) {
    return size_in_range(g, key(k), g.opt_int(key(k)), lo, hi);
  };

  // Mixtral-style GGUFs say "llama" and hold expert tensors (ffn_*_exps): name the model kind, not a
  // missing dense tensor (trial 47).
  if (const auto experts = g.opt_int(key("expert_count")); experts && *experts != 0) {
    if (*experts < 0) {
      fail(fmt::format("{} is {}", key("expert_count"), *experts), file + ": " + key("expert_count"),
           "restore the file's metadata (an expert count is 0 or more)");
    }
    fail(fmt::format("a mixture-of-experts model ({} = {}) is not supported", key("expert_count"), *experts), file,
         "dak runs dense Llama, Mistral, Qwen2 and OPT models; use a dense model");
  }
  c.num_layers = req("block_count", 1, 1 << 12);
  c.hidden_size = req("embedding_length", 1, 1 << 20);
  c.intermediate_size = req("feed_forward_length", 1, 1 << 22);
  c.num_heads = req("attention.head_count", 1, 1 << 14);
  c.num_kv_heads = g.find(key("attention.head_count_kv")) ? req("attention.head_count_kv", 1, 1 << 14)
                                                            : c.num_heads;
  if (g.find(key("attention.key_length"))) {
    c.head_dim = req("attention.key_length", 1, 1 << 14);
  } else {
    if (c.hidden_size % c.num_heads != 0) {
      fail(fmt::format("{} = {} is not divisible by {} = {} and {} is missing",
                       key("embedding_length"), c.hidden_size, key("attention.head_count"),
                       c.num_heads, key("attention.key_length")),
           file, kFixMeta);
    }
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (g.find(key("attention.value_length")) &&
      req("attention.value_length", 1, 1 << 14) != c.head_dim) {
    fail(fmt::format("{} differs from the key length {}: dak needs equal key and value head sizes",
                     key("attention.value_length"), c.head_dim),
         file, kFixMeta);
  }
  if (g.find(key("rope.dimension_count")) &&
      req("rope.dimension_count", 1, 1 << 14) != c.head_dim) {
    // Where head_dim is derived (no key_length) a wrong head_count shows here first: say how it was
    // derived, and that the metadata may be at fault (trial of session 50: head_count edited 9 -> 8).
    const bool derived = !g.find(key("attention.key_length"));
    const int64_t rope_dims = *g.opt_int(key("rope.dimension_count"));
    const bool other_count = derived && rope_dims > 0 && c.hidden_size % rope_dims == 0;
    fail(fmt::format("{} = {} differs from head_dim {}{}: dak supports no partial rotary embeddings",
                     key("rope.dimension_count"), rope_dims, c.head_dim,
                     derived ? fmt::format(" ({} {} / {} {})", key("embedding_length"), c.hidden_size,
                                           key("attention.head_count"), c.num_heads)
                             : ""),
         file,
         other_count ? fmt::format("if the model has {} heads of {} ({} = {} would say so), the file's metadata is "
                                   "damaged: re-convert or re-download it; else use a model whose rotary embedding "
                                   "covers the whole head",
                                   c.hidden_size / rope_dims, rope_dims, key("attention.head_count"),
                                   c.hidden_size / rope_dims)
                     : "use a model whose rotary embedding covers the whole head");
  }
  c.max_position_embeddings = req("context_length", 1, int64_t(1) << 30);
  c.norm_eps = float(g.opt_float(key("attention.layer_norm_rms_epsilon")).value_or(1e-5));
  c.rope_theta = g.opt_float(key("rope.freq_base")).value_or(10000.0);

  // Rope scaling: llama.cpp writes rope.scaling.type "none" | "linear" | "yarn" (| "longrope")
  // and, for Llama 3.1 scaling, a precomputed "rope_freqs.weight" tensor instead of a type.
  const std::string scaling = g.opt_string(key("rope.scaling.type")).value_or("none");
  if (scaling == "linear") {
    c.rope_scaling = RopeScaling::kLinear;
    c.rope_factor = g.get_float(key("rope.scaling.factor"));
  } else if (scaling == "none") {
    if (auto f = g.opt_float(key("rope.scale_linear")); f && *f != 1.0) {  // older converters
      c.rope_scaling = RopeScaling::kLinear;
      c.rope_factor = *f;
    }
  } else if (scaling == "yarn") {
    // llama.cpp's YaRN (ggml rope_yarn) with its defaults: ext_factor 1, beta_fast 32,
    // beta_slow 1, attention factor 1 + 0.1 ln(factor) -- HF's yarn without optional keys.
    c.rope_scaling = RopeScaling::kYarn;
    c.rope_factor = g.get_float(key("rope.scaling.factor"));
    c.rope_original_max_position = c.max_position_embeddings;
    c.rope_beta_fast = g.opt_float(key("rope.scaling.yarn_beta_fast")).value_or(32.0);
    c.rope_beta_slow = g.opt_float(key("rope.scaling.yarn_beta_slow")).value_or(1.0);
    for (const auto& [k, v] : {std::pair{"rope.scaling.yarn_beta_fast", c.rope_beta_fast},
                               std::pair{"rope.scaling.yarn_beta_slow", c.rope_beta_slow}}) {
      if (!(v > 0.0 && v < 1e6))
        fail(fmt::format("{} = {:g} is not a positive number of rotations", key(k), v), file,
             "re-convert the model (the defaults are beta_fast 32, beta_slow 1)");
    }
    for (const char* k : {"rope.scaling.yarn_log_multiplier", "rope.scaling.attn_factor",
                          "rope.scaling.yarn_ext_factor", "rope.scaling.yarn_attn_factor"}) {
      if (g.find(key(k)))
        fail(fmt::format("yarn rope scaling with {} is not supported", key(k)), file,
             "dak reads yarn GGUFs with factor, original_context_length and beta_fast / beta_slow only; "
             "use the Hugging Face safetensors checkpoint (config.json rope_scaling yarn is supported)");
    }
  } else {
    fail(fmt::format("rope scaling type '{}' ({}) is not supported", scaling,
                     key("rope.scaling.type")),
         file, "dak supports no scaling, linear and yarn scaling in GGUF files");
  }
  if (auto orig = g.opt_int(key("rope.scaling.original_context_length"))) {
    c.rope_original_given = true;
    c.rope_original_max_position = size_in_range(g, key("rope.scaling.original_context_length"),
                                                  orig, 1, int64_t(1) << 30);
  }
  if (c.rope_scaling == RopeScaling::kYarn) {
    c.rope_attention_factor = yarn_mscale(c.rope_factor);
    c.extend_yarn_context();
  }
  if (const GgufTensor* t = g.find_tensor("rope_freqs.weight")) {
    // Llama 3.1 / 3.2 scaling as convert_hf_to_gguf.py writes it: one F32 factor per frequency.
    const int64_t half = c.head_dim / 2;
    if (t->dtype != DType::kF32 || t->ne.size() != 1 || t->ne[0] != half)
      fail(fmt::format("tensor 'rope_freqs.weight' is {} with {} dimension(s) [{}], but the rope factors of "
                       "head_dim {} are F32 [{}]",
                       dtype_name(t->dtype), t->ne.size(), fmt::join(t->ne, ", "), c.head_dim, half),
           file, kFixMeta);
    c.rope_freq_factors.resize(size_t(half));
    std::memcpy(c.rope_freq_factors.data(), t->data, size_t(half) * sizeof(float));
    for (int64_t i = 0; i < half; ++i) {
      const float v = c.rope_freq_factors[size_t(i)];
      if (!(v > 0.0f) || !std::isfinite(v))
        fail(fmt::format("rope_freqs.weight[{}] is {}, not a positive factor", i, v), file, kFixMeta);
    }
  }

  // Vocabulary size: explicit key, else the tokenizer's vocabulary, else the embedding rows.
  if (g.find(key("vocab_size"))) {
    c.vocab_size = req("vocab_size", 1, 1 << 24);
  } else if (g.find("tokenizer.ggml.tokens")) {
    c.vocab_size = size_in_range(g, "tokenizer.ggml.tokens (length)",
                                 int64_t(g.get_string_array("tokenizer.ggml.tokens").size()), 1,
                                 1 << 24);
  } else if (const GgufTensor* e = g.find_tensor("token_embd.weight"); e && e->ne.size() == 2) {
    c.vocab_size = size_in_range(g, "token_embd.weight rows", e->ne[1], 1, 1 << 24);
  } else {
    fail(fmt::format("cannot tell the vocabulary size: no '{}', no tokenizer.ggml.tokens and no "
                     "2-D token_embd.weight",
                     key("vocab_size")),
         file, kFixMeta);
  }

  if (auto bos = g.opt_int("tokenizer.ggml.bos_token_id")) c.bos_token_id = *bos;
  for (const char* k : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                        "tokenizer.ggml.eom_token_id"}) {
    if (auto id = g.opt_int(k);
        id && std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), *id) == c.eos_token_ids.end()) {
      c.eos_token_ids.push_back(*id);
    }
  }

  c.tie_word_embeddings = g.find_tensor("output.weight") == nullptr;
  c.qkv_bias = g.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.o_bias = g.find_tensor("blk.0.attn_output.bias") != nullptr;
  c.mlp_bias = g.find_tensor("blk.0.ffn_up.bias") != nullptr;
  if (c.arch == Arch::kMistral && g.find(key("attention.sliding_window"))) {
    c.sliding_window = req("attention.sliding_window", 0, int64_t(1) << 30);
  }
  // Its hyper-parameters come from the metadata (llama.cpp keys, e.g. llama.attention.head_count_kv
  // for num_key_value_heads): there is no config.json to fix, and the where part names the key.
  try {
    c.validate(file, "fix the GGUF file's metadata or convert the model again");
  } catch (const Error& e) {
    const std::string field_prefix = file + ": field '";
    std::string where = e.where_part();
    if (where.starts_with(field_prefix) && where.ends_with("'")) {
      const std::string field = where.substr(field_prefix.size(), where.size() - field_prefix.size() - 1);
      const std::string k = gguf_key_of_field(field, arch);
      if (!k.empty()) where = file + ": key '" + k + "' (dak's field '" + field + "')";
    }
    throw Error(e.what_part(), where, e.fix_part());
  }
  return c;
}

namespace {

/// llama.cpp's names of a layer's tensors (gguf-py tensor_mapping.py) and HF's.
constexpr std::pair<std::string_view, std::string_view> kLayerNames[] = {
    {"attn_norm", "input_layernorm"},       {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},         {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},          {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
};
constexpr std::pair<std::string_view, std::string_view> kGlobalNames[] = {
    {"token_embd.weight", "model.embed_tokens.weight"},
    {"output_norm.weight", "model.norm.weight"},
    {"output.weight", "lm_head.weight"},
};

}  // namespace

std::string gguf_key_of_field(std::string_view field, const std::string& arch) {
  static constexpr std::pair<std::string_view, std::string_view> kKeys[] = {
      {"vocab_size", "vocab_size"},
      {"hidden_size", "embedding_length"},
      {"intermediate_size", "feed_forward_length"},
      {"num_hidden_layers", "block_count"},
      {"num_attention_heads", "attention.head_count"},
      {"num_key_value_heads", "attention.head_count_kv"},
      {"head_dim", "attention.key_length"},
      {"max_position_embeddings", "context_length"},
      {"rms_norm_eps", "attention.layer_norm_rms_epsilon"},
      {"rope_theta", "rope.freq_base"},
      {"rope_scaling", "rope.scaling.type"},
      {"rope_scaling.factor", "rope.scaling.factor"},
      {"rope_scaling.attention_factor", "rope.scaling.factor"},
      {"sliding_window", "attention.sliding_window"},
  };
  if (field == "bos_token_id" || field == "eos_token_id") return "tokenizer.ggml." + std::string(field);
  for (const auto& [f, k] : kKeys) {
    if (field == f) return arch + "." + std::string(k);
  }
  return "";
}

std::string gguf_name_from_hf(std::string_view n) {
  for (const auto& [gguf, hf] : kGlobalNames) {
    if (n == hf) return std::string(gguf);
  }
  constexpr std::string_view kLayers = "model.layers.";
  if (!n.starts_with(kLayers)) return "";
  n.remove_prefix(kLayers.size());
  const size_t dot = n.find('.');
  if (dot == 0 || dot == std::string_view::npos) return "";
  const std::string_view layer = n.substr(0, dot);
  n.remove_prefix(dot + 1);
  for (std::string_view suffix : {".weight", ".bias"}) {
    if (!n.ends_with(suffix)) continue;
    const std::string_view base = n.substr(0, n.size() - suffix.size());
    for (const auto& [gguf, hf] : kLayerNames) {
      if (base == hf) return fmt::format("blk.{}.{}{}", layer, gguf, suffix);
    }
  }
  return "";
}

std::string hf_name_from_gguf(std::string_view n) {
  for (const auto& [gguf, hf] : kGlobalNames) {
    if (n == gguf) return std::string(hf);
  }
  constexpr std::string_view kBlk = "blk.";
  if (!n.starts_with(kBlk)) return "";
  n.remove_prefix(kBlk.size());
  const size_t dot = n.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 6) return "";
  int64_t layer = 0;
  const auto [ptr, ec] = std::from_chars(n.data(), n.data() + dot, layer);
  if (ec != std::errc() || ptr != n.data() + dot || (dot > 1 && n[0] == '0')) return "";
  n.remove_prefix(dot + 1);
  std::string_view suffix;
  for (std::string_view s : {".weight", ".bias"}) {
    if (n.ends_with(s)) {
      suffix = s;
      n.remove_suffix(s.size());
      break;
    }
  }
  if (suffix.empty()) return "";
  for (const auto& [from, to] : kLayerNames) {
    if (n == from) return fmt::format("model.layers.{}.{}{}", layer, to, suffix);
  }
  return "";
}

std::vector<TensorInfo> hf_tensors_from_gguf(const GgufFile& g, const ModelConfig& config) {
  const std::string file = g.path().string();
  // llama.cpp's LlamaModel.permute is applied for llama-style rope; qwen2 uses NEOX rope in
  // llama.cpp and keeps HF's row order.
  const bool permuted = config.arch == Arch::kLlama || config.arch == Arch::kMistral;
  std::vector<TensorInfo> out;
  out.reserve(g.tensors().size());
  std::set<std::string, std::less<>> seen;
  for (const GgufTensor& gt : g.tensors()) {
    TensorInfo t;
    t.file_name = gt.name;
    t.name = hf_name_from_gguf(gt.name);
    if (t.name.empty()) t.name = gt.name;
    if (!seen.insert(t.name).second) {
      fail(fmt::format("GGUF tensor '{}' maps to '{}', which another tensor already has", gt.name,
                       t.name),
           file, kFixMeta);
    }
    t.file = file;
    t.dtype = gt.dtype;
    t.shape.assign(gt.ne.rbegin(), gt.ne.rend());
    t.bytes = gt.bytes;
    t.data = gt.data;
    if (permuted) {
      const std::string_view n = t.name;
      if (n.ends_with("self_attn.q_proj.weight") || n.ends_with("self_attn.q_proj.bias")) {
        t.gguf_rope_heads = config.num_heads;
      } else if (n.ends_with("self_attn.k_proj.weight") || n.ends_with("self_attn.k_proj.bias")) {
        t.gguf_rope_heads = config.num_kv_heads;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace dak
