// GgufFile: a parsed GGUF v3 file (ggml's GGUF spec: gguf.md in ggml-org/ggml), memory-mapped.
//
// Layout: magic "GGUF", u32 version (3), u64 tensor_count, u64 kv_count, kv pairs
// (string key, u32 type, value), tensor infos (name, u32 n_dims, u64 ne[n_dims] innermost
// first, u32 ggml_type, u64 offset relative to the data section), padding to
// general.alignment (default 32), tensor data. Every read is bounds-checked: a truncated
// or corrupt file throws dak::Error naming the file, the field or tensor, and the offset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"

namespace dak {

/// One metadata value. Arrays of strings/numbers are stored decoded; nested arrays are
/// rejected as unsupported (no GGUF we read has them).
using GgufValue = std::variant<uint64_t, int64_t, double, bool, std::string,
                               std::vector<int64_t>, std::vector<double>, std::vector<std::string>>;

struct GgufTensor {
  std::string name;              // as in the file, e.g. "blk.0.attn_q.weight"
  std::vector<int64_t> ne;       // ggml order: ne[0] is the innermost (contiguous) dimension
  uint32_t ggml_type = 0;        // raw ggml type id
  DType dtype = DType::kF32;     // F32/F16/BF16, Q8_0/Q4_0/Q4_1/Q5_0/Q5_1, Q2_K..Q6_K, IQ4_NL/IQ4_XS (others rejected)
  uint64_t offset = 0;           // absolute offset in the file
  uint64_t bytes = 0;            // storage bytes
  const uint8_t* data = nullptr; // into the mapping
};

class GgufFile {
 public:
  /// Maps and parses `path`. Throws dak::Error on any malformed header, metadata, tensor
  /// info (offset/size beyond the file, overlapping tensors, unsupported ggml type).
  static std::unique_ptr<GgufFile> open(const std::filesystem::path& path);

  /// Parses a GGUF image already in memory (fuzzing, tests). `data` must outlive the result;
  /// `name` stands for the file in error messages. Same checks and errors as open().
  static std::unique_ptr<GgufFile> parse(const uint8_t* data, uint64_t size,
                                         const std::filesystem::path& name);

  uint32_t version() const { return version_; }
  const std::filesystem::path& path() const { return path_; }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }

  const GgufValue* find(std::string_view key) const;
  /// True when `key` holds a scalar stored as float32 in the file (its GgufValue is the double it
  /// widens to: 1e-5f reads 9.99999974737875e-06); false for float64, other types and missing keys.
  bool is_float32(std::string_view key) const;
  const GgufTensor* find_tensor(std::string_view name) const;

  // Typed getters: throw dak::Error naming the key when it is missing or has another type.
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;      // any integer type
  double get_float(std::string_view key) const;     // float or integer
  bool get_bool(std::string_view key) const;
  std::vector<std::string> get_string_array(std::string_view key) const;
  std::vector<int64_t> get_int_array(std::string_view key) const;
  std::vector<double> get_float_array(std::string_view key) const;

  // Optional variants: nullopt when missing; throw when present with a wrong type.
  std::optional<std::string> opt_string(std::string_view key) const;
  std::optional<int64_t> opt_int(std::string_view key) const;
  std::optional<double> opt_float(std::string_view key) const;
  std::optional<bool> opt_bool(std::string_view key) const;

 private:
  GgufFile() = default;
  void parse_image(const uint8_t* data, uint64_t size);

  std::unique_ptr<MappedFile> file_;  // null for parse()
  std::filesystem::path path_;
  uint32_t version_ = 0;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<bool> kv_float32_;  // kv_[i] is a float32 scalar in the file
  std::vector<GgufTensor> tensors_;
};

}  // namespace dak
