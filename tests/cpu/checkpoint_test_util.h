// Helpers shared by test_gguf.cc, test_safetensors.cc and test_checkpoint.cc: a scratch
// folder, file I/O, the committed fixtures, error-message checks, and small writers that build
// (possibly corrupt) GGUF and safetensors images at run time. Nothing is written into
// tests/data.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "error_test_util.h"

namespace dak::testing {

namespace fs = std::filesystem;

inline fs::path data_dir() { return fs::path(DAK_TEST_DATA_DIR); }

/// A fresh folder under the system temp dir, removed with its contents on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("dak_ckpt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

inline std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(read_bytes(p)); }

/// Little-endian fp32 values, as the fixture scripts write them.
inline std::vector<float> read_f32_file(const fs::path& p) {
  const std::string b = read_bytes(p);
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

/// Bit-exact comparison of decoded values with an oracle; reports the first mismatches.
inline void expect_bits_equal(const float* got, const float* want, size_t n, const std::string& what) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i], &want[i], 4) != 0) {
      if (++bad <= 5) ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << n << " values differ";
}

// ------------------------------------------------------------------ GGUF image builder

/// Writes GGUF v3 images field by field (gguf.md), so tests can produce any corruption.
class GgufBuilder {
 public:
  GgufBuilder& u32(uint32_t v) { return raw(&v, 4); }
  GgufBuilder& u64(uint64_t v) { return raw(&v, 8); }
  GgufBuilder& str(const std::string& s) {
    u64(s.size());
    bytes_ += s;
    return *this;
  }
  GgufBuilder& raw(const void* p, size_t n) {
    bytes_.append(static_cast<const char*>(p), n);
    return *this;
  }
  GgufBuilder& header(uint64_t n_tensors, uint64_t n_kv) {
    bytes_ += "GGUF";
    return u32(3).u64(n_tensors).u64(n_kv);
  }
  GgufBuilder& kv_string(const std::string& k, const std::string& v) { return str(k).u32(8).str(v); }
  GgufBuilder& kv_u32(const std::string& k, uint32_t v) { return str(k).u32(4).u32(v); }
  GgufBuilder& kv_f32(const std::string& k, float v) { return str(k).u32(6).raw(&v, 4); }
  GgufBuilder& tensor_info(const std::string& name, std::vector<uint64_t> ne, uint32_t type,
                           uint64_t offset) {
    str(name).u32(uint32_t(ne.size()));
    for (uint64_t d : ne) u64(d);
    return u32(type).u64(offset);
  }
  /// Pads to `alignment` (start of the data section), then appends `n` bytes of `fill`.
  GgufBuilder& data(size_t n, char fill = 0, size_t alignment = 32) {
    bytes_.append((alignment - bytes_.size() % alignment) % alignment, '\0');
    bytes_.append(n, fill);
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// ------------------------------------------------------------------ safetensors builder

/// A safetensors image: 8-byte length, the header text as given, then `data`.
inline std::string safetensors_image(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

}  // namespace dak::testing
