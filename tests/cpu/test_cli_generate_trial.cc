// A new-user trial's findings on `dak generate`'s prompts and output:
//   - an empty --prompt / --prompt-ids says what to give (leaving the option out is no fix: a prompt
//     has no default), while an optional option keeps "leave the option out for its default";
//   - the tokenizer is judged alike with --prompt and --prompt-ids: one that cannot be read, or that
//     has more ids than the model, is refused for text prompts and noticed (output as ids) for ids;
//   - --seed at --temperature 0 (greedy) is a notice, as --top-k / --top-p are;
//   - one sequence is printed without the batch's "[0] ", and a batch follows the command line's order
//     of -p / --prompt-ids.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_test_util.h"
#include "core/pretokenizer.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::RunResult;

const std::string kData = DAK_TEST_DATA_DIR;
const std::string kTiny = kData + "/hf_parity/llama_gqa";  // vocab_size 128, no tokenizer

RunResult run_dak(const std::string& args, bool merge_stderr = true) {
  return dak::testing::run_dak_env("", args, merge_stderr);
}

using dak::testing::contains;

/// A fresh folder under the test's temporary directory holding the tiny model's weights (vocab_size
/// 128) and, when `tokens` > 0, a byte-level BPE tokenizer.json of `tokens` ids (the first byte
/// characters: id 97 is "a"), its text cut to its first `keep` bytes when `keep` >= 0 (a truncated file).
fs::path tiny_model(const std::string& name, int tokens, long keep = -1) {
  const fs::path dir = fs::path(::testing::TempDir()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(fs::path(kTiny) / "config.json", dir / "config.json");
  fs::create_symlink(fs::absolute(fs::path(kTiny) / "model.safetensors"), dir / "model.safetensors");
  if (tokens > 0) {
    nlohmann::json vocab = nlohmann::json::object();
    const auto& alpha = dak::byte_level_alphabet();
    for (int b = 0; b < tokens; ++b) vocab[alpha[b]] = b;
    const nlohmann::json j = {
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
    };
    const std::string text = j.dump();
    std::ofstream(dir / "tokenizer.json") << (keep >= 0 ? text.substr(0, size_t(keep)) : text);
  }
  return dir;
}

/// The "what" and "where" lines of the first `dak: error:` in `output` ("" when there is none).
std::pair<std::string, std::string> error_parts(const std::string& output) {
  const size_t at = output.find("dak: error: ");
  if (at == std::string::npos) return {};
  const size_t what_end = output.find('\n', at);
  const size_t where_at = output.find("  where: ", what_end);
  const size_t where_end = output.find('\n', where_at);
  if (what_end == std::string::npos || where_at != what_end + 1 || where_end == std::string::npos) return {};
  return {output.substr(at + 12, what_end - at - 12), output.substr(where_at + 9, where_end - where_at - 9)};
}

TEST(CliGenerateTrial, AnEmptyPromptSaysWhatToGiveNotToLeaveItOut) {
  // The trial: `--prompt ""` said "give a value, or leave the option out for its default", and without
  // it dak said "no prompt given". The fix must work when followed: here on the tiny model.
  const fs::path model = tiny_model("dak_empty_prompt", 128);
  const std::string gen = "generate --device cpu -n 1 --model " + model.string() + " ";
  const std::string text_fix = "\n  fix:   give the prompt text, e.g. --prompt \"Hello\"\n";
  const std::string ids_fix = "\n  fix:   give token ids, e.g. --prompt-ids 1,2,3\n";
  const struct {
    std::string args, says;
  } cases[] = {
      {"--prompt ''", "dak: error: --prompt was given an empty value\n  where: --prompt (dak generate)" + text_fix},
      {"-p ''", "dak: error: -p was given an empty value\n  where: -p (dak generate)" + text_fix},
      {"--prompt=", "dak: error: --prompt was given an empty value\n  where: --prompt (dak generate)" + text_fix},
      {"--chat -p ''", "dak: error: -p was given an empty value\n  where: -p (dak generate)" + text_fix},
      {"--prompt-ids ''", "dak: error: --prompt-ids was given an empty value\n  where: --prompt-ids (dak generate)" + ids_fix},
      {"--prompt-ids=", "dak: error: --prompt-ids was given an empty value\n  where: --prompt-ids (dak generate)" + ids_fix},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(gen + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.args << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "leave the option out")) << c.args << ": " << r.output;
  }
  // Followed, the fixes run.
  for (const std::string args : {"--prompt \"Hello\"", "--prompt-ids 1,2,3"}) {
    const RunResult r = run_dak(gen + args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.output;
  }
  // An option with a default keeps the advice; a required one is given a value, and says so; in a
  // subcommand of a subcommand too.
  const struct {
    std::string args, fix;
  } others[] = {
      {gen + "-p hi --seed ''", "give a value, or leave the option out for its default"},
      {"bench attention --dry-run --max-kv-gib ''", "give a value, or leave the option out for its default"},
      {"perplexity --file ''",
       "give --file a value: dak perplexity needs it (`dak perplexity --help` says what it takes)"},
      {"plan --model=", "give --model a value: dak plan needs it (`dak plan --help` says what it takes)"},
  };
  for (const auto& c : others) {
    const RunResult r = run_dak(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "was given an empty value\n  where: --")) << c.args << ": " << r.output;  // the option
    EXPECT_TRUE(contains(r.output, "\n  fix:   " + c.fix + "\n")) << c.args << ": " << r.output;
  }
  fs::remove_all(model);
}

TEST(CliGenerateTrial, IdsWithoutATokenPrintAsNothingWithANotice) {
  // The trial of session 27: a model whose embedding has more rows than its tokenizer has tokens
  // (padded vocabularies, as Qwen2's) generated id 208 of a 200-token tokenizer, and the decode
  // error stopped the run mid-text ("pass ids produced by this model's tokenizer"), losing the JSON.
  // Such ids print as nothing, as Hugging Face tokenizers do, and a notice counts them.
  const fs::path dir = tiny_model("dak_tok_padded", 100);  // model vocab 128, tokenizer ids 0-99
  const std::string gen = "generate --device cpu -n 12 --model " + dir.string() + " ";
  const RunResult json = run_dak(gen + "--prompt-ids 97,120 --output json", false);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const nlohmann::json j = nlohmann::json::parse(json.output);
  int64_t without = 1;  // the prompt's 120
  for (int id : j["sequences"][0]["generated_ids"]) without += id >= 100;
  EXPECT_EQ(j["sequences"][0]["prompt"], "a") << json.output;
  const RunResult text = run_dak(gen + "--prompt-ids 97,120");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(contains(text.output, "dak: notice: " + std::to_string(without) + " token id" +
                                        (without == 1 ? "" : "s") + " of this run (the first: 120)"))
      << text.output;
  EXPECT_TRUE(contains(text.output, "ids 0 to 99; the model has 128): printed as nothing")) << text.output;
  EXPECT_FALSE(contains(text.output, "dak: error")) << text.output;
  // Streamed text too (one text prompt): no error, the same notice wording.
  const RunResult streamed = run_dak(gen + "-p a");
  EXPECT_EQ(streamed.exit_code, 0) << streamed.output;
  EXPECT_FALSE(contains(streamed.output, "dak: error")) << streamed.output;
  fs::remove_all(dir);
}

TEST(CliGenerateTrial, PromptIdsJudgeTheTokenizerAsTextPromptsDo) {
  // The trial: with a truncated tokenizer.json, -p gave the JSON error but --prompt-ids printed bare ids
  // with exit 0 and no word why; a tokenizer with more ids than the model, refused by -p, decoded
  // --prompt-ids' output without comment. Now --prompt-ids says why in a notice (the -p error's own
  // words and file) and shows ids. A model without a tokenizer runs on ids with a notice that says so
  // (trial 26: before, without a word).
  const fs::path truncated = tiny_model("dak_tok_truncated", 128, 200);
  const fs::path larger = tiny_model("dak_tok_larger_ids", 129);
  const fs::path none = tiny_model("dak_tok_none", 0);
  for (const fs::path& dir : {truncated, larger, none}) {
    const std::string gen = "generate --device cpu -n 2 --model " + dir.string() + " ";
    const RunResult text = run_dak(gen + "-p ab");
    EXPECT_EQ(text.exit_code, 1) << dir << ": " << text.output;
    const auto [what, where] = error_parts(text.output);
    ASSERT_FALSE(what.empty()) << dir << ": " << text.output;
    const RunResult ids = run_dak(gen + "--prompt-ids 97,98");
    EXPECT_EQ(ids.exit_code, 0) << dir << ": " << ids.output;
    if (dir == none) {
      EXPECT_EQ(what, "the model folder has no tokenizer (neither tokenizer.json nor tokenizer.model)");
      EXPECT_TRUE(contains(ids.output, "dak: notice: the model has no tokenizer (neither tokenizer.json nor "
                                       "tokenizer.model, nor one in GGUF metadata): the output is the generated token "
                                       "ids (with the stop token when the model generated one)\n"))
          << dir << ": " << ids.output;
    } else {
      EXPECT_TRUE(contains(ids.output, "dak: notice: the output is shown as token ids, since the model's tokenizer "
                                       "cannot be used: " + what + " (in " + where + ")\n"))
          << dir << ": " << ids.output;
    }
    // stdout: the generated ids alone, no decoded text.
    const RunResult out = run_dak(gen + "--prompt-ids 97,98", false);
    EXPECT_EQ(out.output.find_first_not_of("0123456789,\n"), std::string::npos) << dir << ": " << out.output;
    const RunResult json = run_dak(gen + "--prompt-ids 97,98 --output json", false);
    ASSERT_EQ(json.exit_code, 0) << json.output;
    const nlohmann::json j = nlohmann::json::parse(json.output);
    EXPECT_TRUE(j["sequences"][0]["prompt"].is_null()) << json.output;
    EXPECT_TRUE(j["sequences"][0]["text"].is_null()) << json.output;
  }
  // Trial 26: the notice came before a refusal of the same run; a refused run prints none.
  for (const std::string& refused : {std::string("-n 100000000"), std::string("--device cpu --offload-ratio 0.5")}) {
    const RunResult r = run_dak("generate -n 2 --prompt-ids 97,98 --model " + none.string() + " " + refused);
    EXPECT_NE(r.exit_code, 0) << refused << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "dak: notice: the model has no tokenizer")) << refused << ": " << r.output;
  }
  EXPECT_TRUE(contains(run_dak("generate --device cpu -n 1 --prompt-ids 97 --model " + larger.string()).output,
                       "cannot be used: the tokenizer has 129 tokens (ids 0 to 128, added and special tokens "
                       "included), more than the model's vocabulary of 128"));
  // A GGUF file whose tokenizer metadata is incomplete: the same notice.
  const RunResult gguf = run_dak("generate --device cpu -n 1 --prompt-ids 1,2 --model " + kData + "/gguf/tiny_llama.gguf");
  EXPECT_EQ(gguf.exit_code, 0) << gguf.output;
  EXPECT_TRUE(contains(gguf.output, "dak: notice: the output is shown as token ids, since the model's tokenizer cannot "
                                    "be used: GGUF metadata key 'tokenizer.ggml.merges' is missing (in " +
                                        kData + "/gguf/tiny_llama.gguf)\n"))
      << gguf.output;
  // A tokenizer the model can use decodes, with no notice.
  const fs::path fits = tiny_model("dak_tok_fits_ids", 128);
  const RunResult r = run_dak("generate --device cpu -n 2 --prompt-ids 97,98 --model " + fits.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 2), "ab") << r.output;
  EXPECT_FALSE(contains(r.output, "notice")) << r.output;
  for (const fs::path& dir : {truncated, larger, none, fits}) fs::remove_all(dir);
}

TEST(CliGenerateTrial, ASeedAtGreedyDecodingIsANotice) {
  // The trial: --top-k / --top-p at --temperature 0 got a notice, --seed 7 none.
  const std::string gen = "generate --model " + kTiny + " --device cpu --prompt-ids 1,2 -n 1 ";
  const struct {
    std::string flags, says;
  } cases[] = {
      {"--seed 7", "dak: notice: --seed is ignored at --temperature 0 (greedy decoding takes the most likely token); "
                   "give --temperature above 0 to sample\n"},
      {"--seed 0 --temperature 0", "dak: notice: --seed is ignored at --temperature 0"},
      {"--top-k 5 --seed 7", "dak: notice: --top-k / --seed are ignored at --temperature 0"},
      {"--top-k 5 --top-p 0.5 --seed 7", "dak: notice: --top-k / --top-p / --seed are ignored at --temperature 0"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(gen + c.flags);
    EXPECT_EQ(r.exit_code, 0) << c.flags << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.flags << ": " << r.output;
  }
  // Sampling with a seed, or no seed given: no notice.
  for (const std::string flags : {"--temperature 0.7 --seed 7", ""}) {
    const RunResult r = run_dak(gen + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "ignored at --temperature")) << flags << ": " << r.output;
  }
}

TEST(CliGenerateTrial, OneSequenceHasNoBatchNumberAndABatchFollowsTheCommandLine) {
  // The trial: one --prompt-ids sequence without a tokenizer printed "[0] 5749,282,..." (a single text
  // prompt prints no "[0]"), and `--prompt-ids 1 -p hi` printed the text prompt as [0].
  const std::string tiny = "generate --device cpu -n 3 --model " + kTiny + " ";
  const RunResult json = run_dak(tiny + "--prompt-ids 1,2 --output json", false);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  std::string ids;
  const nlohmann::json generated = nlohmann::json::parse(json.output)["sequences"][0]["generated_ids"];
  ASSERT_FALSE(generated.empty()) << json.output;
  for (const auto& id : generated) {
    ids += (ids.empty() ? "" : ",") + std::to_string(id.get<int>());
  }
  RunResult r = run_dak(tiny + "--prompt-ids 1,2", false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, ids + "\n");
  // A batch still numbers its sequences.
  r = run_dak(tiny + "--prompt-ids 1,2 --prompt-ids 1,2", false);
  EXPECT_EQ(r.output, "[0] " + ids + "\n[1] " + ids + "\n");
  // The output is ids: a notice says why (trial 26: a model without a tokenizer printed "2", its stop
  // token, without a word); not with --output json, whose fields say what they are.
  r = run_dak(tiny + "--prompt-ids 1,2", true);
  EXPECT_NE(r.output.find("dak: notice: the model has no tokenizer"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the output is the generated token ids (with the stop token when the model generated one)"), std::string::npos)
      << r.output;
  r = run_dak(tiny + "--prompt-ids 1,2 --output json", true);
  EXPECT_EQ(r.output.find("has no tokenizer"), std::string::npos) << r.output;

  const fs::path model = tiny_model("dak_batch_order", 128);
  const std::string gen = "generate --device cpu -n 1 --model " + model.string() + " ";
  // Ids 97, 98, 99 are "a", "b", "c": the batch's prompts in the order given, whatever their kind.
  const struct {
    std::string args;
    std::vector<std::vector<int>> prompt_ids;
    std::string starts;
  } cases[] = {
      {"--prompt-ids 97 -p b", {{97}, {98}}, "[0] a"},
      {"-p b --prompt-ids 97", {{98}, {97}}, "[0] b"},
      {"-p b --prompt-ids 99 --prompt=a", {{98}, {99}, {97}}, "[0] b"},
      {"--prompt-ids 99 -p b --prompt-ids 97 -p c", {{99}, {98}, {97}, {99}}, "[0] c"},
  };
  for (const auto& c : cases) {
    const RunResult j = run_dak(gen + c.args + " --output json", false);
    ASSERT_EQ(j.exit_code, 0) << c.args << ": " << j.output;
    const nlohmann::json seqs = nlohmann::json::parse(j.output)["sequences"];
    ASSERT_EQ(seqs.size(), c.prompt_ids.size()) << c.args << ": " << j.output;
    for (size_t i = 0; i < seqs.size(); ++i) {
      EXPECT_EQ(seqs[i]["prompt_ids"].get<std::vector<int>>(), c.prompt_ids[i]) << c.args << " sequence " << i;
    }
    r = run_dak(gen + c.args, false);
    EXPECT_EQ(r.exit_code, 0) << c.args << ": " << r.output;
    EXPECT_EQ(r.output.substr(0, 5), c.starts) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "\n[1] " + std::string(1, char(c.prompt_ids[1][0])))) << c.args << ": " << r.output;
  }
  // An id out of range names its place in the command line's order.
  r = run_dak(gen + "--prompt-ids 1,128 -p ab");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "token id 128 is outside the vocabulary (size 128)\n  where: --prompt-ids (prompt 1 of 2)"))
      << r.output;
  fs::remove_all(model);
}

}  // namespace

namespace {

// --max-context (issue 7's flag, vLLM's --max-model-len): the KV cache holds that many tokens per
// sequence; the ids are those of the default sizing, a request beyond it is refused with both ways
// out, and a value beyond the model's context or below 2 is refused before any work.
TEST(CliGenerate, MaxContextSizesTheCacheAndCapsTheRequest) {
  const std::string base = "generate --device cpu --model " + kTiny + " --prompt-ids 1,50,60,70 -n 8";
  const RunResult plain = run_dak(base, false), sized = run_dak(base + " --max-context 100", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(sized.exit_code, 0) << sized.output;
  EXPECT_EQ(sized.output, plain.output);
  EXPECT_EQ(run_dak(base + " --max-context 12", false).output, plain.output);  // 4 + 8 fits exactly
  const RunResult over = run_dak(base + " --max-context 11");
  EXPECT_EQ(over.exit_code, 1) << over.output;
  EXPECT_TRUE(contains(over.output, "that is 12, more than the --max-context of 11 tokens")) << over.output;
  EXPECT_TRUE(contains(over.output, "where: --max-context / --max-new-tokens / prompt")) << over.output;
  EXPECT_TRUE(contains(over.output, "use --max-new-tokens 7 or less, or a shorter prompt, or raise --max-context "
                                    "(up to the model's 128)"))
      << over.output;
  // A one-token prompt cannot be shorter: the fix does not offer it (trial of session 49).
  const RunResult single = run_dak("generate --device cpu --model " + kTiny + " --prompt-ids 1 -n 10 --max-context 5");
  EXPECT_EQ(single.exit_code, 1) << single.output;
  EXPECT_TRUE(contains(single.output, "use --max-new-tokens 4 or less, or raise --max-context (up to the model's 128)"))
      << single.output;
  EXPECT_FALSE(contains(single.output, "shorter prompt")) << single.output;
  const RunResult beyond = run_dak(base + " --max-context 129");
  EXPECT_EQ(beyond.exit_code, 1) << beyond.output;
  EXPECT_TRUE(contains(beyond.output, "--max-context 129 is beyond the model's context of 128 tokens")) << beyond.output;
  EXPECT_TRUE(contains(beyond.output, "use --max-context 128 or less")) << beyond.output;
  const RunResult one = run_dak(base + " --max-context 1");
  EXPECT_NE(one.exit_code, 0) << one.output;
  EXPECT_TRUE(contains(one.output, "--max-context: '1' is too small")) << one.output;
  // With --chat the count includes the template's tokens, and the message says so (trial 28b).
  const RunResult chat = run_dak("generate --device cpu --chat -p Hi --max-context 12 -n 4");
  EXPECT_EQ(chat.exit_code, 1) << chat.output;
  EXPECT_TRUE(contains(chat.output, "the prompt (rendered with the chat template) has ")) << chat.output;
}

// Other engines' names for dak's options (trial 28: --temp was offered --help): the hint names dak's
// option; llama.cpp's layer count gets what dak takes instead, -ngl included (it parsed as -n gl).
/// Each command line is a usage error (exit 2) whose output holds its hint.
void expect_usage_hints(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [args, hint] : cases) {
    const RunResult r = run_dak(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, hint)) << args << "\n" << r.output;
  }
}

// --max-batch (issue 7's flag, vLLM's --max-num-seqs): prompts beyond it take finished sequences'
// slots, in order, with the ids of one batch (greedy and seeded sampling); the run's last line says
// so; below 1 is refused.
TEST(CliGenerate, MaxBatchRunsWavesWithTheIdsOfOneBatch) {
  const std::string base = "generate --device cpu --model " + kTiny +
                           " --prompt-ids 1,50,60,70 --prompt-ids 9 --prompt-ids 3,4 -n 5 --output json";
  for (const std::string sampling : {"", " --temperature 0.9 --seed 7"}) {
    const RunResult one = run_dak(base + sampling, false), waves = run_dak(base + sampling + " --max-batch 2", false);
    ASSERT_EQ(one.exit_code, 0) << one.output;
    ASSERT_EQ(waves.exit_code, 0) << waves.output;
    const nlohmann::json a = nlohmann::json::parse(one.output), b = nlohmann::json::parse(waves.output);
    ASSERT_EQ(b["sequences"].size(), 3u) << waves.output;
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(b["sequences"][i]["prompt_ids"], a["sequences"][i]["prompt_ids"]) << sampling << i;
      EXPECT_EQ(b["sequences"][i]["generated_ids"], a["sequences"][i]["generated_ids"]) << sampling << i;
    }
    EXPECT_EQ(a["timings"]["refills"], 0) << one.output;
    EXPECT_EQ(b["timings"]["refills"], 1) << waves.output;
    EXPECT_EQ(b["timings"]["max_batch"], 2) << waves.output;
    EXPECT_TRUE(b["timings"]["admit_s"].is_number()) << waves.output;
  }
  // Trial 47, on the default model: with --max-batch 1 or 2 the third sequence sampled other ids (its
  // tokens' linear outputs depended on their place in the CPU kernel's block of 4 tokens).
  const std::string real = "generate --device cpu -p 'Once upon a time' -p 'The weather today' -p 'In 1492' -n 6 "
                           "--temperature 0.8 --seed 42 --output json";
  const RunResult all = run_dak(real, false);
  ASSERT_EQ(all.exit_code, 0) << all.output;
  const nlohmann::json ja = nlohmann::json::parse(all.output);
  for (const char* mb : {" --max-batch 1", " --max-batch 2"}) {
    const RunResult part = run_dak(real + mb, false);
    ASSERT_EQ(part.exit_code, 0) << part.output;
    const nlohmann::json jp = nlohmann::json::parse(part.output);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(jp["sequences"][i]["generated_ids"], ja["sequences"][i]["generated_ids"]) << mb << i;
    }
  }
  const RunResult text = run_dak("generate --device cpu --model " + kTiny +
                                 " --prompt-ids 1,2 --prompt-ids 3 --prompt-ids 4 -n 3 --max-batch 1");
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(contains(text.output, "decode steps (1 at a time, 2 prompts in finished sequences' slots),"))
      << text.output;
  const RunResult zero = run_dak(base + " --max-batch 0");
  EXPECT_NE(zero.exit_code, 0) << zero.output;
  EXPECT_TRUE(contains(zero.output, "--max-batch: '0' is too small")) << zero.output;
  expect_usage_hints({
      {"generate --max-num-seqs 4 -p hi", "did you mean --max-batch?"},
      {"generate --n-parallel 4 -p hi", "did you mean --max-batch?"},
      {"generate --batch 4 -p hi", "did you mean --max-batch?"},
      {"generate -np 4 -p hi", "dak generate runs at most --max-batch sequences at once"},
      {"plan --max-batch 8 --model llama-2-7b", "did you mean --batch?"},
      {"generate --file prompt.txt", "did you mean --prompt-file?"},
  });
}

// --prompt-file / -f (llama.cpp's -f): the whole file is a text prompt, one trailing newline dropped;
// - reads standard input (once); files take their place in the batch's command-line order; bad paths
// and empty files are named by their flag and path.
TEST(CliGenerate, PromptFilesAreTextPromptsInCommandLineOrder) {
  const fs::path dir = fs::path(::testing::TempDir()) / "dak_prompt_files";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "a.txt") << "The capital of France is\n";
  std::ofstream(dir / "two_lines.txt") << "Line one\nline two";
  std::ofstream(dir / "empty.txt") << "";
  const std::string a = (dir / "a.txt").string(), two = (dir / "two_lines.txt").string();
  const std::string base = "generate --device cpu -n 4 --output json";
  const RunResult from_file = run_dak(base + " -f " + a, false);
  const RunResult from_flag = run_dak(base + " -p 'The capital of France is'", false);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.output;
  ASSERT_EQ(from_flag.exit_code, 0) << from_flag.output;
  const nlohmann::json jf = nlohmann::json::parse(from_file.output), jp = nlohmann::json::parse(from_flag.output);
  EXPECT_EQ(jf["sequences"][0]["prompt"], "The capital of France is");
  EXPECT_EQ(jf["sequences"][0]["generated_ids"], jp["sequences"][0]["generated_ids"]);
  // Order: -p, then the file, then standard input, then ids.
  const RunResult mixed = dak::testing::run_shell("printf 'From stdin' | " + std::string(DAK_BINARY) + " " + base +
                                    " -p Hi --prompt-file " + two + " -f - --prompt-ids 1,2 2>/dev/null");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.output;
  const nlohmann::json jm = nlohmann::json::parse(mixed.output);
  ASSERT_EQ(jm["sequences"].size(), 4u) << mixed.output;
  EXPECT_EQ(jm["sequences"][0]["prompt"], "Hi");
  EXPECT_EQ(jm["sequences"][1]["prompt"], "Line one\nline two");
  EXPECT_EQ(jm["sequences"][2]["prompt"], "From stdin");
  EXPECT_EQ(jm["sequences"][3]["prompt_ids"], (std::vector<int>{1, 2}));
  const auto refused = [&](const std::string& args, const std::vector<std::string>& parts) {
    const RunResult r = run_dak("generate --device cpu -n 2 " + args + " < /dev/null");
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    for (const std::string& part : parts) EXPECT_TRUE(contains(r.output, part)) << args << "\n" << r.output;
  };
  refused("-f " + (dir / "missing.txt").string(), {"no such file", "check the path passed to --prompt-file"});
  refused("-f " + dir.string(), {"the --prompt-file path is a folder, not a text file"});
  refused("-f - -f -", {"standard input is given 2 times as --prompt-file (-, -)"});
  {
    // A named pipe given twice would wait forever for a second writer (session 30's trial).
    const std::string fifo = (dir / "prompt.fifo").string();
    ASSERT_EQ(dak::testing::run_shell("mkfifo " + fifo).exit_code, 0);
    refused("-f " + fifo + " -f " + fifo, {"the named pipe " + fifo + " is given twice as --prompt-file"});
  }
  // Standard input by another name (session 30's trial): the same file as descriptor 0, a pipe here.
  for (const std::string other : {"/dev/stdin", "//dev/stdin", "/dev/fd/0"}) {
    const RunResult r = dak::testing::run_shell("printf 'From stdin' | " + std::string(DAK_BINARY) +
                                                " generate --device cpu -n 2 -f - -f " + other + " 2>&1");
    EXPECT_EQ(r.exit_code, 1) << other << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "standard input is given 2 times as --prompt-file (-, " + other + ")"))
        << other << "\n" << r.output;
  }
  refused("-p Hi -f " + (dir / "empty.txt").string(),
          {"the prompt file is empty (or holds one newline, or a byte order mark alone)",
           "where: " + (dir / "empty.txt").string() + "\n"});
  // Standard input holding only a byte order mark: its own fix (trial of session 49).
  const RunResult mark = dak::testing::run_shell("printf '\\357\\273\\277' | " + std::string(DAK_BINARY) +
                                                 " generate --device cpu -n 2 -f - 2>&1");
  EXPECT_EQ(mark.exit_code, 1) << mark.output;
  EXPECT_TRUE(contains(mark.output, "standard input holds no prompt (nothing, one newline, or a byte order mark "
                                    "alone)"))
      << mark.output;
  EXPECT_TRUE(contains(mark.output, "fix:   pipe the prompt text into dak")) << mark.output;
  // A path left out or glued on (trial 29b): named as such, a usage error, before CLI11 takes the
  // next option as the path and fails on its stray value (`-f -n 3`: "not expected: 3").
  struct Missing {
    std::string args, what, fix;
  };
  for (const Missing& m : std::vector<Missing>{
           {"generate --device cpu -f --chat -n 2", "-f is followed by --chat where its file belongs",
            "(-f prompt.txt) or as --prompt-file=prompt.txt"},
           // A value before -f that starts with '-' is a value, not an option (session 30's second trial).
           {"generate --device cpu --temperature -1 -f -n 3", "-f is followed by -n", "the path is missing"},
           {"generate --device cpu -p -x -f -n 3", "-f is followed by -n", "the path is missing"},
           {"generate --device cpu -p -f -f -n 3", "-f is followed by -n", "the path is missing"},
           {"perplexity --device cpu --context -5 -f -c 8", "-f is followed by -c", "(-f text.txt)"},
           {"generate --device cpu -f -- -n 2", "-f is followed by -- where its file belongs", "the path is missing"},
           {"generate --device cpu -f -n 3", "-f is followed by -n", "where: -f (dak generate)"},
           {"generate --device cpu --prompt-file -n 3", "--prompt-file is followed by -n",
            "(--prompt-file prompt.txt)"},
           {"generate --device cpu --prompt-file=-n 3", "--prompt-file=-n gives -n as its file", "the path is missing"},
           {"perplexity --device cpu -f -c 100", "-f is followed by -c", "(-f text.txt) or as --file=text.txt"},
           {"perplexity --device cpu --file=-c 100", "--file=-c gives -c as its file", "where: --file (dak perplexity)"},
           {"perplexity --device cpu -f=text.txt", "-f=text.txt reads '=text.txt' as its path", "(-f text.txt)"},
           {"generate --device cpu -f=x.txt -n 2", "-f=x.txt reads '=x.txt' as its path", "(-f x.txt)"},
           // The glued short form and a path led by '=' (session 30's review: perplexity said "no such
           // file", exit 1, where generate gave a usage error).
           {"generate --device cpu -f-n 2", "-f-n reads '-n' as its path: the path is missing", "(-f prompt.txt)"},
           {"perplexity --device cpu -f-c 100", "-f-c reads '-c' as its path", "where: -f (dak perplexity)"},
           {"perplexity --device cpu -f =text.txt", "-f =text.txt reads '=text.txt' as its path", "(-f text.txt)"},
           {"generate --device cpu -f =x -n 2", "-f =x reads '=x' as its path", "or as --prompt-file=x;"}}) {
    const RunResult r = run_dak(m.args);
    EXPECT_EQ(r.exit_code, 2) << m.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, m.what)) << m.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, m.fix)) << m.args << "\n" << r.output;
  }
  // Where the command has no such option, or the word before is an option it lacks, CLI11 names
  // that one (session 30's trial: `inspect -f --output json` said the path was missing).
  // A command's options given before its name (session 30's trial) are named, with the command line
  // rewritten; words after `--` are listed in the order given, not as options (CLI11 reversed them).
  expect_usage_hints({
      {"-f p.txt generate --device cpu -n 2", "-f is given before `generate`: a command's options follow its name"},
      {"-f p.txt generate --device cpu -n 2", "write `dak generate -f p.txt --device cpu -n 2`"},
      {"--batch 8 bench attention --quick", "write `dak bench attention --batch 8 --quick`"},
      {"--device cpu generate -p hi", "where: dak generate"},
      {"generate --device cpu -n 2 -- -f p.txt", "not expected: -f p.txt (after --, which ends the options)"},
      {"generate --device cpu -n 2 -- The capital", "not expected: The capital"},
      // Session 31's trial: a parent command's options before its subcommand were dropped silently
      // (`dak bench -b 64 attention` ran the default batches); a value that looks like help, or that
      // names a command, is the option's value; the rewrite is quoted for the shell.
      {"bench -b 64 attention --dry-run", "write `dak bench attention -b 64 --dry-run`"},
      {"bench --quick attention", "--quick is given before `bench attention`"},
      {"-p -hi generate -n 2", "write `dak generate -p -hi -n 2`"},
      {"-p inspect generate -n 2", "-p is given before `generate`"},
      {"-fp.txt generate -n 2", "write `dak generate -fp.txt -n 2`"},
      {"-n=2 generate -p hi", "write `dak generate -n 2 -p hi`"},
      {"-p 'a`echo X`c' generate", "write `dak generate -p 'a`echo X`c'`"},
      {"-p \"it's\" generate", "write `dak generate -p 'it'\\''s'`"},
      // A short option with '=' keeps the '=' in CLI11: said, with both right forms.
      {"generate --device cpu -p=hi -n 2", "-p=hi reads '=hi' as its value"},
      {"generate --device cpu -n=2 -p hi", "(-n 2) or as --max-new-tokens=2"},
  });
  expect_usage_hints({
      {"inspect -f --output json", "dak inspect has no option -f"},
      {"generate --file -n 4", "did you mean --prompt-file?"},
      {"generate --stop -f -p hi", "dak generate has no option --stop"},
  });
  {
    // A -f that is another option's value is no file option: the prompt text "-f", written --prompt=-f
    // (trial 47: -p followed by an option name is refused, as the prompt is then most likely missing).
    RunResult r = run_dak("generate --device cpu --prompt=-f -n 2 --output json", false);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(nlohmann::json::parse(r.output)["sequences"][0]["prompt"], "-f") << r.output;
    r = run_dak("generate --device cpu -p -f -n 2");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "written --prompt=-f")) << r.output;
  }
  refused("--random-weights --model llama-2-7b -f " + a, {"--random-weights has no tokenizer", "where: --prompt-file"});
  fs::remove_all(dir);
}

TEST(CliGenerate, AFileNamedLikeAnotherEnginesFlagIsReadAsAFile) {
  // `-f -t` with a file named -t (session 31's trial): the word after -f is its value, not llama.cpp's
  // -t, which is refused only where it is an option.
  const fs::path dir = fs::path(::testing::TempDir()) / "dak_flag_named_files";
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const std::string name : {"-t", "-np"}) {
    {
      std::ofstream f(dir / name);
      f << "The sky is";
    }
    const RunResult r = dak::testing::run_shell("cd " + dir.string() + " && " + std::string(DAK_BINARY) +
                                                " generate --device cpu -n 2 --output json -f " + name + " 2>&1");
    ASSERT_EQ(r.exit_code, 0) << name << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "\"prompt\": \"The sky is\"")) << name << "\n" << r.output;
  }
  const RunResult t = run_dak("generate --device cpu -t 8 -p hi");
  EXPECT_EQ(t.exit_code, 2) << t.output;
  EXPECT_TRUE(contains(t.output, "dak has no -t")) << t.output;
  fs::remove_all(dir);
}

TEST(CliGenerate, OtherEnginesOptionNamesPointToDaks) {
  expect_usage_hints({
      {"generate --temp 0.5 -p hi", "did you mean --temperature?"},
      {"generate --n-predict 5 -p hi", "did you mean --max-new-tokens?"},
      {"generate --max-tokens 5 -p hi", "did you mean --max-new-tokens?"},
      {"generate --ctx-size 100 -p hi", "did you mean --max-context?"},
      {"generate --max-model-len 100 -p hi", "did you mean --max-context?"},
      {"perplexity --ctx-size 100 -f x", "did you mean --context?"},
      {"generate --n-gpu-layers 20 -p hi", "dak offloads bytes, not layers"},
      {"generate -ngl 20 -p hi", "dak offloads bytes, not layers"},
  });
}

}  // namespace

namespace {

// Trial 28b: llama.cpp's -t (threads) sampled at temperature 8 without a word; other engines'
// options without a counterpart say what dak does instead; an empty --system is a message (it
// replaces a template's default one, as in transformers); without -n, --max-context caps the new
// tokens instead of refusing the default 64.
TEST(CliGenerate, OtherEnginesHabitsAndMaxContextDefaults) {
  expect_usage_hints({
      {"generate -t 8 -p hi", "set OMP_NUM_THREADS"},
      {"generate --threads 8 -p hi", "set OMP_NUM_THREADS"},
      {"generate --gpu-memory-utilization 0.9 -p hi", "dak's --gpu-memory is a size, not a fraction"},
      {"generate --repeat-penalty 1.1 -p hi", "dak samples with --temperature, --top-k and --top-p only"},
      {"generate --jinja -p hi", "--chat renders the model's own chat template"},
      {"generate -c 100 -p hi", "did you mean --max-context?"},
      {"perplexity -c 100 -f x", "did you mean --context?"},
      {"perplexity -ngl 9 -f x", "dak generate, plan and bench take"},
      {"generate --system-prompt x -p hi", "did you mean --system?"},
  });
  const std::string base = "generate --device cpu --model " + kTiny + " --prompt-ids 1,50,60,70";
  RunResult r = run_dak(base + " --max-context 10", false);  // 6 new tokens, not a refusal of 64
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), ',') + 1, 6) << r.output;
  r = run_dak(base + " --max-context 10");  // and a notice says so (session 46's trial: silent)
  EXPECT_TRUE(contains(r.output, "dak: notice: at most 6 new tokens per sequence: what --max-context 10 leaves "
                                 "after the longest prompt (4 tokens)"))
      << r.output;
  EXPECT_FALSE(contains(run_dak(base + " --max-context 100").output, "new tokens per sequence")) << "64 fit: no notice";
  r = run_dak(base + " --max-context 10 -n 64");  // an explicit -n is the user's: refused
  EXPECT_EQ(r.exit_code, 1) << r.output;
  r = run_dak("generate --device cpu --model " + kTiny + " --prompt-ids 1 --system \"\" -n 1");
  EXPECT_TRUE(contains(r.output, "--system is a chat message, but --chat is not given")) << r.output;
  // `--system=` is `--system ''` (session 31's trial: it took the next word as the message).
  const RunResult eq = run_dak("generate --device cpu --model " + kTiny + " --prompt-ids 1 --system= -n 1");
  EXPECT_EQ(eq.exit_code, r.exit_code) << eq.output;
  EXPECT_EQ(eq.output, r.output);
  // llama.cpp's glued thread count, a parent's option the subcommand lacks, and help over the new
  // refusals.
  expect_usage_hints({
      {"generate -p hi -t4", "set OMP_NUM_THREADS"},
      {"bench -m llama-2-7b attention --dry-run", "-m is given before `bench attention`, which has no such option"},
  });
  const RunResult help = run_dak("-n 2 generate --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_TRUE(contains(help.output, "--max-new-tokens")) << help.output;
  // Session 32: help over a value CLI11 would refuse first (`-n=2`, a misspelled option), and the
  // help of the command named, not the top-level one.
  for (const char* line : {"generate -n=2 --help", "generate --temp 0.5 -h", "bench attention -b=x --help"}) {
    const RunResult r = run_dak(line);
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, std::string_view(line).starts_with("bench") ? "Usage: " : "--max-new-tokens"))
        << line << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, std::string_view(line).starts_with("bench") ? "bench attention" : "generate"))
        << line << "\n" << r.output;
  }
  // `--` before the subcommand: said, with the line without it.
  expect_usage_hints({
      {"-- generate -p hi", "`--` ends the options, so the words after it are arguments, not a subcommand"},
      {"-- generate -p hi", "leave the -- out: dak generate ..."},
      {"-- foo", "start with one of generate"},
      // Session 32's trial: a misspelled subcommand is said with --help on the line too (it showed
      // the parent's help), and a near miss is named.
      {"bench atention --help", "unknown subcommand 'atention' of dak bench"},
      {"bench atention --help", "did you mean attention?"},
      {"--help foo", "unknown subcommand 'foo'"},
      {"generat -p hi", "did you mean generate?"},
      {"bench gem", "did you mean gemm?"},
      // Session 34's trial: before an option the command lacks, the misspelled subcommand is named
      // (it named --quick).
      {"bench attenton --quick", "unknown subcommand 'attenton' of dak bench"},
      {"bench attenton --quick", "did you mean attention?"},
      // --help right after an option is its value (CLI11): the refusal says so first.
      {"generate -n --help", "an option takes the word after it as its value, --help too"},
      {"generate --output -h", "an option takes the word after it as its value, --help too"},
      // Session 33: after `--` a help or version flag is a word like any other: a command without
      // positional arguments refuses it (it showed the help), as it refuses any other word there.
      {"generate -p hi -- --help", "not expected: --help (after --, which ends the options)"},
      {"generate -p hi -- --help", "put --help before the --, or leave the -- out"},
      {"plan --model llama-2-7b -- -h", "not expected: -h (after --"},
      {"bench -- --version", "not expected: --version (after --"},
      {"bench -- --version", "--version is dak's own option: run `dak --version`"},
      // Session 33's second trial: an option given before `--` and again after it ("dak plan has no
      // option --batch"), or only after it ("--model is required").
      {"plan --model llama-2-7b --batch 8 -- --batch 4", "not expected: --batch 4 (after --"},
      {"plan --model llama-2-7b --batch 8 -- --batch 4", "leave the -- out: dak plan takes no arguments after it"},
      {"plan -- --model llama-2-7b", "not expected: --model llama-2-7b (after --"},
  });
  // inspect takes MODEL: a word `--help` after `--` is that path (no such file here), not the help.
  const RunResult model = run_dak("inspect -- --help");
  EXPECT_NE(model.exit_code, 0) << model.output;
  EXPECT_TRUE(contains(model.output, "'--help'")) << model.output;
  EXPECT_FALSE(contains(model.output, "Usage:")) << model.output;
}

}  // namespace
