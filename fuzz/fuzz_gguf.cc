// libFuzzer target: GgufFile::parse on arbitrary bytes, then everything dak derives from a
// parsed GGUF (ModelConfig from metadata, HF tensor names and shapes, decoding of small tensors
// including the Q/K un-permutation). Only dak::Error may escape the parsers.
// dak-fuzz-sources: core/gguf.cc core/gguf_config.cc core/checkpoint.cc core/safetensors.cc
// dak-fuzz-sources: core/model_config.cc core/json_file.cc
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/checkpoint.h"
#include "core/error.h"
#include "core/gguf.h"
#include "core/gguf_config.h"

namespace {

/// Exposes Checkpoint::read_f32 on a tensor list built from a fuzzed GGUF.
class FuzzCheckpoint : public dak::Checkpoint {
 public:
  explicit FuzzCheckpoint(std::vector<dak::TensorInfo> tensors) { tensors_ = std::move(tensors); }
};

constexpr uint64_t kMaxDecodeBytes = 1 << 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<dak::GgufFile> g;
  try {
    g = dak::GgufFile::parse(data, size, "fuzz.gguf");
  } catch (const dak::Error&) {
    return 0;
  }
  for (const auto& [key, value] : g->metadata()) {
    try {
      (void)g->opt_int(key);
    } catch (const dak::Error&) {
    }
    try {
      (void)g->get_string_array(key);
    } catch (const dak::Error&) {
    }
  }
  std::vector<float> buf;
  for (const dak::GgufTensor& t : g->tensors()) {
    if (t.bytes == 0 || t.bytes > kMaxDecodeBytes) continue;
    int64_t n = 1;
    for (int64_t d : t.ne) n *= d;
    buf.resize(size_t(n));
    dak::dequantize(t.dtype, t.data, buf.data(), n);
  }
  try {
    const dak::ModelConfig config = dak::model_config_from_gguf(*g);
    std::vector<dak::TensorInfo> tensors = dak::hf_tensors_from_gguf(*g, config);
    FuzzCheckpoint ck(tensors);
    for (const dak::TensorInfo& t : ck.tensors()) {
      if (t.bytes > kMaxDecodeBytes) continue;
      try {
        (void)ck.read_f32(t);
      } catch (const dak::Error&) {
      }
    }
  } catch (const dak::Error&) {
  }
  return 0;
}
