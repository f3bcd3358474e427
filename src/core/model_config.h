// ModelConfig: the hyper-parameters of a decoder-only transformer, parsed from a Hugging Face
// config.json or from GGUF metadata, in one normalized form shared by every layer of dak
// (CPU reference, op graph / planner, GPU engine).
//
// Families and their HF modeling files (transformers/models/<family>/modeling_<family>.py):
//   kLlama   (llama 1/2/3): RMSNorm, SiLU-gated MLP, RoPE (default / linear / llama3 / yarn scaling),
//            GQA/MQA, optional attention_bias / mlp_bias, explicit head_dim, tied or untied.
//   kMistral: as llama, plus sliding-window attention (implemented as a mask).
//   kQwen2:   as llama, with bias on q/k/v only; sliding window only when use_sliding_window.
//   kOpt:     LayerNorm, ReLU MLP (fc1/fc2), learned positions with offset 2, biases everywhere,
//            optional project_in/project_out (word_embed_proj_dim != hidden_size),
//            do_layer_norm_before = false (post-LN, OPT-350m).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dak {

enum class Arch : uint8_t { kLlama, kMistral, kQwen2, kOpt };
enum class NormKind : uint8_t { kRmsNorm, kLayerNorm };
enum class Activation : uint8_t { kSilu, kRelu, kGelu, kGeluTanh };
/// RoPE scaling types of transformers' modeling_rope_utils.py ROPE_INIT_FUNCTIONS that dak runs:
/// default, linear, llama3 and yarn (Peng et al. 2023, "YaRN", arXiv:2309.00071). "dynamic" and
/// "longrope" are refused when a config is parsed.
enum class RopeScaling : uint8_t { kNone, kLinear, kLlama3, kYarn };

/// Lower-case HF model_type of an architecture ("llama", "mistral", "qwen2", "opt").
std::string arch_name(Arch a);

/// YaRN's magnitude scaling for a context extension `factor` (transformers' get_mscale,
/// modeling_rope_utils.py; arXiv:2309.00071 eq. 22): 0.1 * mscale * ln(factor) + 1, and 1 for
/// factor <= 1. yarn_mscale(factor) is the default cos / sin multiplier (rope_attention_factor).
double yarn_mscale(double factor, double mscale = 1.0);

/// The longest context dak accepts (max_position_embeddings, config.json or GGUF): 2^24 tokens.
inline constexpr int64_t kMaxContext = int64_t(1) << 24;

struct ModelConfig {
  Arch arch = Arch::kLlama;

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;         // d_model
  int64_t intermediate_size = 0;   // MLP inner width (OPT: ffn_dim)
  int64_t num_layers = 0;
  int64_t num_heads = 0;           // H
  int64_t num_kv_heads = 0;        // Hkv (== H for MHA, 1 for MQA)
  int64_t head_dim = 0;            // D (explicit head_dim, else hidden_size / num_heads)
  int64_t max_position_embeddings = 0;  // model context length (yarn: see extend_yarn_context)

  NormKind norm = NormKind::kRmsNorm;
  float norm_eps = 1e-6f;
  Activation activation = Activation::kSilu;
  bool gated_mlp = true;           // down(act(gate(x)) * up(x)); false: fc2(act(fc1(x)))

  // Rotary embedding (rotate-half convention of HF; GGUF's interleaved Q/K rows are
  // permuted back on load). Unused for OPT.
  double rope_theta = 10000.0;
  RopeScaling rope_scaling = RopeScaling::kNone;
  double rope_factor = 1.0;                 // linear, llama3 and yarn
  double rope_low_freq_factor = 1.0;        // llama3
  double rope_high_freq_factor = 4.0;       // llama3
  int64_t rope_original_max_position = 8192;  // llama3 and yarn original_max_position_embeddings
  bool rope_original_given = false;         // yarn: the file named it (else max_position_embeddings)
  double rope_beta_fast = 32.0;             // yarn: rotations where the ramp to extrapolation ends
  double rope_beta_slow = 1.0;              // yarn: rotations where interpolation ends
  bool rope_truncate = true;                // yarn: floor / ceil the correction range
  /// yarn: the multiplier of cos and sin (HF attention_scaling): the config's attention_factor,
  /// else (0.1 mscale ln(factor) + 1) / (0.1 mscale_all_dim ln(factor) + 1) when both mscales are
  /// given, else 0.1 ln(factor) + 1 (1 for factor <= 1). 1 for every other type.
  double rope_attention_factor = 1.0;
  /// GGUF only: llama.cpp's per-frequency factors (tensor rope_freqs.weight, [D/2] F32), which
  /// divide the inverse frequencies (ggml's freq_factors). convert_hf_to_gguf.py writes them for
  /// Llama 3.1 / 3.2 rope scaling instead of a scaling type. Empty otherwise.
  std::vector<float> rope_freq_factors;

  bool qkv_bias = false;           // bias on q/k/v projections (qwen2; llama attention_bias; opt)
  bool o_bias = false;             // bias on o_proj / out_proj (llama attention_bias; opt)
  bool mlp_bias = false;           // bias on MLP projections (llama mlp_bias; opt)
  bool tie_word_embeddings = false;
  int64_t sliding_window = 0;      // 0 = full causal attention; else keys within the last W positions

  // OPT only.
  int64_t word_embed_proj_dim = 0;  // != hidden_size: project_in / project_out exist
  bool do_layer_norm_before = true; // false: post-LN
  bool norm_elementwise_affine = true;  // false: LayerNorms have no weight/bias (OPT layer_norm_elementwise_affine)
  int64_t position_offset = 0;      // OPT learned positions are indexed with position + 2

  int64_t bos_token_id = -1;
  std::vector<int64_t> eos_token_ids;  // generation stops at any of these

  /// The size keys (vocab_size, hidden_size, intermediate_size / ffn_dim, num_hidden_layers,
  /// num_attention_heads) the config.json did not have, in that order: they took the transformers
  /// config class's defaults (Llama-2-7B's sizes for llama), as in transformers. Real configs
  /// have them all; the CLI says so when one is missing. Empty for GGUF metadata.
  std::vector<std::string> defaulted_sizes;
  /// The config.json of a llama-like class had no num_key_value_heads (null is a value: as many as
  /// the heads): num_kv_heads is the class default (llama's = the heads, which configs written before
  /// GQA mean; mistral's 8; qwen2's 32). Not a defaulted size (no notice): named only where the kv
  /// head count does not fit (validate, a k_proj / v_proj shape mismatch). False for GGUF metadata.
  bool kv_heads_defaulted = false;
  /// config.json's quantization_config.quant_method ("gptq", "awq", "fp8", ...; "(no quant_method)"
  /// when the section names none); "" without the section. Informational: dak reads bf16 / fp16 / fp32
  /// safetensors, and a checkpoint whose weights are quantized is refused on loading (checkpoint.cc).
  std::string quantization;
  /// defaulted_sizes as messages quote them: "'hidden_size', 'vocab_size'" (empty when none).
  std::string defaulted_sizes_text() const;

  /// Parses a Hugging Face config.json document. `where` names the file for error messages.
  /// Throws dak::Error for an unsupported model_type, a missing or inconsistent field
  /// (e.g. hidden_size not divisible by num_attention_heads without head_dim), or an
  /// unsupported rope_scaling type.
  static ModelConfig from_hf_json(const nlohmann::json& j, const std::string& where);

  /// Reads and parses `<dir>/config.json` (or the file itself). Throws dak::Error.
  static ModelConfig from_hf_file(const std::filesystem::path& path);

  /// Checks internal consistency (positive sizes, H divisible by Hkv, ...). Throws dak::Error
  /// naming `where` and the field, with `fix` as the way out (the caller knows the source: a
  /// config.json, or a GGUF's metadata).
  void validate(const std::string& where, const std::string& fix = "fix config.json") const;

  /// yarn with an explicit original_max_position_embeddings (config.json) or
  /// original_context_length (GGUF) only: raises max_position_embeddings to original x factor when
  /// that is larger, the context vLLM derives for yarn, capped at dak's limit of 2^24 tokens.
  /// Qwen2.5's model cards enable yarn by adding rope_scaling {factor 4, original 32768} and leave
  /// max_position_embeddings at 32768; the context is then 131072 tokens. Called by both parsers.
  void extend_yarn_context();

  /// Normalized JSON (HF-like field names), for `dak inspect --output json` and plans.
  nlohmann::json to_json() const;

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  int64_t embed_dim() const { return word_embed_proj_dim > 0 ? word_embed_proj_dim : hidden_size; }
};

}  // namespace dak
