// JSON syntax errors in user files say where: line and column (core/json_file.h), for the three
// loaders that read them (config.json, hardware profiles, plans).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/hardware_profile.h"
#include "core/json_file.h"
#include "core/model_config.h"
#include "core/plan.h"
#include "error_test_util.h"

namespace {

using dak::testing::expect_error;

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path p = std::filesystem::temp_directory_path() / ("dak_test_json_file_" + name);
  std::ofstream(p) << text;
  return p;
}

TEST(JsonFile, ParsesValidText) {
  const nlohmann::json j = dak::parse_json_text("{\"a\": [1, 2]}", "test file", "t.json", "fix it");
  EXPECT_EQ(j["a"][1], 2);
}

TEST(JsonFile, SyntaxErrorsGiveLineAndColumn) {
  // The stray comma ends line 2; the parser stops at the closing brace on line 3, column 1.
  expect_error([] { dak::parse_json_text("{\n  \"a\": 1,\n}\n", "test file", "t.json", "fix it"); },
               {"test file is not valid JSON", "line 3, column 1", "t.json", "fix it"});
  // A missing value after the colon: line 1, column 7 (the closing brace).
  expect_error([] { dak::parse_json_text("{\"a\": }", "test file", "t.json", "fix it"); },
               {"line 1, column 7"});
  // Truncated input: the end of the text.
  expect_error([] { dak::parse_json_text("{\"a\": [1,\n 2", "test file", "t.json", "fix it"); },
               {"not valid JSON", "line 2"});
  expect_error([] { dak::parse_json_text("", "test file", "t.json", "fix it"); }, {"line 1, column 1"});
  // Windows (CR LF) and old Mac (CR) line endings count one line each.
  expect_error([] { dak::parse_json_text("{\r\n  \"a\": 1,\r\n}\r\n", "test file", "t.json", "fix it"); },
               {"line 3, column 1"});
  expect_error([] { dak::parse_json_text("{\r  \"a\": 1,\r}\r", "test file", "t.json", "fix it"); },
               {"line 3, column 1"});
}

TEST(JsonFile, RefusesDeepNesting) {
  // 100000 levels: printing such a value in an error message would overflow the stack.
  const std::string deep = "{\"a\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error([&] { dak::parse_json_text(deep, "config file", "c.json", "fix it"); },
               {"config file nests arrays or objects deeper than 64 levels", "c.json"});
  const std::string ok = std::string(60, '[') + std::string(60, ']');
  EXPECT_NO_THROW(dak::parse_json_text(ok, "config file", "c.json", "fix it"));
}

TEST(JsonFile, BinaryOverflowAndColumnsInCharacters) {
  // A NUL byte: binary data, refused with its position (the parser would stop there silently).
  expect_error([] { dak::parse_json_text(std::string("{\"a\": 1}\0garbage", 16), "test file", "t.json", "fix it"); },
               {"test file is not JSON text: a NUL byte at line 1, column 9"});
  // A number beyond a double: its own message, not an internal error.
  expect_error([] { dak::parse_json_text("{\"a\": 1e400}", "test file", "t.json", "fix it"); },
               {"test file has a number out of range", "1e400", "t.json", "fix it"});
  // A key twice in one object (a half-ignored edit); the same key in different objects is fine.
  expect_error([] { dak::parse_json_text("{\"a\": {\"b\": 1, \"b\": 2}}", "test file", "t.json", "fix it"); },
               {"test file has the key \"b\" twice in one object", "t.json"});
  EXPECT_NO_THROW(dak::parse_json_text("{\"a\": {\"b\": 1}, \"c\": {\"b\": 2}, \"d\": [{\"b\": 1}, {\"b\": 2}]}", "f", "t", "x"));
  // Columns count characters: a byte-order mark is not one, a two-byte UTF-8 character is one.
  expect_error([] { dak::parse_json_text("\xEF\xBB\xBF{\"a\": 1, x}", "f", "t.json", "fix"); }, {"line 1, column 10"});
  expect_error([] { dak::parse_json_text("{\"n\": \"h\xC3\xA9llo\", x}", "f", "t.json", "fix"); }, {"line 1, column 16"});
  // A long token: the parser's message is cut, the position is still exact.
  const std::string long_line = "{\"a\": \"" + std::string(100000, 'x');
  try {
    dak::parse_json_text(long_line, "f", "t.json", "fix");
    ADD_FAILURE() << "no error";
  } catch (const dak::Error& e) {
    EXPECT_LT(std::string(e.what()).size(), 600u) << std::string(e.what()).substr(0, 300);
    EXPECT_NE(std::string(e.what()).find("line 1, column 100008"), std::string::npos) << e.what();
  }
}

TEST(JsonFile, ReadsOnlyRegularFilesOfSaneSize) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "dak_test_json_file_dir";
  std::filesystem::create_directories(dir);
  expect_error([&] { dak::read_json_file(dir, "plan file", "fix"); }, {"is a directory, not a JSON file"});
  expect_error([&] { dak::HardwareProfile::load(dir); }, {"hardware profile", "is a directory"});
  expect_error([&] { dak::Plan::load(dir.string()); }, {"plan file", "is a directory"});
  expect_error([&] { dak::read_json_file(dir / "missing.json", "plan file", "fix"); }, {"no such file"});
  if (std::filesystem::exists("/dev/zero")) {
    expect_error([] { dak::read_json_file("/dev/zero", "config file", "fix"); }, {"is not a regular file"});
  }
  std::filesystem::remove_all(dir);
}

TEST(JsonFile, LoadersReportTheLocation) {
  const auto profile = write_temp("profile.json", "{\n  \"name\": \"x\",\n  \"hbm\": {\n    \"bandwidth\" 4.6\n  }\n}\n");
  expect_error([&] { dak::HardwareProfile::load(profile); },
               {"hardware profile is not valid JSON", "line 4", profile.string(), "h200-default.json"});
  const auto config = write_temp("config.json", "{\"hidden_size\": 64,, \"model_type\": \"llama\"}");
  expect_error([&] { dak::ModelConfig::from_hf_file(config); },
               {"config file is not valid JSON", "line 1, column 20", config.string()});
  const auto plan = write_temp("plan.json", "[\n");
  expect_error([&] { dak::Plan::load(plan.string()); }, {"plan file is not valid JSON", "line 2", plan.string()});
  std::filesystem::remove(profile);
  std::filesystem::remove(config);
  std::filesystem::remove(plan);
}

}  // namespace
