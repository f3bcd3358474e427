// Safetensors: Hugging Face's tensor file format (huggingface/safetensors, docs "Format"),
// memory-mapped, plus the sharded index model.safetensors.index.json.
//
// File layout: u64 little-endian N, then N bytes of UTF-8 JSON
//   {"NAME": {"dtype": "BF16", "shape": [d0, d1, ...], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}          (__metadata__ optional, string values)
// then the data section; begin/end are byte offsets relative to the start of the data section,
// shapes are row-major (outermost first). dak reads BF16, F16 and F32 tensors; every other
// dtype is rejected with an error naming the tensor.
// Validation (each failure throws dak::Error naming the file and the tensor): header length
// within the file (and at most 100 MB, the reference implementation's limit), valid JSON
// object, begin <= end <= data section size, end - begin == prod(shape) * dtype size, no two
// tensors overlapping.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace dak {

struct SafetensorsTensor {
  std::string name;               // as in the header, e.g. "model.layers.0.mlp.up_proj.weight"
  DType dtype = DType::kF32;      // kBF16, kF16 or kF32
  std::vector<int64_t> shape;     // row-major, outermost first; [] is a scalar (1 element)
  uint64_t offset = 0;            // absolute byte offset of the data in the file
  uint64_t bytes = 0;             // prod(shape) * element size
  const uint8_t* data = nullptr;  // into the mapping (unaligned: read with memcpy)
};

/// A tensor whose dtype dak does not compute with (integers, bool, fp8, f64): kept out of
/// SafetensorsFile::tensors(), its entry and bytes checked like the others'. A checkpoint refuses it
/// only where the model needs it (GPTQ's int32 qweight beside a missing weight, an f64 weight); one the
/// model does not use (a position_ids buffer) is ignored, as transformers ignores unexpected keys.
struct SafetensorsUnreadTensor {
  std::string name;            // as in the header
  std::string dtype;           // the header's dtype string, e.g. "I64"
  std::vector<int64_t> shape;  // as in the header
};

class SafetensorsFile {
 public:
  /// Maps and parses `path`. Throws dak::Error on any malformed header or tensor entry.
  static std::unique_ptr<SafetensorsFile> open(const std::filesystem::path& path);

  /// Parses a safetensors image already in memory (fuzzing, tests). `data` must outlive the
  /// result; `name` stands for the file in error messages. Same checks as open().
  static std::unique_ptr<SafetensorsFile> parse(const uint8_t* data, uint64_t size,
                                                const std::filesystem::path& name);

  const std::filesystem::path& path() const { return path_; }
  /// Tensors in data-offset order.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  /// The tensors of dtypes dak does not read (SafetensorsUnreadTensor), in header order.
  const std::vector<SafetensorsUnreadTensor>& unread() const { return unread_; }
  /// The optional "__metadata__" string map (e.g. {"format": "pt"}).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// nullptr when absent.
  const SafetensorsTensor* find(std::string_view name) const;

 private:
  SafetensorsFile() = default;
  void parse_image(const uint8_t* data, uint64_t size);

  std::unique_ptr<MappedFile> file_;  // null for parse()
  std::filesystem::path path_;
  std::vector<SafetensorsTensor> tensors_;
  std::vector<SafetensorsUnreadTensor> unread_;
  std::map<std::string, std::string> metadata_;
};

/// model.safetensors.index.json (written by transformers' save_pretrained for sharded
/// checkpoints): {"metadata": {...}, "weight_map": {"TENSOR": "model-00001-of-00002.safetensors"}}.
struct SafetensorsIndex {
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor name -> shard file name

  /// Parses the index document; `where` names the file for errors. Shard names must be plain
  /// file names in the index's folder (no '/' or ".."). Throws dak::Error.
  static SafetensorsIndex from_json(const nlohmann::json& j, const std::string& where);

  /// Reads and parses an index file. Throws dak::Error.
  static SafetensorsIndex read(const std::filesystem::path& path);

  /// Distinct shard file names in order of first appearance.
  std::vector<std::string> shard_files() const;
};

}  // namespace dak
