// Text in and out of `dak perplexity` / `dak generate` on the CPU path (new-user trial findings):
//   - perplexity's input is capped (kMaxPerplexityTextBytes), standard input read in chunks up to it;
//   - a failed read of standard input says so, with the system's reason;
//   - a long CPU scoring run is announced with an estimate before it starts;
//   - a tokenizer with more ids than the model's embedding is refused when both are loaded;
//   - text on stdout is valid UTF-8 (an unfinished character at the end becomes U+FFFD);
//   - --output json without a tokenizer has null text, not "".
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.h"
#include "core/generate.h"
#include "core/pretokenizer.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::RunResult;
using dak::testing::run_shell;

const std::string kDak = DAK_BINARY;
const std::string kData = DAK_TEST_DATA_DIR;
const std::string kTiny = kData + "/hf_parity/llama_gqa";  // vocab_size 128, no tokenizer

RunResult run_dak(const std::string& args, bool merge_stderr = true) {
  return dak::testing::run_dak_env("", args, merge_stderr);
}

std::string default_model() {
  return (fs::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf").string();
}

using dak::testing::fresh_test_dir;

TEST(CliTextIo, PerplexityRefusesTextOverItsCapAndStopsReadingThere) {
  static_assert(dak::kMaxPerplexityTextBytes == int64_t(64) << 20);
  // `yes | dak perplexity --file -` grew without bound: now it stops at the cap (timeout: a regression
  // fails instead of hanging the suite).
  RunResult r = run_shell("timeout 120 sh -c 'yes | " + kDak + " perplexity --device cpu --model " + kTiny +
                          " --file -' 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // On the CPU path, the part the CPU path can score (test_cli_trial25_files.cc has the GPU's).
  EXPECT_NE(r.output.find("dak: error: standard input holds more than 64.00 MiB of text, the most dak perplexity "
                          "reads\n  where: standard input (--file -)\n  fix:   pipe a part small enough for the CPU "
                          "reference path (--device cpu), e.g. its first 4 KiB (iconv -c drops a character cut at the "
                          "end): ... | head -c 4K | iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file - --model " +
                          kTiny + " --device cpu"),
            std::string::npos)
      << r.output;
  // Exactly the cap is read (the next error is the tiny model's missing tokenizer); one byte more is not.
  r = run_shell("head -c 67108864 /dev/zero | " + kDak + " perplexity --device cpu --model " + kTiny +
                " --file - 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find("64.00 MiB"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("perplexity tokenizes the text with the model's tokenizer"), std::string::npos) << r.output;
  r = run_shell("head -c 67108865 /dev/zero | " + kDak + " perplexity --device cpu --model " + kTiny +
                " --file - 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("standard input holds more than 64.00 MiB of text"), std::string::npos) << r.output;
  // A file over the cap is refused from its size, before reading it (a sparse file: no disk used).
  const fs::path dir = fresh_test_dir("dak_ppl_cap");
  const fs::path big = dir / "big.txt";
  std::ofstream(big).put('x');
  fs::resize_file(big, (uint64_t(65) << 20));
  r = run_dak("perplexity --device cpu --model " + kTiny + " --file " + big.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("dak: error: the text file is 65.00 MiB, more than the 64.00 MiB dak perplexity reads\n"
                          "  where: " + big.string() + "\n  fix:   score a part small enough for the CPU reference "
                          "path (--device cpu), e.g. its first 4 KiB (iconv -c drops a character cut at the end): "
                          "head -c 4K " + big.string() + " | iconv -c -f UTF-8 -t UTF-8 | dak perplexity --file - "
                          "--model " + kTiny + " --device cpu"),
            std::string::npos)
      << r.output;
  fs::remove_all(dir);
}

TEST(CliTextIo, PerplexitySaysWhyStandardInputCannotBeRead) {
  // Both were "the text has fewer than two tokens".
  const std::string ppl = kDak + " perplexity --device cpu --model " + kTiny + " --file -";
  const fs::path dir = fresh_test_dir("dak_ppl_stdin_dir");
  for (const auto& [redirect, err] : {std::pair<std::string, int>{"<&-", EBADF}, {"< " + dir.string(), EISDIR}}) {
    const RunResult r = run_shell(ppl + " " + redirect + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << redirect << ": " << r.output;
    EXPECT_NE(r.output.find(std::string("dak: error: cannot read standard input: ") + std::strerror(err) +
                            "\n  where: standard input (--file -)\n"),
              std::string::npos)
        << redirect << ": " << r.output;
    EXPECT_EQ(r.output.find("fewer than two tokens"), std::string::npos) << redirect << ": " << r.output;
  }
  fs::remove_all(dir);
}

TEST(CliTextIo, PerplexityRefusesATextTooShortBeforeLoadingTheWeights) {
  // The session-35 trial: an empty file loaded the model (6 s) and then said "fewer than two tokens".
  const std::string model = default_model();
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run tools/setup.sh to download the default model";
  const fs::path dir = fresh_test_dir("dak_ppl_short");
  const struct {
    std::string name, text, says;
  } cases[] = {{"empty.txt", "", "the text is empty"}, {"one.txt", "Hi", "the text has fewer than two tokens"}};
  for (const auto& c : cases) {
    const fs::path f = dir / c.name;
    std::ofstream(f) << c.text;
    const RunResult r = run_shell(kDak + " perplexity --device cpu --model " + model + " --file " + f.string() + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << c.name << ": " << r.output;
    EXPECT_NE(r.output.find("dak: error: " + c.says), std::string::npos) << c.name << ": " << r.output;
    EXPECT_EQ(r.output.find("loading weights"), std::string::npos) << c.name << ": the weights loaded first: " << r.output;
  }
  fs::remove_all(dir);
}

TEST(CliTextIo, PerplexityEstimatesALongCpuRunBeforeScoring) {
  const std::string model = default_model();
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run tools/setup.sh to download the default model";
  // 35 copies of the paragraph (~6100 tokens, one window): minutes on one core, so the notice comes
  // first. The run is stopped once it has appeared (or dak has exited).
  const fs::path dir = fresh_test_dir("dak_ppl_estimate");
  const fs::path text = dir / "long.txt", err = dir / "stderr.txt";
  {
    std::ifstream in(kData + "/smollm2/paragraph.txt");
    const std::string paragraph((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(text);
    for (int i = 0; i < 35; ++i) out << paragraph << "\n";
  }
  const std::string cmd = "OMP_NUM_THREADS=1 " + kDak + " perplexity --device cpu --model " + model + " --file " +
                          text.string() + " >/dev/null 2>" + err.string() + " & p=$!; i=0; while [ $i -lt 600 ]; do " +
                          "grep -q 'dak: notice: scoring' " + err.string() + " && break; kill -0 $p 2>/dev/null || " +
                          "break; sleep 0.1; i=$((i+1)); done; kill $p 2>/dev/null; { wait $p; } 2>/dev/null; cat " + err.string();
  RunResult r = run_shell(cmd);
  EXPECT_NE(r.output.find("dak: notice: scoring 6"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" but the first) on the CPU reference path will take about "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" min (1 window of up to 6"), std::string::npos) << r.output;  // no "or more": no bound
  // "estimated for 1 core)", or on a busy machine "..., shared with a load of L from other processes)".
  EXPECT_NE(r.output.find("tokens x 30 layers, estimated for 1 core"), std::string::npos) << r.output;
  // --device cuda only where this machine has a usable GPU.
  EXPECT_TRUE(r.output.find("); run it on a GPU (--device cuda), or score a shorter text") != std::string::npos ||
              r.output.find("); run it on a machine with a usable GPU, or score a shorter text") != std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("dak: error"), std::string::npos) << r.output;
  // A short text: no notice.
  r = run_dak("perplexity --device cpu --model " + model + " --file " + kData + "/smollm2/paragraph.txt --context 64");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("notice: scoring"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

/// A folder with the tiny model's weights (vocab_size 128) and a byte-level BPE tokenizer.json of `tokens`
/// ids (the first byte characters), plus an added token at `added_id` when >= 0.
fs::path model_with_tokenizer(const std::string& name, int tokens, int added_id = -1) {
  const fs::path dir = fresh_test_dir(name);
  fs::copy_file(fs::path(kTiny) / "config.json", dir / "config.json");
  fs::create_symlink(fs::absolute(fs::path(kTiny) / "model.safetensors"), dir / "model.safetensors");
  nlohmann::json vocab = nlohmann::json::object();
  const auto& alpha = dak::byte_level_alphabet();
  for (int b = 0; b < tokens; ++b) vocab[alpha[b]] = b;
  nlohmann::json j = {
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
  };
  if (added_id >= 0) j["added_tokens"] = {{{"id", added_id}, {"content", "<|extra|>"}, {"special", true}}};
  std::ofstream(dir / "tokenizer.json") << j.dump();
  std::ofstream(dir / "text.txt") << "abcabcab";
  return dir;
}

TEST(CliTextIo, ATokenizerLargerThanTheModelIsRefusedWhenLoaded) {
  // New-user trial: such a tokenizer was caught only when a prompt hit an id past the embedding, with
  // `where: CpuModel::step`.
  const fs::path fits = model_with_tokenizer("dak_tok_fits", 128);
  const fs::path smaller = model_with_tokenizer("dak_tok_smaller", 100);
  const fs::path larger = model_with_tokenizer("dak_tok_larger", 129);
  const fs::path added = model_with_tokenizer("dak_tok_added", 100, 200);
  // As large as the model, or smaller (the padding rows of many real models): both run.
  RunResult r = run_dak("generate --device cpu --model " + fits.string() + " -p ab -n 2", false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 2), "ab") << r.output;
  for (const fs::path& dir : {fits, smaller}) {
    r = run_dak("perplexity --device cpu --model " + dir.string() + " --file " + (dir / "text.txt").string());
    EXPECT_EQ(r.exit_code, 0) << dir << ": " << r.output;
    EXPECT_NE(r.output.find("over 7 tokens"), std::string::npos) << dir << ": " << r.output;
  }
  // Larger, by its vocabulary or an added token: refused by generate and perplexity, naming the file.
  // The added token's id 200 leaves a gap after the vocabulary's 100: 101 tokens, the largest id 200.
  for (const auto& [dir, has] :
       {std::pair<fs::path, std::string>{larger, "has 129 tokens (ids 0 to 128, added and special tokens included), "
                                                 "more than"},
        {added, "has 101 tokens (added and special tokens included), but its largest id is 200, past"}}) {
    const std::string what = "dak: error: the tokenizer " + has + " the model's vocabulary of 128 (its vocab_size, "
                             "the rows of its embedding): ids from 128 up have no embedding\n  where: " +
                             (dir / "tokenizer.json").string() + "\n";
    r = run_dak("generate --device cpu --model " + dir.string() + " -p ab -n 1");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("fix:   use the tokenizer that belongs to these weights"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("or pass the prompt as token ids below 128 with --prompt-ids"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("CpuModel"), std::string::npos) << r.output;
    r = run_dak("perplexity --device cpu --model " + dir.string() + " --file " + (dir / "text.txt").string());
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("--prompt-ids"), std::string::npos) << r.output;  // perplexity has none
  }
  // --prompt-ids alone: the tokenizer gives no ids, it only decodes the model's.
  r = run_dak("generate --device cpu --model " + larger.string() + " --prompt-ids 97,98 -n 1", false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // An id out of range in a batch names the prompt it is in.
  r = run_dak("generate --device cpu --model " + fits.string() + " -p ab --prompt-ids 1,128 -n 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("token id 128 is outside the vocabulary (size 128)\n  where: --prompt-ids (prompt 2 of 2)"),
            std::string::npos)
      << r.output;
  for (const fs::path& dir : {fits, smaller, larger, added}) fs::remove_all(dir);
}

TEST(CliTextIo, GeneratedTextOnStdoutIsValidUtf8) {
  // New-user trial: `dak generate --device cpu -p "héllo 🙂 世界" -n 5 | iconv -f UTF-8 -t UTF-8` failed:
  // the generation stopped inside a character and its first bytes were printed.
  const std::string model = default_model();
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run tools/setup.sh to download the default model";
  const std::string prompt = "h\xC3\xA9llo \xF0\x9F\x99\x82 \xE4\xB8\x96\xE7\x95\x8C";
  const std::string gen = "generate --device cpu --model " + model + " ";
  RunResult r = run_dak(gen + "-p '" + prompt + "' -n 5", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(dak::find_invalid_utf8(r.output).has_value()) << r.output;
  EXPECT_EQ(r.output.substr(0, prompt.size()), prompt) << r.output;
  ASSERT_FALSE(r.output.empty());
  EXPECT_EQ(r.output.back(), '\n');
  if (dak::testing::run_shell("command -v iconv >/dev/null").exit_code == 0) {
    r = run_shell(kDak + " " + gen + "-p '" + prompt + "' -n 5 2>/dev/null | iconv -f UTF-8 -t UTF-8 >/dev/null");
    EXPECT_EQ(r.exit_code, 0);
  }
  // Not streamed (a batch), and a prompt given as ids that is no text (token 160: a lone continuation byte).
  r = run_dak(gen + "-p '" + prompt + "' -p '" + prompt + "' -n 5", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(dak::find_invalid_utf8(r.output).has_value()) << r.output;
  EXPECT_EQ(r.output.substr(0, 4 + prompt.size()), "[0] " + prompt) << r.output;
  r = run_dak(gen + "--prompt-ids 160 -n 3", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(dak::find_invalid_utf8(r.output).has_value()) << r.output;
  EXPECT_EQ(r.output.substr(0, 3), "\xEF\xBF\xBD") << r.output;
}

TEST(CliTextIo, AnIdPromptThatEndsInsideACharacterPrintsItWhole) {
  // Trial 47: ids 8070,105,15107 decode to "Party " and the first 2 bytes of U+1F31F, whose other 2
  // the default model generates greedily (ids 230, 249). Printed apart, prompt and continuation gave
  // "Party " U+FFFD U+FFFD; the unfinished bytes now go with the continuation.
  const std::string model = default_model();
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run tools/setup.sh to download the default model";
  const std::string gen = "generate --device cpu --model " + model + " --prompt-ids 8070,105,15107 -n 4 ";
  const std::string star = "\xF0\x9F\x8C\x9F";
  RunResult r = run_dak(gen, false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 6 + star.size()), "Party " + star) << r.output;
  r = run_dak(gen + "-p hi", false);  // a batch: printed at the end
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 10 + star.size()), "[0] Party " + star) << r.output;
  r = run_dak(gen + "--output json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["sequences"][0]["prompt"], "Party ");
  EXPECT_EQ(j["sequences"][0]["text"].get<std::string>().substr(0, star.size()), star);
  // Stopped before the character completes: one U+FFFD for its first bytes, after the prompt's text.
  r = run_dak("generate --device cpu --model " + model + " --prompt-ids 8070,105,15107 -n 1", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "Party \xEF\xBF\xBD\n") << r.output;
}

TEST(CliTextIo, JsonWithoutATokenizerHasNullText) {
  // The tiny model has no tokenizer: "prompt" and "text" were "", as if the text were empty.
  const RunResult r =
      run_dak("generate --device cpu --model " + kTiny + " --prompt-ids 1,2 -n 2 --output json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  const nlohmann::json& s = j["sequences"][0];
  EXPECT_TRUE(s.contains("prompt") && s["prompt"].is_null()) << r.output;
  EXPECT_TRUE(s.contains("text") && s["text"].is_null()) << r.output;
  EXPECT_EQ(s["prompt_ids"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(s["generated_ids"].size(), 2u) << r.output;
  // With a tokenizer they are strings.
  const std::string model = default_model();
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run tools/setup.sh to download the default model";
  const RunResult t = run_dak("generate --device cpu --model " + model + " --prompt-ids 1,2 -n 1 --output json", false);
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const nlohmann::json k = nlohmann::json::parse(t.output);
  EXPECT_TRUE(k["sequences"][0]["prompt"].is_string()) << t.output;
  EXPECT_TRUE(k["sequences"][0]["text"].is_string()) << t.output;
}

}  // namespace
