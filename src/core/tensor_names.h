// Canonical Hugging Face tensor names per model family: the one table that the CPU reference
// (cpu_model.cc) and the GPU weight upload (gpu/gpu_weights.cc) share, so the families differ
// by data, not by copies of the loader.
//
// Names omit ".weight" / ".bias"; "" marks a tensor the family does not have. Per-layer names
// are relative to `layer` + "<index>.".
#pragma once

#include "core/model_config.h"

namespace dak {

struct TensorNames {
  const char* embed;
  const char* positions;     // OPT learned positions
  const char* project_in;    // OPT word_embed_proj_dim != hidden_size
  const char* project_out;
  const char* final_norm;
  const char* lm_head;
  const char* layer;
  const char* attn_norm;
  const char* q;
  const char* k;
  const char* v;
  const char* o;
  const char* mlp_norm;
  const char* gate;          // "" for non-gated MLPs
  const char* up;            // OPT fc1
  const char* down;          // OPT fc2
};

// modeling_llama.py / modeling_mistral.py / modeling_qwen2.py (LlamaForCausalLM layout).
inline constexpr TensorNames kLlamaNames{
    "model.embed_tokens", "", "", "", "model.norm", "lm_head", "model.layers.",
    "input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
    "self_attn.o_proj", "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj",
    "mlp.down_proj"};

// modeling_opt.py (OPTForCausalLM: model.decoder.*); fc1/fc2 take the up/down slots.
inline constexpr TensorNames kOptNames{
    "model.decoder.embed_tokens", "model.decoder.embed_positions", "model.decoder.project_in",
    "model.decoder.project_out", "model.decoder.final_layer_norm", "lm_head",
    "model.decoder.layers.", "self_attn_layer_norm", "self_attn.q_proj", "self_attn.k_proj",
    "self_attn.v_proj", "self_attn.out_proj", "final_layer_norm", "", "fc1", "fc2"};

/// The name table of an architecture.
inline const TensorNames& tensor_names(Arch a) { return a == Arch::kOpt ? kOptNames : kLlamaNames; }

}  // namespace dak
