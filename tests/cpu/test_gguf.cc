// GgufFile: parsing of the committed fixture (written by the PyPI gguf package, see
// tools/make_gguf_fixtures.py) and rejection of corrupt images built at run time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "checkpoint_test_util.h"
#include "core/dtype.h"
#include "core/gguf.h"

namespace dak {
namespace {

using namespace dak::testing;
using nlohmann::json;

fs::path tiny_gguf() { return data_dir() / "gguf" / "tiny_llama.gguf"; }
json tiny_expected() { return read_json(data_dir() / "gguf" / "tiny_llama_expected.json"); }

/// Parses an in-memory image; the name stands for the file in messages.
std::unique_ptr<GgufFile> parse(const std::string& bytes, const std::string& name = "bad.gguf") {
  return GgufFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
}

TEST(Gguf, ReadsHeaderOfFixture) {
  const auto g = GgufFile::open(tiny_gguf());
  const json e = tiny_expected();
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->tensors().size(), e["tensors"].size());
  EXPECT_EQ(g->get_string("general.architecture"), "llama");
  EXPECT_EQ(g->get_int("general.alignment"), e["alignment"].get<int64_t>());
  EXPECT_EQ(g->get_int("llama.block_count"), e["config"]["num_layers"].get<int64_t>());
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens").size(), e["config"]["vocab_size"].get<size_t>());
  EXPECT_EQ(g->get_string_array("tokenizer.ggml.tokens")[5], "tok5");
}

TEST(Gguf, DecodesEveryMetadataValueType) {
  const auto g = GgufFile::open(tiny_gguf());
  for (const json& m : tiny_expected()["metadata"]) {
    const std::string key = m["key"], type = m["type"];
    SCOPED_TRACE(key);
    const GgufValue* v = g->find(key);
    ASSERT_NE(v, nullptr);
    const json& want = m["value"];
    if (type == "uint8" || type == "uint16" || type == "uint32" || type == "uint64") {
      ASSERT_TRUE(std::holds_alternative<uint64_t>(*v));
      EXPECT_EQ(std::get<uint64_t>(*v), want.get<uint64_t>());
    } else if (type == "int8" || type == "int16" || type == "int32" || type == "int64") {
      ASSERT_TRUE(std::holds_alternative<int64_t>(*v));
      EXPECT_EQ(std::get<int64_t>(*v), want.get<int64_t>());
    } else if (type == "float32" || type == "float64") {
      ASSERT_TRUE(std::holds_alternative<double>(*v));
      EXPECT_EQ(std::get<double>(*v), want.get<double>());
    } else if (type == "bool") {
      EXPECT_EQ(g->get_bool(key), want.get<bool>());
    } else if (type == "string") {
      EXPECT_EQ(g->get_string(key), want.get<std::string>());
    } else {
      ASSERT_EQ(type, "array");
      const std::string et = m["element_type"];
      if (et == "string") {
        EXPECT_EQ(g->get_string_array(key), want.get<std::vector<std::string>>());
      } else if (et == "float32" || et == "float64") {
        EXPECT_EQ(g->get_float_array(key), want.get<std::vector<double>>());
      } else {
        EXPECT_EQ(g->get_int_array(key), want.get<std::vector<int64_t>>());
      }
    }
  }
}

TEST(Gguf, TypedGettersNameTheKeyOnMismatch) {
  const auto g = GgufFile::open(tiny_gguf());
  expect_error([&] { g->get_int("general.architecture"); },
               {"general.architecture", "a string", "tiny_llama.gguf"});
  expect_error([&] { g->get_string("llama.no_such_key"); }, {"llama.no_such_key", "missing"});
  expect_error([&] { g->opt_bool("dak.test.u8"); }, {"dak.test.u8"});
  expect_error([&] { g->get_int("dak.test.u64"); }, {"dak.test.u64", "int64"});
  EXPECT_FALSE(g->opt_int("llama.no_such_key").has_value());
  EXPECT_EQ(g->opt_float("llama.block_count").value(), 2.0);  // integers widen to float
}

TEST(Gguf, TensorInfosMatchFixture) {
  const auto g = GgufFile::open(tiny_gguf());
  const uint64_t file_size = fs::file_size(tiny_gguf());
  const std::string raw = read_bytes(tiny_gguf());
  for (const json& t : tiny_expected()["tensors"]) {
    const std::string name = t["gguf_name"];
    SCOPED_TRACE(name);
    const GgufTensor* gt = g->find_tensor(name);
    ASSERT_NE(gt, nullptr);
    std::vector<int64_t> shape = t["shape"];
    std::reverse(shape.begin(), shape.end());
    EXPECT_EQ(gt->ne, shape);  // ggml order is HF order reversed
    EXPECT_EQ(dtype_name(gt->dtype), t["dtype"].get<std::string>());
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    EXPECT_EQ(gt->bytes, uint64_t(dtype_bytes_for(gt->dtype, n)));
    EXPECT_EQ(gt->offset % 64, 0u);  // general.alignment = 64
    EXPECT_LE(gt->offset + gt->bytes, file_size);
    EXPECT_EQ(gt->data, g->tensors().front().data - g->tensors().front().offset + gt->offset);
  }
  EXPECT_EQ(g->find_tensor("blk.7.attn_q.weight"), nullptr);
}

TEST(Gguf, ParseFromMemoryEqualsOpen) {
  const std::string bytes = read_bytes(tiny_gguf());
  const auto a = GgufFile::open(tiny_gguf());
  const auto b = parse(bytes, "memory");
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (size_t i = 0; i < a->tensors().size(); ++i) {
    EXPECT_EQ(a->tensors()[i].name, b->tensors()[i].name);
    EXPECT_EQ(a->tensors()[i].offset, b->tensors()[i].offset);
    EXPECT_EQ(0, std::memcmp(a->tensors()[i].data, b->tensors()[i].data, a->tensors()[i].bytes));
  }
  EXPECT_EQ(b->path().string(), "memory");
}

TEST(Gguf, RejectsEveryTruncation) {
  const std::string bytes = read_bytes(tiny_gguf());
  // Cut inside the magic, the header, the metadata, the tensor infos and the tensor data.
  for (size_t cut : {size_t(0), size_t(3), size_t(10), size_t(30), size_t(200), size_t(1500),
                     size_t(3000), bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE(cut);
    expect_error([&] { parse(bytes.substr(0, cut), "cut.gguf"); }, {"cut.gguf"});
  }
}

TEST(Gguf, RejectsTruncatedFileOnDisk) {
  ScratchDir dir;
  const std::string bytes = read_bytes(tiny_gguf());
  write_bytes(dir / "trunc.gguf", bytes.substr(0, bytes.size() - 100));
  expect_error([&] { GgufFile::open(dir / "trunc.gguf"); },
               {"trunc.gguf", "ends past the end of the file"});
}

TEST(Gguf, RejectsBadMagicAndVersion) {
  expect_error([] { parse("GGML\x03\0\0\0", "m.gguf"); }, {"not a GGUF file", "m.gguf"});
  std::string v1 = GgufBuilder().header(0, 0).bytes();
  v1[4] = 1;
  expect_error([&] { parse(v1); }, {"version 1"});
  // Version 2 has the same layout as 3 for little-endian files.
  std::string v2 = GgufBuilder().header(0, 1).kv_u32("a.b", 7).bytes();
  v2[4] = 2;
  EXPECT_EQ(parse(v2)->get_int("a.b"), 7);
}

TEST(Gguf, RejectsAbsurdCounts) {
  expect_error([] { parse(GgufBuilder().header(uint64_t(1) << 60, 0).bytes()); },
               {"tensors", "bad.gguf"});
  expect_error([] { parse(GgufBuilder().header(0, std::numeric_limits<uint64_t>::max()).bytes()); },
               {"metadata entries"});
  // An array claiming more elements than the file holds.
  const std::string arr =
      GgufBuilder().header(0, 1).str("big.array").u32(9).u32(4).u64(uint64_t(1) << 40).bytes();
  expect_error([&] { parse(arr); }, {"big.array", "elements"});
  // A metadata count below the entries the file holds: the first key is read as a tensor's name
  // (trial of session 49: kv_count 0 was refused for "tensor 'general.architecture' has 8 dimensions").
  const std::string short_count = GgufBuilder()
                                      .header(1, 0)
                                      .kv_string("general.architecture", "llama")
                                      .str("token_embd.weight")
                                      .u32(2)
                                      .u64(4)
                                      .u64(4)
                                      .u32(0)
                                      .u64(0)
                                      .bytes();
  expect_error([&] { parse(short_count); },
               {"tensor 0's name 'general.architecture' is a metadata key: the header's metadata count (0) is "
                "smaller than the metadata the file holds"});
}

TEST(Gguf, RejectsStringLongerThanFile) {
  const std::string key = GgufBuilder().header(0, 1).u64(uint64_t(1) << 40).bytes() + std::string(16, 'k');
  expect_error([&] { parse(key); }, {"key of metadata entry 0", "beyond the end"});
  const std::string val = GgufBuilder().header(0, 1).str("general.name").u32(8).u64(999).bytes();
  expect_error([&] { parse(val); }, {"general.name", "beyond the end"});
  const std::string tname = GgufBuilder().header(1, 0).u64(uint64_t(1) << 50).bytes() + std::string(40, 'x');
  expect_error([&] { parse(tname); }, {"name of tensor 0", "beyond the end"});
}

TEST(Gguf, RejectsBadMetadataTypes) {
  expect_error([] { parse(GgufBuilder().header(0, 1).str("k.x").u32(13).u32(0).bytes()); },
               {"k.x", "unknown value type 13"});
  // Array of arrays.
  expect_error([] { parse(GgufBuilder().header(0, 1).str("k.nested").u32(9).u32(9).u64(1).u64(0).bytes()); },
               {"k.nested", "not support"});
  expect_error([] { parse(GgufBuilder().header(0, 2).kv_u32("k.dup", 1).kv_u32("k.dup", 2).bytes()); },
               {"k.dup", "twice"});
  expect_error([] { parse(GgufBuilder().header(0, 1).kv_u32("general.alignment", 48).bytes()); },
               {"general.alignment", "power-of-two"});
  expect_error([] { parse(GgufBuilder().header(0, 1).kv_string("general.alignment", "x").bytes()); },
               {"general.alignment"});
}

TEST(Gguf, RejectsTensorDataBeyondFile) {
  const std::string b = GgufBuilder().header(1, 0).tensor_info("w.weight", {32, 4}, 0, 0).data(100).bytes();
  expect_error([&] { parse(b); }, {"'w.weight'", "ends past the end of the file", "512 bytes"});
  const std::string far =
      GgufBuilder().header(1, 0).tensor_info("w.weight", {8}, 0, uint64_t(1) << 62).data(32).bytes();
  expect_error([&] { parse(far); }, {"'w.weight'", "past the end"});
}

TEST(Gguf, RejectsOverlappingTensors) {
  const std::string b = GgufBuilder()
                            .header(2, 0)
                            .tensor_info("a.weight", {16}, 0, 0)   // bytes 0..64
                            .tensor_info("b.weight", {8}, 0, 32)   // bytes 32..64
                            .data(128)
                            .bytes();
  expect_error([&] { parse(b); }, {"'a.weight'", "'b.weight'", "overlap"});
  const std::string ok = GgufBuilder()
                             .header(2, 0)
                             .tensor_info("a.weight", {16}, 0, 0)
                             .tensor_info("b.weight", {8}, 0, 64)
                             .data(128)
                             .bytes();
  EXPECT_EQ(parse(ok)->tensors().size(), 2u);
}

TEST(Gguf, RejectsRowsNotMultipleOfBlock) {
  const std::string b = GgufBuilder().header(1, 0).tensor_info("q.weight", {33, 2}, 8, 0).data(200).bytes();
  expect_error([&] { parse(b); }, {"'q.weight'", "Q8_0", "not a multiple of the block size 32"});
}

TEST(Gguf, RejectsTooManyDimsAndAbsurdShapes) {
  const std::string five = GgufBuilder().header(1, 0).tensor_info("t5", {1, 1, 1, 1, 1}, 0, 0).data(64).bytes();
  expect_error([&] { parse(five); }, {"'t5'", "5 dimensions"});
  const std::string zero = GgufBuilder().header(1, 0).tensor_info("t0", {}, 0, 0).data(64).bytes();
  expect_error([&] { parse(zero); }, {"'t0'", "0 dimensions"});
  const std::string huge = GgufBuilder()
                               .header(1, 0)
                               .tensor_info("th", {uint64_t(1) << 40, uint64_t(1) << 40}, 0, 0)
                               .data(64)
                               .bytes();
  expect_error([&] { parse(huge); }, {"'th'", "absurd shape", "[1099511627776, 1099511627776] hold over 2^63"});
  // A first dimension of 2^62 beside a sane 576: the product is named, not the sane one alone.
  const std::string first = GgufBuilder()
                                .header(1, 0)
                                .tensor_info("tf", {uint64_t(1) << 62, 576}, 0, 0)
                                .data(64)
                                .bytes();
  expect_error([&] { parse(first); }, {"'tf'", "[4611686018427387904, 576] hold over 2^63"});
  const std::string single = GgufBuilder().header(1, 0).tensor_info("ts", {uint64_t(1) << 63}, 0, 0).data(64).bytes();
  expect_error([&] { parse(single); }, {"'ts'", "dimension 0 is 9223372036854775808"});
}

TEST(Gguf, RejectsUnsupportedTensorType) {
  const std::string b = GgufBuilder().header(1, 0).tensor_info("blk.0.ffn_up.weight", {256}, 16, 0).data(256).bytes();
  expect_error([&] { parse(b, "k.gguf"); }, {"'blk.0.ffn_up.weight'", "IQ2_XXS", "k.gguf", "Q4_K_M"});
  const std::string unknown = GgufBuilder().header(1, 0).tensor_info("x", {32}, 1000, 0).data(256).bytes();
  expect_error([&] { parse(unknown); }, {"'x' has ggml type unknown type 1000, which"});  // the id once (trial 28)
  const std::string freqs = GgufBuilder().header(1, 0).tensor_info("rope_freqs.weight", {4}, 26, 0).data(256).bytes();
  expect_error([&] { parse(freqs); }, {"'rope_freqs.weight' has ggml type I32 (26)", "F32 factors", "re-convert"});
}

// The further block types (Q5_0, Q5_1, Q2_K ... Q6_K, IQ4_NL, IQ4_XS) against gguf-py's gguf.quants.dequantize on
// random blocks (tools/make_gguf_fixtures.py, quant_blocks.gguf): every value bit for bit.
TEST(Gguf, DequantizesEveryFurtherBlockTypeAsGgufPy) {
  const auto g = GgufFile::open(data_dir() / "gguf" / "quant_blocks.gguf");
  const std::vector<float> want = read_f32_file(data_dir() / "gguf" / "quant_blocks_expected.f32");
  const std::vector<std::string> names = {"q5_0", "q5_1", "q2_k", "q3_k", "q4_k",
                                          "q5_k", "q6_k", "iq4_nl", "iq4_xs"};
  ASSERT_EQ(g->tensors().size(), names.size());
  size_t at = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const GgufTensor& t = g->tensors()[i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, names[i]);
    EXPECT_EQ(dtype_name(t.dtype), names[i]);
    const int64_t n = t.ne[0] * t.ne[1];
    ASSERT_EQ(int64_t(t.bytes), dtype_bytes_for(t.dtype, n));
    ASSERT_LE(at + size_t(n), want.size());
    std::vector<float> got(size_t(n), std::numeric_limits<float>::quiet_NaN());  // poisoned
    dequantize(t.dtype, t.data, got.data(), n);
    int64_t differ = 0, first = -1;
    for (int64_t e = 0; e < n; ++e) {
      uint32_t a, b;
      std::memcpy(&a, &got[size_t(e)], 4);
      std::memcpy(&b, &want[at + size_t(e)], 4);
      if (a != b && first < 0) first = e;
      differ += a != b;
    }
    EXPECT_EQ(differ, 0) << "first at element " << first << ": " << (first >= 0 ? got[size_t(first)] : 0.f)
                         << " vs gguf-py " << (first >= 0 ? want[at + size_t(first)] : 0.f);
    at += size_t(n);
  }
  EXPECT_EQ(at, want.size());
  // A k-quant row must hold whole 256-element blocks.
  const std::string short_row = GgufBuilder().header(1, 0).tensor_info("r", {128}, 12, 0).data(256).bytes();
  expect_error([&] { parse(short_row); }, {"'r'", "Q4_K", "128", "256", "32-element block type"});
}

TEST(Gguf, RejectsMisalignedOffsetAndDuplicateTensor) {
  const std::string mis = GgufBuilder().header(1, 0).tensor_info("m", {4}, 0, 4).data(64).bytes();
  expect_error([&] { parse(mis); }, {"'m'", "alignment"});
  const std::string dup = GgufBuilder()
                              .header(2, 0)
                              .tensor_info("d", {4}, 0, 0)
                              .tensor_info("d", {4}, 0, 32)
                              .data(64)
                              .bytes();
  expect_error([&] { parse(dup); }, {"'d'", "twice"});
}

TEST(Gguf, OpenNamesMissingFile) {
  expect_error([] { GgufFile::open("/nonexistent/dir/x.gguf"); }, {"/nonexistent/dir/x.gguf"});
}

}  // namespace
}  // namespace dak
