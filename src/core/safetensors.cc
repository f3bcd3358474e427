#include "core/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_file.h"

namespace dak {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // safetensors' MAX_HEADER_SIZE

const char* const kFixSafetensors =
    "the file is truncated or corrupt: re-download it or re-save it with the safetensors library";

/// Element type of a safetensors dtype string dak reads (BF16, F16, F32); nullopt for the other
/// dtypes the safetensors library defines (0.6: integers, bool, fp8, fp6, fp4, f64, c64), whose
/// element bits `other_bits` gets (a tensor dak leaves unread); throws for any other string.
std::optional<DType> parse_dtype(const std::string& s, const std::string& tensor, const std::string& file,
                                 uint64_t& other_bits) {
  if (s == "BF16") return DType::kBF16;
  if (s == "F16") return DType::kF16;
  if (s == "F32") return DType::kF32;
  static const std::pair<const char*, uint64_t> kOther[] = {
      {"BOOL", 8},     {"U8", 8},      {"I8", 8},       {"F8_E4M3", 8},  {"F8_E5M2", 8}, {"F8_E8M0", 8},
      {"F6_E2M3", 6},  {"F6_E3M2", 6}, {"F4", 4},       {"I16", 16},     {"U16", 16},    {"I32", 32},
      {"U32", 32},     {"F64", 64},    {"I64", 64},     {"U64", 64},     {"C64", 64}};
  for (const auto& [name, bits] : kOther) {
    if (s == name) {
      other_bits = bits;
      return std::nullopt;
    }
  }
  fail(fmt::format("tensor '{}' has dtype {}, which dak does not support (BF16, F16 and F32 only)",
                   tensor, s),
       file, "convert the checkpoint to bf16, fp16 or fp32 (e.g. model.to(torch.bfloat16) and "
             "save_pretrained)");
}

uint64_t json_u64(const nlohmann::json& v, const std::string& what, const std::string& file) {
  if (!v.is_number_unsigned()) {  // JSON non-negative integers parse as number_unsigned
    fail(what + " must be a non-negative integer, got " + v.dump(-1, ' ', false,
         nlohmann::json::error_handler_t::replace),
         file, kFixSafetensors);
  }
  return v.get<uint64_t>();
}

}  // namespace

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::filesystem::path& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->file_ = std::make_unique<MappedFile>(path);
  f->path_ = path;
  f->parse_image(f->file_->data(), f->file_->size());
  return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::parse(const uint8_t* data, uint64_t size,
                                                        const std::filesystem::path& name) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = name;
  f->parse_image(data, size);
  return f;
}

void SafetensorsFile::parse_image(const uint8_t* data, uint64_t size) {
  const std::string file = path_.string();
  if (size < 8) {
    fail(fmt::format("safetensors file is {} bytes, too short for the 8-byte header length", size),
         file, kFixSafetensors);
  }
  uint64_t header_len;
  std::memcpy(&header_len, data, 8);
  if (header_len > size - 8) {
    fail(fmt::format("safetensors header length {} goes beyond the end of the file ({} bytes)",
                     header_len, size),
         file, kFixSafetensors);
  }
  if (header_len > kMaxHeaderBytes) {
    fail(fmt::format("safetensors header length {} exceeds the 100 MB limit", header_len), file,
         kFixSafetensors);
  }
  const char* hb = reinterpret_cast<const char*>(data + 8);
  // The JSON reader of user files: line and column of a syntax error, and a tensor named twice is an
  // error (nlohmann alone keeps the last entry and the first tensor would silently vanish).
  const nlohmann::json header =
      parse_json_text(std::string(hb, size_t(header_len)), "safetensors header", file, kFixSafetensors);
  if (!header.is_object()) {
    fail("safetensors header is not a JSON object", file, kFixSafetensors);
  }

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size - data_start;
  // Every tensor, read or not (its bytes count in the overlap check), and whether dak reads its dtype.
  std::vector<std::pair<SafetensorsTensor, bool>> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("__metadata__ is not a JSON object", file, kFixSafetensors);
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) {
          fail(fmt::format("__metadata__ value '{}' is not a string", k), file, kFixSafetensors);
        }
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    const std::string tw = "tensor '" + name + "'";
    if (!entry.is_object()) fail(tw + " entry is not a JSON object", file, kFixSafetensors);
    const auto dt = entry.find("dtype");
    const auto sh = entry.find("shape");
    const auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) {
      fail(tw + " has no string 'dtype'", file, kFixSafetensors);
    }
    if (sh == entry.end() || !sh->is_array()) {
      fail(tw + " has no 'shape' array", file, kFixSafetensors);
    }
    if (off == entry.end() || !off->is_array() || off->size() != 2) {
      fail(tw + " has no 'data_offsets' pair [begin, end]", file, kFixSafetensors);
    }
    SafetensorsTensor t;
    t.name = name;
    uint64_t other_bits = 0;
    const std::optional<DType> dtype = parse_dtype(dt->get<std::string>(), name, file, other_bits);
    t.dtype = dtype.value_or(DType::kF32);
    uint64_t n_elems = 1;
    for (const auto& d : *sh) {
      const uint64_t v = json_u64(d, "a dimension of " + tw, file);
      if (v > uint64_t(std::numeric_limits<int64_t>::max()) ||
          (v > 0 && n_elems > uint64_t(std::numeric_limits<int64_t>::max()) / v)) {
        fail(tw + " has an absurd shape " + sh->dump(), file, kFixSafetensors);
      }
      t.shape.push_back(int64_t(v));
      n_elems *= v;
    }
    const uint64_t begin = json_u64((*off)[0], "data_offsets[0] of " + tw, file);
    const uint64_t end = json_u64((*off)[1], "data_offsets[1] of " + tw, file);
    if (end < begin) {
      fail(fmt::format("{} has data_offsets [{}, {}] with end before begin", tw, begin, end), file,
           kFixSafetensors);
    }
    if (end > data_size) {
      fail(fmt::format("{} has data_offsets [{}, {}] beyond the data section ({} bytes): the file "
                       "is truncated or the header is corrupt",
                       tw, begin, end, data_size),
           file, kFixSafetensors);
    }
    // Bits per element (fp6 / fp4 pack below a byte: their bits must fill whole bytes, as the
    // safetensors library requires).
    const uint64_t bits = dtype ? 8 * uint64_t(dtype_block_bytes(t.dtype)) : other_bits;
    const bool too_many = n_elems > std::numeric_limits<uint64_t>::max() / bits;
    if (too_many || (n_elems * bits) % 8 != 0 || end - begin != n_elems * bits / 8) {
      fail(fmt::format("{} ({} {}) spans {} bytes, but its shape and dtype need {}", tw, dt->get<std::string>(),
                       sh->dump(), end - begin,
                       too_many                    ? std::string("more than 2^61 bytes")
                       : (n_elems * bits) % 8 != 0 ? fmt::format("{} bits (not whole bytes)", n_elems * bits)
                                                   : std::to_string(n_elems * bits / 8) + " bytes"),
           file, kFixSafetensors);
    }
    t.offset = data_start + begin;
    t.bytes = end - begin;
    t.data = data + t.offset;
    if (!dtype) unread_.push_back({t.name, dt->get<std::string>(), t.shape});
    spans.emplace_back(std::move(t), dtype.has_value());
  }

  std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
    return a.first.offset != b.first.offset ? a.first.offset < b.first.offset : a.first.bytes < b.first.bytes;
  });
  for (size_t i = 1; i < spans.size(); ++i) {
    const SafetensorsTensor& a = spans[i - 1].first;
    const SafetensorsTensor& b = spans[i].first;
    if (a.offset + a.bytes > b.offset) {
      fail(fmt::format("tensors '{}' and '{}' overlap (data bytes {}..{} and {}..{})", a.name,
                       b.name, a.offset - data_start, a.offset + a.bytes - data_start,
                       b.offset - data_start, b.offset + b.bytes - data_start),
           file, kFixSafetensors);
    }
  }
  // The tensors dak reads, in data order.
  for (auto& [t, read] : spans) {
    if (read) tensors_.push_back(std::move(t));
  }
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  for (const SafetensorsTensor& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// ------------------------------------------------------------------ sharded index

SafetensorsIndex SafetensorsIndex::from_json(const nlohmann::json& j, const std::string& where) {
  const char* fix = "re-download model.safetensors.index.json with the shards it lists";
  if (!j.is_object()) fail("safetensors index is not a JSON object", where, fix);
  const auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) {
    fail("safetensors index has no 'weight_map' object", where, fix);
  }
  SafetensorsIndex idx;
  for (const auto& [name, shard] : wm->items()) {
    if (!shard.is_string()) {
      fail(fmt::format("weight_map entry '{}' is not a file name string", name), where, fix);
    }
    const std::string s = shard.get<std::string>();
    if (s.empty() || s == "." || s == ".." || s.find('/') != std::string::npos ||
        s.find('\\') != std::string::npos || s.find('\0') != std::string::npos) {
      fail(fmt::format("weight_map entry '{}' names shard '{}', which is not a plain file name in "
                       "the index's folder",
                       name, s),
           where, fix);
    }
    idx.weight_map.emplace_back(name, s);
  }
  if (idx.weight_map.empty()) fail("safetensors index has an empty weight_map", where, fix);
  return idx;
}

SafetensorsIndex SafetensorsIndex::read(const std::filesystem::path& path) {
  const nlohmann::json j = read_json_file(path, "safetensors index",
                                          "check the path; re-download model.safetensors.index.json");
  return from_json(j, path.string());
}

std::vector<std::string> SafetensorsIndex::shard_files() const {
  std::vector<std::string> out;
  std::set<std::string, std::less<>> seen;
  for (const auto& [name, shard] : weight_map) {
    if (seen.insert(shard).second) out.push_back(shard);
  }
  return out;
}

}  // namespace dak
