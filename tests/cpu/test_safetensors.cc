// SafetensorsFile / SafetensorsIndex: the committed 2-shard fixture (written with json + struct +
// numpy by tools/make_safetensors_fixtures.py) and corrupt images built at run time.
#include <gtest/gtest.h>

#include "checkpoint_test_util.h"
#include "core/safetensors.h"

namespace dak {
namespace {

using namespace dak::testing;
using nlohmann::json;

fs::path sharded_dir() { return data_dir() / "safetensors" / "tiny_llama_sharded"; }
json expected() { return read_json(data_dir() / "safetensors" / "expected.json"); }

std::unique_ptr<SafetensorsFile> parse(const std::string& bytes, const std::string& name = "bad.safetensors") {
  return SafetensorsFile::parse(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
}

/// One valid F32 tensor "w" of shape [2, 3] = 24 bytes.
const char* const kValidHeader = R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";

TEST(Safetensors, ParsesFixtureShards) {
  const json e = expected();
  const std::vector<float> values = read_f32_file(data_dir() / "safetensors" / "expected.f32");
  size_t seen = 0;
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    const auto f = SafetensorsFile::open(sharded_dir() / shard);
    EXPECT_EQ(f->metadata().at("format"), "pt");
    for (size_t i = 1; i < f->tensors().size(); ++i) {
      EXPECT_LE(f->tensors()[i - 1].offset + f->tensors()[i - 1].bytes, f->tensors()[i].offset);
    }
    for (const json& t : e["tensors"]) {
      if (t["shard"] != shard) continue;
      const std::string name = t["name"];
      SCOPED_TRACE(name);
      const SafetensorsTensor* st = f->find(name);
      ASSERT_NE(st, nullptr);
      ++seen;
      EXPECT_EQ(dtype_name(st->dtype), t["dtype"].get<std::string>());
      EXPECT_EQ(st->shape, t["shape"].get<std::vector<int64_t>>());
      const size_t n = t["count"];
      EXPECT_EQ(st->bytes, n * size_t(dtype_block_bytes(st->dtype)));
      std::vector<float> got(n);
      dequantize(st->dtype, st->data, got.data(), int64_t(n));
      expect_bits_equal(got.data(), values.data() + t["offset_floats"].get<size_t>(), n, name);
    }
  }
  EXPECT_EQ(seen, e["tensors"].size());
}

TEST(Safetensors, ReadsShardIndex) {
  const SafetensorsIndex idx = SafetensorsIndex::read(sharded_dir() / "model.safetensors.index.json");
  const json e = expected();
  EXPECT_EQ(idx.weight_map.size(), e["tensors"].size());
  EXPECT_EQ(idx.shard_files(), (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                                         "model-00002-of-00002.safetensors"}));
  for (const auto& [name, shard] : idx.weight_map) {
    bool found = false;
    for (const json& t : e["tensors"]) found |= t["name"] == name && t["shard"] == shard;
    EXPECT_TRUE(found) << name << " -> " << shard;
  }
}

TEST(Safetensors, AcceptsValidImageAndScalars) {
  const auto f = parse(safetensors_image(kValidHeader, std::string(24, '\0')));
  ASSERT_EQ(f->tensors().size(), 1u);
  EXPECT_EQ(f->tensors()[0].offset, 8 + std::string(kValidHeader).size());
  const auto s = parse(safetensors_image(
      R"({"s":{"dtype":"BF16","shape":[],"data_offsets":[0,2]},"z":{"dtype":"F16","shape":[0,5],"data_offsets":[2,2]}})",
      "ab"));
  EXPECT_EQ(s->find("s")->bytes, 2u);
  EXPECT_EQ(s->find("z")->bytes, 0u);
}

TEST(Safetensors, RejectsTruncatedFile) {
  expect_error([] { parse("abc", "t.safetensors"); }, {"too short", "t.safetensors"});
  ScratchDir dir;
  const std::string full = read_bytes(sharded_dir() / "model-00002-of-00002.safetensors");
  write_bytes(dir / "cut.safetensors", full.substr(0, full.size() - 10));
  expect_error([&] { SafetensorsFile::open(dir / "cut.safetensors"); },
               {"cut.safetensors", "beyond the data section", "model.norm.weight"});
}

TEST(Safetensors, RejectsHeaderLengthBeyondFile) {
  std::string b = safetensors_image(kValidHeader, std::string(24, '\0'));
  const uint64_t huge = uint64_t(1) << 40;
  std::memcpy(b.data(), &huge, 8);
  expect_error([&] { parse(b); }, {"header length", "beyond the end of the file", "bad.safetensors"});
}

TEST(Safetensors, RejectsInvalidJson) {
  expect_error([] { parse(safetensors_image(R"({"w":{"dtype":"F32",)", "")); },
               {"safetensors header is not valid JSON", "line 1, column 21", "bad.safetensors"});
  // A tensor named twice: nlohmann alone would keep the second entry and drop the first.
  expect_error([] {
    parse(safetensors_image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                            std::string(8, '\0')));
  },
               {"\"w\" twice", "bad.safetensors"});
  expect_error([] { parse(safetensors_image("[1,2]", "")); }, {"not a JSON object"});
  expect_error([] { parse(safetensors_image(R"({"w":7})", "")); }, {"'w'", "not a JSON object"});
  expect_error([] { parse(safetensors_image(R"({"w":{"dtype":"F32","shape":[1]}})", "1234")); },
               {"'w'", "data_offsets"});
  expect_error([] { parse(safetensors_image(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", "1234")); },
               {"'w'", "dtype"});
  expect_error([] { parse(safetensors_image(R"({"__metadata__":{"format":1}})", "")); },
               {"__metadata__", "format"});
}

TEST(Safetensors, RejectsOffsetsOutOfRange) {
  expect_error([] { parse(safetensors_image(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[8,32]}})",
                                            std::string(24, '\0'))); },
               {"'w'", "beyond the data section"});
  expect_error([] { parse(safetensors_image(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})",
                                            std::string(24, '\0'))); },
               {"'w'", "end before begin"});
  expect_error([] { parse(safetensors_image(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})",
                                            std::string(24, '\0'))); },
               {"'w'", "non-negative integer"});
  expect_error([] { parse(safetensors_image(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})",
                                            std::string(24, '\0'))); },
               {"'w'", "non-negative integer"});
}

TEST(Safetensors, RejectsOverlappingTensors) {
  const std::string h =
      R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F16","shape":[4],"data_offsets":[8,16]}})";
  expect_error([&] { parse(safetensors_image(h, std::string(16, '\0'))); }, {"'a'", "'b'", "overlap"});
}

TEST(Safetensors, RejectsDtypeShapeMismatch) {
  const std::string h = R"({"w":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,24]}})";
  expect_error([&] { parse(safetensors_image(h, std::string(24, '\0'))); },
               {"'w'", "24 bytes", "need 12 bytes"});
  const std::string huge = R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,24]}})";
  expect_error([&] { parse(safetensors_image(huge, std::string(24, '\0'))); }, {"'w'"});
}

TEST(Safetensors, KeepsTensorsOfOtherDtypesApartAndRejectsUnknownOnes) {
  // The format's other dtypes are kept out of tensors() (a checkpoint refuses one only where the model
  // needs it: session 50), their bytes checked as any tensor's.
  const std::string h = R"({"position_ids":{"dtype":"I64","shape":[3],"data_offsets":[0,24]},)"
                        R"("w":{"dtype":"F32","shape":[2],"data_offsets":[24,32]}})";
  const auto f = parse(safetensors_image(h, std::string(32, '\0')), "x.safetensors");
  ASSERT_EQ(f->tensors().size(), 1u);
  EXPECT_EQ(f->tensors()[0].name, "w");
  ASSERT_EQ(f->unread().size(), 1u);
  EXPECT_EQ(f->unread()[0].name, "position_ids");
  EXPECT_EQ(f->unread()[0].dtype, "I64");
  EXPECT_EQ(f->unread()[0].shape, std::vector<int64_t>{3});
  const std::string short_i64 = R"({"position_ids":{"dtype":"I64","shape":[3],"data_offsets":[0,20]}})";
  expect_error([&] { parse(safetensors_image(short_i64, std::string(24, '\0')), "x.safetensors"); },
               {"'position_ids'", "20 bytes", "need 24 bytes"});
  const std::string overlap = R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  expect_error([&] { parse(safetensors_image(overlap, std::string(12, '\0')), "x.safetensors"); }, {"overlap"});
  // fp4 packs two elements a byte: 4 of them are 2 bytes; 3 of them are no whole bytes.
  const std::string f4 = R"({"s":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}})";
  EXPECT_EQ(parse(safetensors_image(f4, std::string(2, '\0')), "x.safetensors")->unread().size(), 1u);
  const std::string f4_odd = R"({"s":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})";
  expect_error([&] { parse(safetensors_image(f4_odd, std::string(2, '\0')), "x.safetensors"); },
               {"'s'", "12 bits (not whole bytes)"});
  const std::string unknown = R"({"q":{"dtype":"Q4","shape":[3],"data_offsets":[0,3]}})";
  expect_error([&] { parse(safetensors_image(unknown, std::string(3, '\0')), "x.safetensors"); },
               {"'q'", "Q4", "x.safetensors"});
}

TEST(Safetensors, RejectsBadIndex) {
  expect_error([] { SafetensorsIndex::from_json(json::parse(R"({"metadata":{}})"), "idx.json"); },
               {"weight_map", "idx.json"});
  expect_error([] { SafetensorsIndex::from_json(json::parse(R"({"weight_map":{"a":"../x.safetensors"}})"), "i"); },
               {"'a'", "../x.safetensors"});
  expect_error([] { SafetensorsIndex::from_json(json::parse(R"({"weight_map":{"a":3}})"), "i"); }, {"'a'"});
  ScratchDir dir;
  write_bytes(dir / "model.safetensors.index.json", "{not json");
  expect_error([&] { SafetensorsIndex::read(dir / "model.safetensors.index.json"); },
               {"not valid JSON", "model.safetensors.index.json"});
}

}  // namespace
}  // namespace dak
