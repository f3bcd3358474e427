// ModelConfig from a Hugging Face config.json.
//
// Defaults for absent keys follow the HF configuration classes (transformers main, 2025):
//   llama   configuration_llama.py   LlamaConfig:   vocab 32000, hidden 4096, intermediate 11008,
//           layers 32, heads 32, num_key_value_heads None -> heads, head_dim None -> hidden/heads,
//           hidden_act "silu", max_position_embeddings 2048, rms_norm_eps 1e-6, bos 1, eos 2,
//           tie_word_embeddings False, attention_bias False, mlp_bias False.
//   mistral configuration_mistral.py MistralConfig: as llama but intermediate 14336,
//           num_key_value_heads 8 (None -> heads), max_position_embeddings 4096*32,
//           sliding_window 4096 (null -> full attention); no bias options.
//   qwen2   configuration_qwen2.py   Qwen2Config:   vocab 151936, hidden 4096, intermediate 22016,
//           layers 32, heads 32, num_key_value_heads 32 (None -> heads), max_position_embeddings
//           32768, rms_norm_eps 1e-6, tie False, use_sliding_window False, sliding_window 4096,
//           max_window_layers 28, bos/eos None; q/k/v always carry a bias (modeling_qwen2.py).
//   opt     configuration_opt.py     OPTConfig:     vocab 50272, hidden_size (old name d_model)
//           768, layers 12, ffn_dim 3072, heads 12, max_position_embeddings 2048,
//           do_layer_norm_before True, word_embed_proj_dim None -> hidden, activation "relu",
//           bos 2, eos 2, enable_bias True, layer_norm_elementwise_affine True; LayerNorm eps
//           is nn.LayerNorm's default 1e-5; learned positions offset by 2
//           (OPTLearnedPositionalEmbedding). tie_word_embeddings comes from PreTrainedConfig
//           (default True).
// RoPE: rope_theta default 10000 for llama/mistral/qwen2. Scaling parameters come from
// "rope_scaling" (transformers 4.x, key "rope_type" or legacy "type") or "rope_parameters"
// (transformers 5, which also holds rope_theta); see modeling_rope_utils.py.
#include "core/model_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"

namespace dak {

namespace {

using nlohmann::json;

// Location string for errors: "<file>: field 'name'".
std::string field_where(const std::string& where, const std::string& key) {
  return where + ": field '" + key + "'";
}

const json* find_key(const json& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

/// Refuses an unsigned JSON integer past int64 (get<int64_t>() would wrap it, e.g. to -1).
void refuse_past_int64(const json& v, const std::string& where, const std::string& key) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) {
    fail("integer " + std::to_string(v.get<uint64_t>()) + " is too large (at most 2^63 - 1)",
         field_where(where, key), "fix the value in config.json");
  }
}

int64_t get_int(const json& j, const std::string& key, int64_t def, const std::string& where) {
  const json* v = find_key(j, key);
  if (!v) return def;
  refuse_past_int64(*v, where, key);
  if (v->is_number_integer() || v->is_number_unsigned()) return v->get<int64_t>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (d == std::floor(d) && std::abs(d) < 9e15) return static_cast<int64_t>(d);
    if (d == std::floor(d)) {
      fail(fmt::format("integer {:g} is too large", d), field_where(where, key), "fix the value in config.json");
    }
  }
  fail("expected an integer, got " + v->dump(), field_where(where, key),
       "fix the value in config.json");
}

double get_double(const json& j, const std::string& key, double def, const std::string& where) {
  const json* v = find_key(j, key);
  if (!v) return def;
  if (v->is_number()) return v->get<double>();
  fail("expected a number, got " + v->dump(), field_where(where, key),
       "fix the value in config.json");
}

bool get_bool(const json& j, const std::string& key, bool def, const std::string& where) {
  const json* v = find_key(j, key);
  if (!v) return def;
  if (v->is_boolean()) return v->get<bool>();
  fail("expected true or false, got " + v->dump(), field_where(where, key),
       "fix the value in config.json");
}

std::string get_string(const json& j, const std::string& key, const std::string& def,
                       const std::string& where) {
  const json* v = find_key(j, key);
  if (!v) return def;
  if (v->is_string()) return v->get<std::string>();
  fail("expected a string, got " + v->dump(), field_where(where, key),
       "fix the value in config.json");
}

// eos_token_id: an integer, a list of integers, or null.
std::vector<int64_t> get_id_list(const json& j, const std::string& key, std::vector<int64_t> def,
                                 const std::string& where) {
  auto it = j.find(key);
  if (it == j.end()) return def;
  if (it->is_null()) return {};
  if (it->is_number_integer()) {
    refuse_past_int64(*it, where, key);
    return {it->get<int64_t>()};
  }
  if (it->is_array()) {
    std::vector<int64_t> ids;
    for (const auto& e : *it) {
      refuse_past_int64(e, where, key);
      if (!e.is_number_integer())
        fail("expected a list of integer token ids, got " + it->dump(), field_where(where, key),
             "fix the value in config.json");
      ids.push_back(e.get<int64_t>());
    }
    return ids;
  }
  fail("expected a token id or a list of token ids, got " + it->dump(), field_where(where, key),
       "fix the value in config.json");
}

/// A normalization epsilon from config.json, checked before it becomes a float: in (0, 1) and
/// representable (at least 1e-30; 1e39 would become inf, 1e-50 zero). Real models use 1e-5 or 1e-6.
float norm_eps_of(double eps, const std::string& where) {
  if (!(eps >= 1e-30 && eps < 1.0)) {
    fail(fmt::format("normalization epsilon {:g} is outside [1e-30, 1)", eps), where,
         "fix config.json (real models use 1e-5 or 1e-6)");
  }
  return static_cast<float>(eps);
}

Activation parse_activation(const std::string& name, const std::string& where,
                            const std::string& key) {
  // ACT2FN names (transformers/activations.py): "gelu" is the exact erf GELU; "gelu_new" and
  // "gelu_pytorch_tanh" are the tanh approximation; "swish" is an alias of SiLU.
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "relu") return Activation::kRelu;
  if (name == "gelu") return Activation::kGelu;
  if (name == "gelu_pytorch_tanh" || name == "gelu_new") return Activation::kGeluTanh;
  fail("unsupported activation '" + name + "'", field_where(where, key),
       "dak supports silu, relu, gelu, gelu_new and gelu_pytorch_tanh");
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::kSilu: return "silu";
    case Activation::kRelu: return "relu";
    case Activation::kGelu: return "gelu";
    case Activation::kGeluTanh: return "gelu_pytorch_tanh";
  }
  return "silu";
}

// original_max_position_embeddings of llama3 / yarn scaling as standardize_rope_params leaves it: the
// top level of config.json wins over the section (Phi-3's layout), else the section's, else
// `fallback` (nullopt: required). null at either place is refused: transformers fails on it (a None
// in the frequency formulas).
std::optional<int64_t> original_max_position(const json& j, const json& rs, const std::string& file_where,
                                             const std::string& where) {
  constexpr const char* kKey = "original_max_position_embeddings";
  for (const auto& [obj, at] : {std::pair{&j, &file_where}, std::pair{&rs, &where}}) {
    if (obj->contains(kKey) && (*obj)[kKey].is_null())
      fail(std::string(kKey) + " is null", field_where(*at, kKey),
           "set it to the context length the model was pretrained with, or remove the key");
  }
  if (find_key(j, kKey)) return get_int(j, kKey, 0, file_where);
  if (find_key(rs, kKey)) return get_int(rs, kKey, 0, where);
  return std::nullopt;
}

// YaRN parameters as _compute_yarn_parameters (modeling_rope_utils.py, transformers 5.17) reads them
// after standardize_rope_params: factor required (null: max_position_embeddings / original);
// original_max_position_embeddings from the top level of config.json, else the section, else
// max_position_embeddings; beta_fast / beta_slow default 32 / 1 (also for null or 0); truncate
// defaults to true when absent (null is false, as Python's None); attention_factor, else the mscale
// rule of ModelConfig::rope_attention_factor.
void parse_yarn(const json& j, const json& rs, ModelConfig& c, const std::string& file_where,
                const std::string& where) {
  if (!rs.contains("factor"))
    fail("rope scaling 'yarn' needs 'factor'", field_where(where, "factor"),
         "add it to config.json: the context extension, max_position_embeddings / "
         "original_max_position_embeddings (Qwen2.5 documents factor 4 over 32768)");
  c.rope_scaling = RopeScaling::kYarn;
  const std::optional<int64_t> original = original_max_position(j, rs, file_where, where);
  c.rope_original_given = original.has_value();
  c.rope_original_max_position = original.value_or(c.max_position_embeddings);
  if (c.rope_original_max_position <= 0)
    fail("yarn original_max_position_embeddings must be positive, got " +
             std::to_string(c.rope_original_max_position),
         field_where(where, "original_max_position_embeddings"),
         "set it to the context length the model was pretrained with");
  c.rope_factor = rs["factor"].is_null() ? double(c.max_position_embeddings) / double(c.rope_original_max_position)
                                    : get_double(rs, "factor", 1.0, where);
  const double beta_fast = get_double(rs, "beta_fast", 0.0, where);
  const double beta_slow = get_double(rs, "beta_slow", 0.0, where);
  c.rope_beta_fast = beta_fast != 0.0 ? beta_fast : 32.0;  // Python's `or 32`
  c.rope_beta_slow = beta_slow != 0.0 ? beta_slow : 1.0;
  // .get("truncate", True): absent is true, null is None (falsy: no truncation).
  c.rope_truncate = rs.contains("truncate") && rs["truncate"].is_null() ? false : get_bool(rs, "truncate", true, where);
  const double mscale = get_double(rs, "mscale", 0.0, where);
  const double mscale_all_dim = get_double(rs, "mscale_all_dim", 0.0, where);
  if (find_key(rs, "attention_factor"))  // null counts as absent, as `is None` does
    c.rope_attention_factor = get_double(rs, "attention_factor", 1.0, where);
  else if (mscale != 0.0 && mscale_all_dim != 0.0)
    c.rope_attention_factor = yarn_mscale(c.rope_factor, mscale) / yarn_mscale(c.rope_factor, mscale_all_dim);
  else
    c.rope_attention_factor = yarn_mscale(c.rope_factor);
  c.extend_yarn_context();
}

// Reads rope_theta and the scaling parameters (llama, mistral, qwen2).
void parse_rope(const json& j, ModelConfig& c, const std::string& where) {
  // Rotary embedding on only part of each head (GPT-NeoX's, Phi's partial_rotary_factor): refused, since
  // dak rotates all head_dim dimensions (trial of session 49: a factor of 0.5 was ignored silently).
  auto whole_heads_only = [](const json& obj, const std::string& obj_where) {
    const double f = get_double(obj, "partial_rotary_factor", 1.0, obj_where);
    if (f != 1.0)
      fail(fmt::format("partial_rotary_factor {} (rotary embedding on only part of each head) is not supported", f),
           field_where(obj_where, "partial_rotary_factor"),
           "dak rotates every dimension of a head, as Llama, Mistral and Qwen2 do; remove the key (or set it to 1) "
           "only if the model was trained that way");
  };
  whole_heads_only(j, where);
  c.rope_theta = get_double(j, "rope_theta", 10000.0, where);
  const json* params = find_key(j, "rope_parameters");
  const json* legacy = find_key(j, "rope_scaling");
  if (params) {
    if (!params->is_object())
      fail("expected an object, got " + params->dump(), field_where(where, "rope_parameters"),
           "fix the value in config.json");
    c.rope_theta = get_double(*params, "rope_theta", c.rope_theta, where + ": rope_parameters");
    whole_heads_only(*params, where + ": rope_parameters");
  }
  // Both sections: transformers reads rope_scaling (4.x knows no other; 5 takes it first:
  // convert_rope_params_to_dict's `rope_scaling or rope_parameters`), with rope_parameters' rope_theta
  // (trial of session 50: dak read rope_parameters and silently dropped a linear x4 scaling).
  const bool both = params && legacy && legacy->is_object() && !legacy->empty();
  const std::string section = params && !both ? "rope_parameters" : "rope_scaling";
  const json* rs = params && !both ? params : legacy;
  if (!rs) return;
  if (rs == legacy) {
    if (!rs->is_object())
      fail("expected an object or null, got " + rs->dump(), field_where(where, section),
           "fix the value in config.json");
    // Configs written by transformers 5 in the 4.x layout repeat rope_theta here.
    c.rope_theta = get_double(*rs, "rope_theta", c.rope_theta, where + ": " + section);
    if (both) whole_heads_only(*rs, where + ": " + section);
  }
  const std::string sub_where = where + ": " + section;
  for (const auto& [key, value] : rs->items()) {
    if (value.is_object())
      fail("per-layer-type rope parameters ('" + key + "') are not supported",
           field_where(where, section), "dak supports one set of rope parameters for all layers");
  }
  std::string type = get_string(*rs, "rope_type", "", sub_where);
  const char* type_key = "rope_type";  // the key the file has, for the refusal below
  if (type.empty()) {
    type = get_string(*rs, "type", "", sub_where);
    if (find_key(*rs, "type")) type_key = "type";
  }
  if (type.empty()) {
    // No type: a section without scaling keys (rope_theta, partial_rotary_factor: transformers 5
    // writes such) is the default rope; one with scaling keys (the session-50 trial's {"factor": 4.0})
    // was read as no scaling, silently, where transformers fails to build the rotary embedding (its
    // rope type is None).
    static const char* const kScalingKeys[] = {"factor",    "low_freq_factor", "high_freq_factor", "beta_fast",
                                               "beta_slow", "attention_factor", "mscale",           "mscale_all_dim",
                                               "short_factor", "long_factor"};
    for (const auto& [key, value] : rs->items()) {
      if (std::find(std::begin(kScalingKeys), std::end(kScalingKeys), key) == std::end(kScalingKeys)) continue;
      fail(fmt::format("{} has '{}' but no 'rope_type' (or 'type'): which scaling it means is not said", section,
                       key),
           field_where(where, section),
           "add \"rope_type\" to it in config.json (\"linear\", \"llama3\" or \"yarn\", as the model's "
           "repository gives it), or remove the section for no scaling");
    }
    return;
  }
  if (type == "default") return;
  if (type == "linear") {
    c.rope_scaling = RopeScaling::kLinear;
    c.rope_factor = get_double(*rs, "factor", 0.0, sub_where);
    if (!find_key(*rs, "factor"))
      fail("rope scaling 'linear' needs 'factor'", field_where(sub_where, "factor"),
           "add the factor to config.json");
    return;
  }
  if (type == "llama3") {
    // _compute_llama3_parameters reads three keys without a default; the original length comes
    // from standardize_rope_params (top level, else the section, else max_position_embeddings).
    for (const char* key : {"factor", "low_freq_factor", "high_freq_factor"}) {
      if (!find_key(*rs, key))
        fail(std::string("rope scaling 'llama3' needs '") + key + "'", field_where(sub_where, key),
             "add it to config.json (Llama 3.1 uses factor 8, low_freq_factor 1, "
             "high_freq_factor 4, original_max_position_embeddings 8192)");
    }
    c.rope_scaling = RopeScaling::kLlama3;
    c.rope_factor = get_double(*rs, "factor", 8.0, sub_where);
    c.rope_low_freq_factor = get_double(*rs, "low_freq_factor", 1.0, sub_where);
    c.rope_high_freq_factor = get_double(*rs, "high_freq_factor", 4.0, sub_where);
    c.rope_original_max_position =
        original_max_position(j, *rs, where, sub_where).value_or(c.max_position_embeddings);
    return;
  }
  if (type == "yarn") {
    parse_yarn(j, *rs, c, where, sub_where);
    return;
  }
  if (type == "dynamic" || type == "longrope")
    fail("rope scaling type '" + type + "' is not supported", field_where(sub_where, type_key),
         "dak implements the rope scaling types default, linear, llama3 and yarn: its '" + type +
             "' inverse frequencies change with the sequence length, which dak's CUDA-graph decode does not "
             "follow (this model cannot be run or planned by dak yet)");
  fail("unsupported rope scaling type '" + type + "'", field_where(sub_where, type_key),
       "dak implements the rope scaling types default, linear, llama3 and yarn only: use a model whose " +
           std::string(type_key) + " is one of them (this model cannot be run or planned by dak yet)");
}

// Qwen2 (and transformers-5 Mistral) may list per-layer attention kinds in "layer_types".
// dak has one window for all layers: accept all-full or all-sliding.
void parse_qwen2_window(const json& j, ModelConfig& c, int64_t window, const std::string& where) {
  const bool use = get_bool(j, "use_sliding_window", false, where);
  if (!use) {
    c.sliding_window = 0;
    return;
  }
  int64_t sliding_layers = 0;
  if (const json* lt = find_key(j, "layer_types"); lt && lt->is_array()) {
    for (const auto& e : *lt) sliding_layers += (e.is_string() && e.get<std::string>() == "sliding_attention");
  } else {
    // Qwen2Config.__post_init__: layers i >= max_window_layers slide.
    const int64_t mwl = get_int(j, "max_window_layers", 28, where);
    sliding_layers = std::max<int64_t>(0, c.num_layers - std::max<int64_t>(0, mwl));
  }
  if (sliding_layers == 0 || window <= 0) {
    c.sliding_window = 0;
  } else if (sliding_layers == c.num_layers) {
    c.sliding_window = window;
  } else {
    fail("sliding-window attention on only some layers (" + std::to_string(sliding_layers) + " of " +
             std::to_string(c.num_layers) + ") is not supported",
         field_where(where, "use_sliding_window"),
         "set use_sliding_window to false or make every layer slide (max_window_layers 0)");
  }
}

void parse_llama_like(const json& j, ModelConfig& c, const std::string& where) {
  const bool is_mistral = c.arch == Arch::kMistral;
  const bool is_qwen2 = c.arch == Arch::kQwen2;
  c.vocab_size = get_int(j, "vocab_size", is_qwen2 ? 151936 : 32000, where);
  c.hidden_size = get_int(j, "hidden_size", 4096, where);
  c.intermediate_size = get_int(j, "intermediate_size", is_mistral ? 14336 : is_qwen2 ? 22016 : 11008, where);
  c.num_layers = get_int(j, "num_hidden_layers", 32, where);
  c.num_heads = get_int(j, "num_attention_heads", 32, where);
  // An explicit null means "same as heads" in all three classes; an absent key takes the
  // class default (llama None, mistral 8, qwen2 32).
  int64_t kv_default = is_mistral ? 8 : is_qwen2 ? 32 : c.num_heads;
  if (j.contains("num_key_value_heads") && j["num_key_value_heads"].is_null()) kv_default = c.num_heads;
  c.num_kv_heads = get_int(j, "num_key_value_heads", kv_default, where);
  if (c.num_heads <= 0)
    fail("num_attention_heads must be positive", field_where(where, "num_attention_heads"),
         "fix config.json");
  // Missing or null: hidden_size / num_attention_heads (HF). An explicit 0 stays 0 and is refused by
  // validate() (the session-17 trial: head_dim 0 silently became 128).
  const bool head_dim_given = find_key(j, "head_dim") != nullptr;
  c.head_dim = get_int(j, "head_dim", 0, where);
  if (!head_dim_given) {
    if (c.hidden_size <= 0)  // validate() names it too, but hidden_size / heads comes first here
      fail("hidden_size must be positive, got " + std::to_string(c.hidden_size), field_where(where, "hidden_size"),
           "fix config.json");
    if (c.hidden_size % c.num_heads != 0)
      fail("hidden_size " + std::to_string(c.hidden_size) + " is not divisible by num_attention_heads " +
               std::to_string(c.num_heads) + " and no head_dim is given",
           field_where(where, "head_dim"), "add head_dim to config.json");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  c.max_position_embeddings = get_int(j, "max_position_embeddings",
                                      is_mistral ? 4096 * 32 : is_qwen2 ? 32768 : 2048, where);
  c.norm = NormKind::kRmsNorm;
  c.norm_eps = norm_eps_of(get_double(j, "rms_norm_eps", 1e-6, where), field_where(where, "rms_norm_eps"));
  c.activation = parse_activation(get_string(j, "hidden_act", "silu", where), where, "hidden_act");
  c.gated_mlp = true;
  parse_rope(j, c, where);
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", false, where);
  if (c.arch == Arch::kLlama) {
    const bool attention_bias = get_bool(j, "attention_bias", false, where);
    c.qkv_bias = attention_bias;
    c.o_bias = attention_bias;
    c.mlp_bias = get_bool(j, "mlp_bias", false, where);
  } else if (is_qwen2) {
    c.qkv_bias = true;  // Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
  }
  if (is_mistral) {
    c.sliding_window = get_int(j, "sliding_window", 4096, where);  // null -> 0
    if (j.contains("sliding_window") && j["sliding_window"].is_null()) c.sliding_window = 0;
  } else if (is_qwen2) {
    int64_t window = get_int(j, "sliding_window", 4096, where);
    if (j.contains("sliding_window") && j["sliding_window"].is_null()) window = 0;
    parse_qwen2_window(j, c, window, where);
  }
  c.bos_token_id = is_qwen2 ? -1 : 1;
  if (j.contains("bos_token_id")) {
    c.bos_token_id = j["bos_token_id"].is_null() ? -1 : get_int(j, "bos_token_id", -1, where);
  }
  c.eos_token_ids = get_id_list(j, "eos_token_id", is_qwen2 ? std::vector<int64_t>{} : std::vector<int64_t>{2}, where);
}

void parse_opt(const json& j, ModelConfig& c, const std::string& where) {
  c.vocab_size = get_int(j, "vocab_size", 50272, where);
  c.hidden_size = get_int(j, "hidden_size", get_int(j, "d_model", 768, where), where);
  c.num_layers = get_int(j, "num_hidden_layers", 12, where);
  c.intermediate_size = get_int(j, "ffn_dim", 3072, where);
  c.num_heads = get_int(j, "num_attention_heads", 12, where);
  if (c.hidden_size <= 0)
    fail("hidden_size must be positive, got " + std::to_string(c.hidden_size), field_where(where, "hidden_size"),
         "fix config.json");
  if (c.num_heads <= 0)
    fail("num_attention_heads must be positive", field_where(where, "num_attention_heads"), "fix config.json");
  if (c.hidden_size % c.num_heads != 0)
    fail("hidden_size " + std::to_string(c.hidden_size) + " is not divisible by num_attention_heads " +
             std::to_string(c.num_heads),
         field_where(where, "num_attention_heads"), "fix config.json");
  c.num_kv_heads = c.num_heads;
  c.head_dim = c.hidden_size / c.num_heads;
  c.max_position_embeddings = get_int(j, "max_position_embeddings", 2048, where);
  c.norm = NormKind::kLayerNorm;
  c.norm_eps = 1e-5f;
  c.activation = parse_activation(get_string(j, "activation_function", "relu", where), where,
                                  "activation_function");
  c.gated_mlp = false;
  c.rope_scaling = RopeScaling::kNone;
  const bool bias = get_bool(j, "enable_bias", true, where);
  c.qkv_bias = c.o_bias = c.mlp_bias = bias;
  c.norm_elementwise_affine = get_bool(j, "layer_norm_elementwise_affine", true, where);
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", true, where);
  c.word_embed_proj_dim = get_int(j, "word_embed_proj_dim", c.hidden_size, where);
  c.do_layer_norm_before = get_bool(j, "do_layer_norm_before", true, where);
  if (get_bool(j, "_remove_final_layer_norm", false, where))
    fail("_remove_final_layer_norm = true (OPT checkpoints fine-tuned before transformers 4.20.1) "
         "is not supported",
         field_where(where, "_remove_final_layer_norm"),
         "re-save the checkpoint with a current transformers version");
  c.position_offset = 2;
  c.bos_token_id = 2;
  if (j.contains("bos_token_id")) {
    c.bos_token_id = j["bos_token_id"].is_null() ? -1 : get_int(j, "bos_token_id", -1, where);
  }
  c.eos_token_ids = get_id_list(j, "eos_token_id", {2}, where);
}

}  // namespace

std::string arch_name(Arch a) {
  switch (a) {
    case Arch::kLlama: return "llama";
    case Arch::kMistral: return "mistral";
    case Arch::kQwen2: return "qwen2";
    case Arch::kOpt: return "opt";
  }
  return "llama";
}

std::string ModelConfig::defaulted_sizes_text() const {
  std::string keys;
  for (const std::string& k : defaulted_sizes) keys += (keys.empty() ? "'" : ", '") + k + "'";
  return keys;
}

ModelConfig ModelConfig::from_hf_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object())
    fail("config is not a JSON object", where, "point dak at a Hugging Face config.json");
  check_dak_file_kind(j, "", where);  // a hardware profile or a plan given as the model
  const std::string type = get_string(j, "model_type", "", where);
  ModelConfig c;
  if (type == "llama") {
    c.arch = Arch::kLlama;
  } else if (type == "mistral") {
    c.arch = Arch::kMistral;
  } else if (type == "qwen2") {
    c.arch = Arch::kQwen2;
  } else if (type == "opt") {
    c.arch = Arch::kOpt;
  } else if (type.empty()) {
    fail("missing model_type", field_where(where, "model_type"),
         "add \"model_type\" (llama, mistral, qwen2 or opt) to config.json");
  } else {
    fail("unsupported model_type '" + type + "'", field_where(where, "model_type"),
         "dak supports llama, mistral, qwen2 and opt");
  }
  const bool opt = c.arch == Arch::kOpt;
  // A size key set to null is not absent: transformers would pass None on and fail building the model
  // (num_key_value_heads and head_dim have a meaning for null, and are read as transformers reads them).
  const std::vector<const char*> read_sizes =
      opt ? std::vector<const char*>{"vocab_size", "hidden_size", "d_model", "ffn_dim", "num_hidden_layers",
                                     "num_attention_heads"}
          : std::vector<const char*>{"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                                     "num_attention_heads"};
  for (const char* key : read_sizes) {
    if (j.contains(key) && j[key].is_null())
      fail(std::string(key) + " is null", field_where(where, key),
           "set it to the checkpoint's value, or remove the key to take the transformers default of model_type " +
               arch_name(c.arch));
  }
  if (opt) {
    parse_opt(j, c, where);
  } else {
    parse_llama_like(j, c, where);
  }
  for (const char* key : {"vocab_size", "hidden_size", opt ? "ffn_dim" : "intermediate_size", "num_hidden_layers",
                          "num_attention_heads"}) {
    const bool present = find_key(j, key) || (opt && std::string(key) == "hidden_size" && find_key(j, "d_model"));
    if (!present) c.defaulted_sizes.push_back(key);
  }
  // Absent (not null, which means "as many as the heads"): the class default, llama's = the heads,
  // mistral's 8, qwen2's 32 (trial of session 50: a mismatch it caused did not say so).
  c.kv_heads_defaulted = !opt && !j.contains("num_key_value_heads");
  // Recorded for dak plan's notice (a quantized checkpoint's config plans bf16 weights dak would load).
  if (const auto q = j.find("quantization_config"); q != j.end() && q->is_object()) {
    const auto m = q->find("quant_method");
    c.quantization = m != q->end() && m->is_string() ? m->get<std::string>() : std::string("(no quant_method)");
  }
  c.validate(where);
  return c;
}

ModelConfig ModelConfig::from_hf_file(const std::filesystem::path& path) {
  // A model folder: its config.json (which read_json_file then checks: a config.json that is itself
  // a folder is named as such, not as "<folder>/config.json/config.json").
  std::filesystem::path file = path;
  std::error_code ec;
  if (path.filename() != "config.json" && std::filesystem::is_directory(path, ec)) file = path / "config.json";
  const json j = read_json_file(
      file, "config file",
      "check the path (a Hugging Face model folder must contain config.json); fix or re-download config.json");
  return from_hf_json(j, file.string());
}

double yarn_mscale(double factor, double mscale) {
  return factor <= 1.0 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0;
}

void ModelConfig::extend_yarn_context() {
  if (rope_scaling != RopeScaling::kYarn || !rope_original_given || !(rope_factor > 0.0) ||
      rope_original_max_position <= 0)
    return;
  const double extended = std::floor(double(rope_original_max_position) * rope_factor);
  if (extended > double(max_position_embeddings))
    max_position_embeddings = std::max(max_position_embeddings, int64_t(std::min(extended, double(kMaxContext))));
}

void ModelConfig::validate(const std::string& where, const std::string& fix) const {
  auto positive = [&](int64_t v, const char* name) {
    if (v <= 0)
      fail(std::string(name) + " must be positive, got " + std::to_string(v),
           field_where(where, name), fix);
  };
  positive(vocab_size, "vocab_size");
  positive(hidden_size, "hidden_size");
  positive(intermediate_size, arch == Arch::kOpt ? "ffn_dim" : "intermediate_size");
  positive(num_layers, "num_hidden_layers");
  positive(num_heads, "num_attention_heads");
  positive(num_kv_heads, "num_key_value_heads");
  positive(head_dim, "head_dim");
  positive(max_position_embeddings, "max_position_embeddings");
  if (num_heads % num_kv_heads != 0) {
    fail(fmt::format("num_attention_heads {} is not a multiple of num_key_value_heads {}{}", num_heads, num_kv_heads,
                     kv_heads_defaulted ? fmt::format(" (config.json has no num_key_value_heads: {} is the "
                                                      "transformers default of model_type {})",
                                                      num_kv_heads, arch_name(arch))
                                        : ""),
         kv_heads_defaulted ? where : field_where(where, "num_key_value_heads"),
         kv_heads_defaulted
             ? "add num_key_value_heads to config.json with the checkpoint's value (its k_proj rows / head_dim)"
             : fix);
  }
  if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps))
    fail(fmt::format("normalization epsilon {} must be a positive finite number", norm_eps),
         field_where(where, "rms_norm_eps"), fix);
  if (arch != Arch::kOpt) {
    if (head_dim % 2 != 0)
      fail("head_dim " + std::to_string(head_dim) + " is odd; rotary embeddings need an even head_dim",
           field_where(where, "head_dim"), fix);
    if (!(rope_theta > 0.0) || !std::isfinite(rope_theta))
      fail("rope_theta must be a positive finite number", field_where(where, "rope_theta"), fix);
    // Far outside any real model, and enough to overflow the frequencies to inf or 0 (the new-user
    // trial's factor 1e-300 gave non-finite logits blamed on the weights).
    if (rope_scaling != RopeScaling::kNone && !(rope_factor >= 1e-3 && rope_factor <= 1e6))
      fail("rope scaling factor " + fmt::format("{:g}", rope_factor) + " is outside 0.001 .. 1e6",
           field_where(where, "rope_scaling.factor"),
           fix + ": the factor is the context extension, e.g. 4 for 4x the pretrained context");
    if (rope_scaling == RopeScaling::kLlama3 &&
        (!(rope_high_freq_factor > rope_low_freq_factor) || !(rope_low_freq_factor > 0.0) ||
         rope_original_max_position <= 0))
      fail("llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor and a positive "
           "original_max_position_embeddings",
           field_where(where, "rope_scaling"), fix);
    if (!rope_freq_factors.empty() && int64_t(rope_freq_factors.size()) != head_dim / 2)
      fail("rope_freqs.weight has " + std::to_string(rope_freq_factors.size()) + " factors, but head_dim " +
               std::to_string(head_dim) + " needs " + std::to_string(head_dim / 2),
           field_where(where, "rope_freqs.weight"), fix);
    if (rope_scaling == RopeScaling::kYarn) {
      if (!(rope_theta > 1.0))
        fail("yarn rope scaling needs rope_theta > 1 (its correction range divides by log(rope_theta))",
             field_where(where, "rope_theta"), fix);
      if (!(rope_beta_fast > 0.0) || !(rope_beta_slow > 0.0) || !std::isfinite(rope_beta_fast) ||
          !std::isfinite(rope_beta_slow))
        fail(fmt::format("yarn rope scaling needs positive beta_fast and beta_slow, got {:g} and {:g}", rope_beta_fast,
                         rope_beta_slow),
             field_where(where, "rope_scaling"), fix + " (the defaults are beta_fast 32, beta_slow 1)");
      if (!(rope_attention_factor > 0.0 && rope_attention_factor <= 100.0))
        fail(fmt::format("yarn attention factor {:g} is outside (0, 100] (from attention_factor, or mscale and "
                         "mscale_all_dim)",
                         rope_attention_factor),
             field_where(where, "rope_scaling.attention_factor"),
             fix + " (YaRN's default is 0.1 ln(factor) + 1, about 1.14 for factor 4; leave the key out for it)");
      if (rope_original_max_position <= 0)
        fail("yarn rope scaling needs a positive original_max_position_embeddings",
             field_where(where, "rope_scaling"), fix);
    }
  } else {
    positive(word_embed_proj_dim, "word_embed_proj_dim");
    if (hidden_size != num_heads * head_dim)
      fail("hidden_size must equal num_attention_heads * head_dim for OPT",
           field_where(where, "hidden_size"), fix);
  }
  if (sliding_window < 0)
    fail("sliding_window must be >= 0", field_where(where, "sliding_window"), fix);
  if (position_offset < 0)
    fail("position offset must be >= 0", where, fix);
  // Upper bounds: far above any real model, low enough that sizes derived from them (tensor
  // tables, KV caches, op graphs) cannot exhaust memory before the real checks run. GGUF
  // metadata goes through the same limits.
  auto at_most = [&](int64_t v, int64_t limit, const char* name) {
    if (v > limit)
      fail(std::string(name) + " = " + std::to_string(v) + " is larger than dak supports (" +
               std::to_string(limit) + ")",
           field_where(where, name), "fix config.json: the value is implausible for a real model");
  };
  at_most(vocab_size, int64_t(1) << 24, "vocab_size");
  at_most(hidden_size, int64_t(1) << 18, "hidden_size");
  at_most(intermediate_size, int64_t(1) << 20, arch == Arch::kOpt ? "ffn_dim" : "intermediate_size");
  at_most(num_layers, 4096, "num_hidden_layers");
  at_most(num_heads, 4096, "num_attention_heads");
  at_most(head_dim, 1024, "head_dim");
  at_most(max_position_embeddings, kMaxContext, "max_position_embeddings");
  if (arch == Arch::kOpt) at_most(word_embed_proj_dim, int64_t(1) << 18, "word_embed_proj_dim");
  if (bos_token_id < -1 || bos_token_id >= vocab_size)
    fail("bos_token_id " + std::to_string(bos_token_id) + " is outside the vocabulary (size " +
             std::to_string(vocab_size) + ")",
         field_where(where, "bos_token_id"), fix);
  for (int64_t e : eos_token_ids) {
    if (e < 0 || e >= vocab_size)
      fail("eos_token_id " + std::to_string(e) + " is outside the vocabulary (size " +
               std::to_string(vocab_size) + ")",
           field_where(where, "eos_token_id"), fix);
  }
}

nlohmann::json ModelConfig::to_json() const {
  json j;
  j["model_type"] = arch_name(arch);
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_hidden_layers"] = num_layers;
  j["num_attention_heads"] = num_heads;
  j["num_key_value_heads"] = num_kv_heads;
  j["head_dim"] = head_dim;
  j["max_position_embeddings"] = max_position_embeddings;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["bos_token_id"] = bos_token_id >= 0 ? json(bos_token_id) : json(nullptr);
  j["eos_token_id"] = eos_token_ids;
  if (arch == Arch::kOpt) {
    j["ffn_dim"] = intermediate_size;
    j["activation_function"] = activation_name(activation);
    j["enable_bias"] = qkv_bias;
    j["layer_norm_elementwise_affine"] = norm_elementwise_affine;
    j["word_embed_proj_dim"] = word_embed_proj_dim;
    j["do_layer_norm_before"] = do_layer_norm_before;
    j["layer_norm_eps"] = float_as_written(norm_eps);  // informational: OPT always uses nn.LayerNorm's 1e-5
    j["position_offset"] = position_offset;
    return j;
  }
  j["intermediate_size"] = intermediate_size;
  j["hidden_act"] = activation_name(activation);
  j["rms_norm_eps"] = float_as_written(norm_eps);
  json rope;
  rope["rope_theta"] = rope_theta;
  switch (rope_scaling) {
    case RopeScaling::kNone: rope["rope_type"] = "default"; break;
    case RopeScaling::kLinear:
      rope["rope_type"] = "linear";
      rope["factor"] = rope_factor;
      break;
    case RopeScaling::kLlama3:
      rope["rope_type"] = "llama3";
      rope["factor"] = rope_factor;
      rope["low_freq_factor"] = rope_low_freq_factor;
      rope["high_freq_factor"] = rope_high_freq_factor;
      rope["original_max_position_embeddings"] = rope_original_max_position;
      break;
    case RopeScaling::kYarn:
      rope["rope_type"] = "yarn";
      rope["factor"] = rope_factor;
      rope["original_max_position_embeddings"] = rope_original_max_position;
      rope["beta_fast"] = rope_beta_fast;
      rope["beta_slow"] = rope_beta_slow;
      rope["truncate"] = rope_truncate;
      rope["attention_factor"] = rope_attention_factor;
      break;
  }
  if (!rope_freq_factors.empty()) rope["rope_freq_factors"] = rope_freq_factors;  // GGUF (informational)
  j["rope_parameters"] = rope;
  if (arch == Arch::kLlama) {
    j["attention_bias"] = qkv_bias;
    j["mlp_bias"] = mlp_bias;
  }
  if (arch == Arch::kMistral) j["sliding_window"] = sliding_window > 0 ? json(sliding_window) : json(nullptr);
  if (arch == Arch::kQwen2) {
    j["use_sliding_window"] = sliding_window > 0;
    j["sliding_window"] = sliding_window > 0 ? json(sliding_window) : json(nullptr);
    if (sliding_window > 0) j["max_window_layers"] = 0;
  }
  return j;
}

}  // namespace dak
