// libFuzzer target: SafetensorsFile::parse on arbitrary bytes (then decoding of small tensors),
// and the same bytes as a model.safetensors.index.json document. Only dak::Error may escape.
// dak-fuzz-sources: core/safetensors.cc core/json_file.cc
#include <cstddef>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto f = dak::SafetensorsFile::parse(data, size, "fuzz.safetensors");
    std::vector<float> buf;
    for (const dak::SafetensorsTensor& t : f->tensors()) {
      if (t.bytes == 0 || t.bytes > (1 << 16)) continue;
      const int64_t n = int64_t(t.bytes / uint64_t(dak::dtype_block_bytes(t.dtype)));
      buf.resize(size_t(n));
      dak::dequantize(t.dtype, t.data, buf.data(), n);
    }
  } catch (const dak::Error&) {
  }
  const nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) {
    try {
      const dak::SafetensorsIndex idx = dak::SafetensorsIndex::from_json(j, "fuzz.index.json");
      (void)idx.shard_files();
    } catch (const dak::Error&) {
    }
  }
  return 0;
}
