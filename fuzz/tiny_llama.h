// The model the plan and profile fuzzers plan for: the tiny Llama of tests/data (2 layers, hidden 16,
// GQA 2:1, tied embeddings), read once from the source tree.
#pragma once

#include "core/model_config.h"

namespace dak_fuzz {

inline const dak::ModelConfig& tiny_llama() {
  static const dak::ModelConfig c = [] {
    dak::ModelConfig m =
        dak::ModelConfig::from_hf_file(DAK_SOURCE_DIR "/tests/data/safetensors/tiny_llama_single/config.json");
    m.validate("tiny_llama_single/config.json");
    return m;
  }();
  return c;
}

}  // namespace dak_fuzz
