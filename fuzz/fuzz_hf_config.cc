// libFuzzer target: ModelConfig::from_hf_json on arbitrary JSON documents (a Hugging Face
// config.json), then validate() and to_json() of what it accepts. Only dak::Error may escape.
// Mutations edit the JSON values (json_mutator.h).
// dak-fuzz-sources: core/model_config.cc core/json_file.cc
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "json_mutator.h"
#include "core/model_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    const dak::ModelConfig c = dak::ModelConfig::from_hf_json(j, "fuzz/config.json");
    c.validate("fuzz/config.json");
    (void)c.to_json().dump();
  } catch (const dak::Error&) {
  }
  return 0;
}
