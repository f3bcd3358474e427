// The 48th session's trial findings end to end: dak perplexity scores a text with BOS only, leaving
// out the other special tokens a tokenizer.json post-processor puts before and after it (prefix_ids(),
// suffix_ids()). Their parsing has unit tests in test_tokenizer_errors.cc.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_test_util.h"
#include "core/error.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::RunResult;

// A model folder: the llama_gqa parity fixture's weights (vocabulary 128) with a byte-level BPE
// tokenizer of the lowercase letters, 'Ġ' (a space) and '.', and [CLS] [X] [SEP] as special tokens;
// `post_processor` as given (null: none).
fs::path make_folder(const std::string& name, const nlohmann::json& post_processor) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path fixture = fs::path(DAK_TEST_DATA_DIR) / "hf_parity/llama_gqa";
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy(fixture / f, dir / f);
  nlohmann::json vocab = nlohmann::json::object();
  int id = 0;
  for (char c = 'a'; c <= 'z'; ++c) vocab[std::string(1, c)] = id++;
  vocab["\u0120"] = id++;
  vocab["."] = id++;
  nlohmann::json tok = {
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"decoder", {{"type", "ByteLevel"}}},
      {"added_tokens",
       {{{"id", id}, {"content", "[CLS]"}, {"special", true}},
        {{"id", id + 1}, {"content", "[X]"}, {"special", true}},
        {{"id", id + 2}, {"content", "[SEP]"}, {"special", true}}}},
      {"post_processor", post_processor}};
  std::ofstream(dir / "tokenizer.json") << tok.dump();
  std::ofstream(dir / "text.txt") << "the sky is blue.";
  return dir;
}

int64_t tokens_scored(const fs::path& dir) {
  const RunResult r = dak::testing::run_dak_env(
      "", "perplexity --device cpu --output json --model " + dir.string() + " --file " + (dir / "text.txt").string(),
      false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return nlohmann::json::parse(r.output).at("tokens_scored").get<int64_t>();
}

TEST(CliTrial48, PerplexityScoresTheTextWithBosOnly) {
  const fs::path plain = make_folder("dak_trial48_plain", nullptr);
  const fs::path templ = make_folder("dak_trial48_template", nlohmann::json::parse(R"({"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"SpecialToken": {"id": "[X]", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
      "special_tokens": {}})"));
  // 16 characters, one token each: 15 scored without BOS; with the template, [CLS] (BOS) first and
  // neither [X] nor [SEP]: 16.
  EXPECT_EQ(tokens_scored(plain), 15);
  EXPECT_EQ(tokens_scored(templ), 16);
  // generate adds all of them (the prompt's ids in JSON).
  const RunResult g = dak::testing::run_dak_env(
      "", "generate --device cpu --output json -n 1 --model " + templ.string() + " -p " + "'the sky'", false);
  ASSERT_EQ(g.exit_code, 0) << g.output;
  const nlohmann::json j = nlohmann::json::parse(g.output);
  const auto ids = j.dump();
  EXPECT_NE(ids.find("[28,29,19,7,4,26,18,10,24,30]"), std::string::npos) << ids;
  fs::remove_all(plain);
  fs::remove_all(templ);
}

}  // namespace
