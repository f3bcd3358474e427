// GGUF -> Hugging Face conventions: ModelConfig from GGUF metadata, and the GGUF tensor set
// renamed and reshaped to HF names (the inverse of llama.cpp's convert_hf_to_gguf.py and its
// tensor name table gguf-py/gguf/tensor_mapping.py).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/checkpoint.h"
#include "core/model_config.h"

namespace dak {

class GgufFile;

/// ModelConfig from the metadata of a llama / mistral / qwen2 GGUF ("general.architecture";
/// keys "<arch>.block_count", ".embedding_length", ".feed_forward_length",
/// ".attention.head_count", ".attention.head_count_kv", ".attention.key_length" (head_dim,
/// default hidden / heads), ".rope.freq_base", ".rope.scaling.type|factor|original_context_length"
/// (types none, linear, yarn; yarn's ".rope.scaling.yarn_beta_fast|slow"), the tensor
/// rope_freqs.weight (Llama 3.1 per-frequency factors, ModelConfig::rope_freq_factors),
/// ".attention.layer_norm_rms_epsilon", ".context_length", ".vocab_size" (else the length of
/// tokenizer.ggml.tokens, else token_embd's rows), tokenizer.ggml.bos/eos/eot/eom_token_id).
/// tie_word_embeddings = no "output.weight" tensor; qkv_bias / o_bias / mlp_bias = layer 0 has
/// the bias tensor. Throws dak::Error naming the file and key for an unsupported architecture,
/// a missing or absurd value, partial rotary (rope.dimension_count != head_dim), a rope scaling
/// type other than none / linear / yarn, yarn keys dak does not implement (yarn_log_multiplier,
/// attn_factor, yarn_ext_factor, yarn_attn_factor), or a rope_freqs.weight that is not F32 [D/2]
/// of positive factors.
ModelConfig model_config_from_gguf(const GgufFile& g);

/// HF name of a GGUF tensor name ("blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight",
/// "token_embd.weight" -> "model.embed_tokens.weight", ...); "" when the name is not one of the
/// llama-family tensors.
std::string hf_name_from_gguf(std::string_view gguf_name);

/// The GGUF metadata key behind a ModelConfig field as validate() names it ("rope_theta" ->
/// "<arch>.rope.freq_base", "bos_token_id" -> "tokenizer.ggml.bos_token_id"); "" for a field with
/// none.
std::string gguf_key_of_field(std::string_view field, const std::string& arch);

/// The inverse of hf_name_from_gguf ("model.layers.3.self_attn.q_proj.weight" -> "blk.3.attn_q.weight");
/// "" for a name with no GGUF counterpart.
std::string gguf_name_from_hf(std::string_view hf_name);

/// Every tensor of `g` as a TensorInfo: HF name (unknown names kept as they are), ggml dims
/// reversed into HF row-major shape, and gguf_rope_heads set on q_proj (num_heads) and k_proj
/// (num_kv_heads) weights and biases of architectures whose converter permutes them (llama,
/// mistral; not qwen2). Throws dak::Error when two tensors map to the same name.
std::vector<TensorInfo> hf_tensors_from_gguf(const GgufFile& g, const ModelConfig& config);

}  // namespace dak
