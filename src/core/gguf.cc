// GGUF parsing (spec: ggml-org/ggml docs/gguf.md). Every read goes through Cursor, which
// checks the remaining bytes first, so a corrupt file ends in dak::Error, never in a read
// past the mapping.
#include "core/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace dak {

namespace {

// GGUF metadata value types (gguf.md "gguf_metadata_value_type").
enum : uint32_t {
  kTypeU8 = 0, kTypeI8 = 1, kTypeU16 = 2, kTypeI16 = 3, kTypeU32 = 4, kTypeI32 = 5,
  kTypeF32 = 6, kTypeBool = 7, kTypeString = 8, kTypeArray = 9, kTypeU64 = 10, kTypeI64 = 11,
  kTypeF64 = 12,
};

constexpr uint32_t kMaxDims = 4;              // GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;    // GGUF_DEFAULT_ALIGNMENT
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;   // empty key, type, one-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim, type, offset

const char* const kFixGguf =
    "the file is truncated or corrupt: re-download it or re-run llama.cpp's "
    "convert_hf_to_gguf.py";

/// Name of a ggml type id for messages (ggml.h enum ggml_type).
std::string ggml_type_name(uint32_t t) {
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",   "Q4_1",  "Q4_2 (removed)", "Q4_3 (removed)", "Q5_0",
      "Q5_1",    "Q8_0",   "Q8_1",   "Q2_K",  "Q3_K",    "Q4_K",   "Q5_K",    "Q6_K",
      "Q8_K",    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",   "IQ2_S",
      "IQ4_XS",  "I8",     "I16",    "I32",   "I64",     "F64",    "IQ1_M",   "BF16",
      "Q4_0_4_4 (removed)", "Q4_0_4_8 (removed)", "Q4_0_8_8 (removed)", "TQ1_0", "TQ2_0",
      "IQ4_NL_4_4 (removed)", "IQ4_NL_4_8 (removed)", "IQ4_NL_8_8 (removed)", "MXFP4"};
  if (t < std::size(kNames)) return kNames[t];
  return fmt::format("unknown type {}", t);
}

std::optional<DType> dtype_of_ggml(uint32_t t) {
  switch (t) {
    case 0: return DType::kF32;
    case 1: return DType::kF16;
    case 2: return DType::kQ4_0;
    case 3: return DType::kQ4_1;
    case 6: return DType::kQ5_0;
    case 7: return DType::kQ5_1;
    case 8: return DType::kQ8_0;
    case 10: return DType::kQ2_K;
    case 11: return DType::kQ3_K;
    case 12: return DType::kQ4_K;
    case 13: return DType::kQ5_K;
    case 14: return DType::kQ6_K;
    case 20: return DType::kIQ4_NL;
    case 23: return DType::kIQ4_XS;
    case 30: return DType::kBF16;
    default: return std::nullopt;
  }
}

/// Bounds-checked little-endian reader over the file image.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& file)
      : data_(data), size_(size), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  /// Throws unless n more bytes exist; `what` names the field being read.
  void need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      fail(fmt::format("GGUF file ends inside {} (needs {} bytes at offset {}, file has {})",
                       what, n, pos_, size_),
           file_, kFixGguf);
    }
  }

  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const std::string& what) {
    const uint64_t n = read<uint64_t>("the length of " + what);
    if (n > remaining()) {
      fail(fmt::format("{} has length {} at offset {}, beyond the end of the file ({} bytes)",
                       what, n, pos_ - 8, size_),
           file_, kFixGguf);
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), size_t(n));
    pos_ += n;
    return s;
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& file_;
};

uint64_t scalar_size(uint32_t type) {
  switch (type) {
    case kTypeU8: case kTypeI8: case kTypeBool: return 1;
    case kTypeU16: case kTypeI16: return 2;
    case kTypeU32: case kTypeI32: case kTypeF32: return 4;
    case kTypeU64: case kTypeI64: case kTypeF64: return 8;
    default: return 0;
  }
}

bool is_signed_int(uint32_t t) { return t == kTypeI8 || t == kTypeI16 || t == kTypeI32 || t == kTypeI64; }
bool is_unsigned_int(uint32_t t) { return t == kTypeU8 || t == kTypeU16 || t == kTypeU32 || t == kTypeU64; }
bool is_float(uint32_t t) { return t == kTypeF32 || t == kTypeF64; }

/// Reads one fixed-size scalar of `type` as int64 / uint64 / double.
int64_t read_signed(Cursor& c, uint32_t type, const std::string& what) {
  switch (type) {
    case kTypeI8: return c.read<int8_t>(what);
    case kTypeI16: return c.read<int16_t>(what);
    case kTypeI32: return c.read<int32_t>(what);
    default: return c.read<int64_t>(what);
  }
}
uint64_t read_unsigned(Cursor& c, uint32_t type, const std::string& what) {
  switch (type) {
    case kTypeU8: return c.read<uint8_t>(what);
    case kTypeU16: return c.read<uint16_t>(what);
    case kTypeU32: return c.read<uint32_t>(what);
    default: return c.read<uint64_t>(what);
  }
}
double read_float(Cursor& c, uint32_t type, const std::string& what) {
  if (type == kTypeF32) return c.read<float>(what);
  return c.read<double>(what);
}

GgufValue read_value(Cursor& c, uint32_t type, const std::string& key, const std::string& file) {
  const std::string what = "the value of '" + key + "'";
  if (is_unsigned_int(type)) return read_unsigned(c, type, what);
  if (is_signed_int(type)) return read_signed(c, type, what);
  if (is_float(type)) return read_float(c, type, what);
  if (type == kTypeBool) return c.read<uint8_t>(what) != 0;
  if (type == kTypeString) return c.read_string(what);
  if (type != kTypeArray) {
    fail(fmt::format("metadata key '{}' has unknown value type {}", key, type), file, kFixGguf);
  }
  const uint32_t elem = c.read<uint32_t>("the element type of '" + key + "'");
  const uint64_t n = c.read<uint64_t>("the element count of '" + key + "'");
  const uint64_t min_elem = elem == kTypeString ? 8 : scalar_size(elem);
  if (min_elem == 0) {
    fail(fmt::format("metadata key '{}' is an array of type {}, which dak does not support "
                     "(nested or unknown)", key, elem),
         file, "convert the model with a current llama.cpp");
  }
  if (n > c.remaining() / min_elem) {
    fail(fmt::format("metadata array '{}' claims {} elements, more than the file can hold", key, n),
         file, kFixGguf);
  }
  const std::string ewhat = "an element of '" + key + "'";
  if (elem == kTypeString) {
    std::vector<std::string> v;
    v.reserve(size_t(n));
    for (uint64_t i = 0; i < n; ++i) v.push_back(c.read_string(ewhat));
    return v;
  }
  if (is_float(elem)) {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = read_float(c, elem, ewhat);
    return v;
  }
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) {
    if (is_signed_int(elem)) {
      x = read_signed(c, elem, ewhat);
    } else if (elem == kTypeBool) {
      x = c.read<uint8_t>(ewhat) != 0;
    } else {
      const uint64_t u = read_unsigned(c, elem, ewhat);
      if (u > uint64_t(std::numeric_limits<int64_t>::max())) {
        fail(fmt::format("metadata array '{}' holds {}, which does not fit int64", key, u), file,
             kFixGguf);
      }
      x = int64_t(u);
    }
  }
  return v;
}

const char* value_kind(const GgufValue& v) {
  switch (v.index()) {
    case 0: return "an unsigned integer";
    case 1: return "a signed integer";
    case 2: return "a float";
    case 3: return "a bool";
    case 4: return "a string";
    case 5: return "an integer array";
    case 6: return "a float array";
    case 7: return "a string array";
  }
  return "?";
}

}  // namespace

std::unique_ptr<GgufFile> GgufFile::open(const std::filesystem::path& path) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->file_ = std::make_unique<MappedFile>(path);
  g->path_ = path;
  g->parse_image(g->file_->data(), g->file_->size());
  return g;
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t* data, uint64_t size,
                                          const std::filesystem::path& name) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->path_ = name;
  g->parse_image(data, size);
  return g;
}

void GgufFile::parse_image(const uint8_t* data, uint64_t size) {
  const std::string file = path_.string();
  Cursor c(data, size, file);

  c.need(4, "the magic number");
  if (std::memcmp(data, "GGUF", 4) != 0) {
    fail("not a GGUF file (the first 4 bytes are not \"GGUF\")", file,
         "pass a .gguf file, a .safetensors file or a Hugging Face model folder");
  }
  c.read<uint32_t>("the magic number");
  version_ = c.read<uint32_t>("the version");
  if (version_ != 2 && version_ != 3) {
    // A big-endian file (llama.cpp's convert --bigendian, for s390x) reads as a byte-swapped version.
    const uint32_t swapped = __builtin_bswap32(version_);
    if (swapped >= 1 && swapped <= 3) {
      fail(fmt::format("a big-endian GGUF file (version {} with its bytes swapped); dak reads little-endian GGUF "
                       "files",
                       swapped),
           file, "convert the model again without --bigendian (convert_hf_to_gguf.py writes little-endian by default)");
    }
    fail(fmt::format("unsupported GGUF version {} (dak reads versions 2 and 3)", version_), file,
         "convert the model with a current llama.cpp (convert_hf_to_gguf.py writes version 3)");
  }
  const uint64_t n_tensors = c.read<uint64_t>("the tensor count");
  const uint64_t n_kv = c.read<uint64_t>("the metadata count");
  if (n_tensors > c.remaining() / kMinTensorInfoBytes) {
    fail(fmt::format("header claims {} tensors, more than a {}-byte file can describe", n_tensors,
                     size),
         file, kFixGguf);
  }
  if (n_kv > c.remaining() / kMinKvBytes) {
    fail(fmt::format("header claims {} metadata entries, more than a {}-byte file can hold", n_kv,
                     size),
         file, kFixGguf);
  }

  // ---------------------------------------------------------------- metadata
  std::set<std::string, std::less<>> keys;
  kv_.reserve(size_t(n_kv));
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.read_string(fmt::format("the key of metadata entry {}", i));
    const uint32_t type = c.read<uint32_t>("the value type of '" + key + "'");
    GgufValue v = read_value(c, type, key, file);
    if (!keys.insert(key).second) {
      fail(fmt::format("metadata key '{}' appears twice", key), file, kFixGguf);
    }
    kv_.emplace_back(std::move(key), std::move(v));
    kv_float32_.push_back(type == kTypeF32);
  }

  uint64_t alignment = kDefaultAlignment;
  if (const GgufValue* a = find("general.alignment")) {
    const uint64_t* u = std::get_if<uint64_t>(a);
    const int64_t* s = std::get_if<int64_t>(a);
    const uint64_t val = u ? *u : (s && *s > 0 ? uint64_t(*s) : 0);
    if (val == 0 || (val & (val - 1)) != 0 || val > (uint64_t(1) << 30)) {
      fail("general.alignment must be a power-of-two integer (at most 2^30)", file, kFixGguf);
    }
    alignment = val;
  }

  // ---------------------------------------------------------------- tensor infos
  std::set<std::string, std::less<>> names;
  tensors_.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t;
    t.name = c.read_string(fmt::format("the name of tensor {}", i));
    // A metadata key where a tensor name belongs: the header counts fewer metadata entries than the
    // file holds (trial of session 49: kv_count 0 was refused for "tensor 'general.architecture' has
    // 8 dimensions").
    if (t.name.starts_with("general.") || t.name.starts_with("tokenizer.")) {
      fail(fmt::format("tensor {}'s name '{}' is a metadata key: the header's metadata count ({}) is smaller than "
                       "the metadata the file holds",
                       i, t.name, n_kv),
           file, kFixGguf);
    }
    const std::string tw = "tensor '" + t.name + "'";
    if (!names.insert(t.name).second) fail(tw + " appears twice", file, kFixGguf);
    const uint32_t n_dims = c.read<uint32_t>("the dimension count of " + tw);
    if (n_dims < 1 || n_dims > kMaxDims) {
      fail(fmt::format("{} has {} dimensions; GGUF allows 1 to {}", tw, n_dims, kMaxDims), file,
           kFixGguf);
    }
    int64_t n_elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t ne = c.read<uint64_t>("the shape of " + tw);
      if (ne > uint64_t(std::numeric_limits<int64_t>::max())) {
        fail(fmt::format("{} has an absurd shape (dimension {} is {})", tw, d, ne), file, kFixGguf);
      }
      if (ne > 0 && uint64_t(n_elems) > uint64_t(std::numeric_limits<int64_t>::max()) / ne) {
        // Not this dimension alone (the trial of session 27 read "dimension 1 is 576" for a first
        // dimension of 2^62): the product of all of them so far.
        fail(fmt::format("{} has an absurd shape (dimensions [{}, {}] hold over 2^63 elements)", tw, fmt::join(t.ne, ", "),
                         ne),
             file, kFixGguf);
      }
      t.ne.push_back(int64_t(ne));
      n_elems *= int64_t(ne);
    }
    t.ggml_type = c.read<uint32_t>("the type of " + tw);
    const std::optional<DType> dt = dtype_of_ggml(t.ggml_type);
    if (!dt) {
      const std::string name = ggml_type_name(t.ggml_type);
      const std::string type = name.starts_with("unknown") ? name  // "unknown type N": the id once
                                                           : fmt::format("{} ({})", name, t.ggml_type);
      fail(fmt::format("{} has ggml type {}, which dak does not support", tw, type), file,
           t.name == "rope_freqs.weight"
               ? "rope_freqs.weight holds F32 factors as convert_hf_to_gguf.py writes them: re-convert the model"
               : "use a GGUF whose tensors are F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, IQ4_XS or a "
                 "k-quant (Q2_K to Q6_K, as in Q4_K_M files); e.g. re-quantize with llama-quantize to Q4_K_M or "
                 "Q8_0");
    }
    t.dtype = *dt;
    const int64_t block = dtype_block_elems(t.dtype);
    if (t.ne[0] % block != 0) {
      fail(fmt::format("{} of type {} has rows of {} elements, not a multiple of the block size {}",
                       tw, ggml_type_name(t.ggml_type), t.ne[0], block),
           file,
           block > 32 ? "re-quantize the model: rows that 256 does not divide need a 32-element block type "
                        "(Q8_0, Q5_0, Q4_0 or IQ4_NL), as llama-quantize chooses for such tensors"
                      : kFixGguf);
    }
    const uint64_t bytes = uint64_t(n_elems / block);
    if (bytes > std::numeric_limits<uint64_t>::max() / uint64_t(dtype_block_bytes(t.dtype))) {
      fail(tw + " is too large", file, kFixGguf);
    }
    t.bytes = bytes * uint64_t(dtype_block_bytes(t.dtype));
    t.offset = c.read<uint64_t>("the data offset of " + tw);
    if (t.offset % alignment != 0) {
      fail(fmt::format("{} has data offset {}, not a multiple of the alignment {}", tw, t.offset,
                       alignment),
           file, kFixGguf);
    }
    tensors_.push_back(std::move(t));
  }

  // ---------------------------------------------------------------- tensor data
  const uint64_t info_end = c.pos();
  const uint64_t data_start = info_end + (alignment - info_end % alignment) % alignment;
  for (GgufTensor& t : tensors_) {
    if (t.offset > size || data_start > size - t.offset || t.bytes > size - data_start - t.offset) {
      fail(fmt::format("tensor '{}' ({} bytes at data offset {}) ends past the end of the file "
                       "({} bytes, data section starts at {})",
                       t.name, t.bytes, t.offset, size, data_start),
           file, kFixGguf);
    }
    t.offset += data_start;
    t.data = data + t.offset;
  }
  std::vector<const GgufTensor*> order;
  order.reserve(tensors_.size());
  for (const GgufTensor& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensor& a = *order[i - 1];
    const GgufTensor& b = *order[i];
    if (a.offset + a.bytes > b.offset) {
      fail(fmt::format("tensors '{}' (bytes {}..{}) and '{}' (from byte {}) overlap", a.name,
                       a.offset, a.offset + a.bytes, b.name, b.offset),
           file, kFixGguf);
    }
  }
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& [k, v] : kv_) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool GgufFile::is_float32(std::string_view key) const {
  for (size_t i = 0; i < kv_.size(); ++i) {
    if (kv_[i].first == key) return kv_float32_[i];
  }
  return false;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  for (const GgufTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {

[[noreturn]] void wrong_type(const GgufFile& g, std::string_view key, const GgufValue& v,
                             const char* wanted) {
  fail(fmt::format("GGUF metadata '{}' is {}, expected {}", key, value_kind(v), wanted),
       g.path().string(), "check that the file was written by a current llama.cpp converter");
}

const GgufValue& need_key(const GgufFile& g, std::string_view key) {
  const GgufValue* v = g.find(key);
  if (!v) {
    fail(fmt::format("GGUF metadata key '{}' is missing", key), g.path().string(),
         "check that the file was written by a current llama.cpp converter");
  }
  return *v;
}

}  // namespace

std::optional<std::string> GgufFile::opt_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  wrong_type(*this, key, *v, "a string");
}

std::optional<int64_t> GgufFile::opt_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* s = std::get_if<int64_t>(v)) return *s;
  if (const auto* u = std::get_if<uint64_t>(v)) {
    if (*u > uint64_t(std::numeric_limits<int64_t>::max())) {
      fail(fmt::format("GGUF metadata '{}' = {} does not fit int64", key, *u), path().string(),
           kFixGguf);
    }
    return int64_t(*u);
  }
  wrong_type(*this, key, *v, "an integer");
}

std::optional<double> GgufFile::opt_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* s = std::get_if<int64_t>(v)) return double(*s);
  if (const auto* u = std::get_if<uint64_t>(v)) return double(*u);
  wrong_type(*this, key, *v, "a number");
}

std::optional<bool> GgufFile::opt_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  wrong_type(*this, key, *v, "a bool");
}

std::string GgufFile::get_string(std::string_view key) const {
  need_key(*this, key);
  return *opt_string(key);
}

int64_t GgufFile::get_int(std::string_view key) const {
  need_key(*this, key);
  return *opt_int(key);
}

double GgufFile::get_float(std::string_view key) const {
  need_key(*this, key);
  return *opt_float(key);
}

bool GgufFile::get_bool(std::string_view key) const {
  need_key(*this, key);
  return *opt_bool(key);
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue& v = need_key(*this, key);
  if (const auto* a = std::get_if<std::vector<std::string>>(&v)) return *a;
  // An empty array is stored with its element type, which may have been numeric.
  if (const auto* a = std::get_if<std::vector<int64_t>>(&v); a && a->empty()) return {};
  if (const auto* a = std::get_if<std::vector<double>>(&v); a && a->empty()) return {};
  wrong_type(*this, key, v, "a string array");
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue& v = need_key(*this, key);
  if (const auto* a = std::get_if<std::vector<int64_t>>(&v)) return *a;
  if (const auto* a = std::get_if<std::vector<std::string>>(&v); a && a->empty()) return {};
  if (const auto* a = std::get_if<std::vector<double>>(&v); a && a->empty()) return {};
  wrong_type(*this, key, v, "an integer array");
}

std::vector<double> GgufFile::get_float_array(std::string_view key) const {
  const GgufValue& v = need_key(*this, key);
  if (const auto* a = std::get_if<std::vector<double>>(&v)) return *a;
  if (const auto* a = std::get_if<std::vector<int64_t>>(&v)) return {a->begin(), a->end()};
  if (const auto* a = std::get_if<std::vector<std::string>>(&v); a && a->empty()) return {};
  wrong_type(*this, key, v, "a float array");
}

}  // namespace dak
