// The 47th new-user trial's findings on the command line and checkpoint folders: -p followed by an
// option name took the option for the prompt, and safetensors shards without their index were
// reported as "no weights". (Its other findings have tests beside the code: test_cpu_ops.cc,
// test_cli_text_io.cc, test_tokenizer_errors.cc, test_checkpoint.cc.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.h"
#include "core/error.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::contains;
using dak::testing::RunResult;

const std::string kTiny = std::string(DAK_TEST_DATA_DIR) + "/hf_parity/llama_gqa";  // no tokenizer

RunResult run_dak(const std::string& args, bool merge_stderr = true) {
  return dak::testing::run_dak_env("", args, merge_stderr);
}

TEST(CliTrial47, APromptFlagFollowedByAnOptionNameIsRefused) {
  for (const std::string& args : {std::string("generate -n 3 -p --chat"), std::string("generate -p -n 2"),
                                  std::string("generate --prompt --max-new-tokens 2")}) {
    const RunResult r = run_dak(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "where its text belongs: the prompt is missing")) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "where: -p (dak generate)") || contains(r.output, "where: --prompt (dak generate)"))
        << r.output;
  }
  // A short option glued to its value (-n3, as CLI11 reads it) is refused too; a -p that is the value
  // of the option before it (--system -p) is no prompt option (trial 47b).
  for (const std::string& args : {std::string("generate -p -n3"), std::string("generate -p -fx")}) {
    const RunResult r = run_dak(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "the prompt is missing")) << args << "\n" << r.output;
  }
  {
    // -f's value: a file named -p (it exists here), read as the prompt file.
    const fs::path dir = fs::path(::testing::TempDir()) / "dak_trial47_dash_p";
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "-p") << "The sky is";
    const RunResult r = dak::testing::run_shell("cd " + dak::shell_word(dir.string()) + " && " +
                                                std::string(DAK_BINARY) + " generate --device cpu -f -p -n 1 2>/dev/null");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.substr(0, 10), "The sky is") << r.output;
  }
  // --system is a text option as well (trial 47c: --system --temperature took "--temperature" as the
  // system message); --system=WORD gives such a word.
  {
    RunResult r = run_dak("generate --chat --system --temperature 0.5 -p hi");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "--system is followed by the option --temperature where its text belongs: the "
                                   "system message is missing"))
        << r.output;
    r = run_dak("generate --device cpu --chat --system=--temperature -p hi -n 1", false);
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  // Text that only looks like an option is a prompt; a prompt that is an option's name uses --prompt=
  // (the default model, which has a tokenizer; its echo of the prompt starts the output).
  for (const std::string& prompt : {std::string("-5 degrees"), std::string("--chat")}) {
    const RunResult r = run_dak("generate --device cpu --prompt=" + dak::shell_word(prompt) + " -n 1", false);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.substr(0, prompt.size()), prompt) << r.output;
  }
  RunResult r = run_dak("generate --device cpu -p '-5 degrees' -n 1", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 10), "-5 degrees") << r.output;
  // A short option glued to '=' and a value that starts with '-' (-p=--chat): its fix names only the
  // long form, since -p --chat is refused above.
  r = run_dak("generate --device cpu -p=--chat -n 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "give the value as --prompt=--chat")) << r.output;
}

TEST(CliTrial47, SafetensorsShardsWithoutTheirIndexAreNamed) {
  const fs::path dir = fs::path(::testing::TempDir()) / "dak_trial47_shards";
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy_file(kTiny + "/config.json", dir / "config.json");
  fs::copy_file(kTiny + "/model.safetensors", dir / "model-00002-of-00002.safetensors");
  fs::copy_file(kTiny + "/model.safetensors", dir / "model-00001-of-00002.safetensors");
  for (const std::string& cmd : {std::string("generate --device cpu --prompt-ids 1 -n 1"), std::string("inspect")}) {
    const RunResult r = run_dak(cmd + " --model " + dir.string());
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "holds safetensors shards (model-00001-of-00002.safetensors ...) but no "
                                   "model.safetensors.index.json"))
        << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "restore model.safetensors.index.json")) << r.output;
  }
  // A single safetensors file of another name is no shard: not called one.
  fs::remove(dir / "model-00001-of-00002.safetensors");
  fs::remove(dir / "model-00002-of-00002.safetensors");
  fs::copy_file(kTiny + "/model.safetensors", dir / "consolidated.safetensors");
  const RunResult r = run_dak("inspect --model " + dir.string());
  EXPECT_FALSE(contains(r.output, "holds safetensors shards")) << r.output;
  EXPECT_TRUE(contains(r.output, "holds consolidated.safetensors, but a folder's weights are read from "
                                 "model.safetensors"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "pass the file itself (--model " + (dir / "consolidated.safetensors").string()))
      << r.output;
  // Given the file itself, it runs.
  const RunResult ok = run_dak("inspect --model " + (dir / "consolidated.safetensors").string());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

}  // namespace

namespace {

TEST(CliTrial47, APromptFlagFollowedByAnotherToolsOptionIsRefused) {
  // llama.cpp's -t and --temp are no dak options: -p -t took "-t" as the prompt (trial 47d). Any word
  // shaped like an option (-x, -cnv, -t4, -t=4, --word, --top_k, --word=value) after a text option is
  // refused as well, with what dak takes instead where it knows (its review).
  struct Case {
    std::string args, hint;
  };
  for (const Case& c : {Case{"generate -p -t 4", "for -t: the CPU path uses OpenMP: set OMP_NUM_THREADS"},
                        Case{"generate -p --temp 0.7", "for --temp, did you mean --temperature?"},
                        Case{"generate -p -cnv", "for -cnv: --chat renders the model's own chat template"},
                        Case{"generate -p -t4", ""}, Case{"generate -p -t=4", ""},
                        Case{"generate -p --top_k 40", ""}, Case{"generate -p --max_new_tokens 5", ""},
                        Case{"generate --chat --system --sys-prompt=x -p hi", ""}}) {
    const RunResult r = run_dak(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "which looks like an option (dak generate has no such option), where its text "
                                   "belongs"))
        << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "is missing")) << r.output;
    EXPECT_TRUE(contains(r.output, c.hint)) << c.args << "\n" << r.output;
  }
  // A short option of dak glued to a value (llama.cpp's -ngl reads as -n gl) says how dak reads it,
  // and what dak takes instead of -ngl.
  RunResult r = run_dak("generate -p -ngl 99");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "-p is followed by -ngl, which dak reads as the option -n with a value, where its "
                                 "text belongs: the prompt is missing"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "for -ngl: dak offloads bytes, not layers")) << r.output;
  // The fix's literal form runs: --prompt=-t is the prompt "-t"; "-", "--" and "-5" stay prompts.
  r = run_dak("generate --device cpu --prompt=-t -n 1", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, 2), "-t") << r.output;
  for (const std::string prompt : {"-", "-5"}) {
    r = run_dak("generate --device cpu -p " + prompt + " -n 1", false);
    ASSERT_EQ(r.exit_code, 0) << prompt << "\n" << r.output;
    EXPECT_EQ(r.output.substr(0, prompt.size()), prompt) << r.output;
  }
  // A text with spaces that starts like a short option of dak (-m, -n, -f) is the text (trial 48: it
  // was refused as -m with a glued value), for --system too.
  for (const std::string prompt : {"-mild weather is", "-n 3 apples are left", "-fold change in"}) {
    r = run_dak("generate --device cpu -n 1 -p " + dak::shell_word(prompt), false);
    ASSERT_EQ(r.exit_code, 0) << prompt << "\n" << r.output;
    EXPECT_EQ(r.output.substr(0, prompt.size()), prompt) << r.output;
  }
  r = run_dak("generate --device cpu -n 1 --chat --system '-m flag: be brief' -p hi");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // ... but not an option of dak given with '=' and spaces, nor -f glued to a file that exists
  // (the review: `-p --system="Be brief"` became the prompt, and the system message was lost).
  r = run_dak("generate --chat -p --system='Be brief' -n 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "-p is followed by the option --system=Be brief where its text belongs")) << r.output;
  {
    const fs::path file = fs::path(::testing::TempDir()) / "dak trial48 prompts.txt";
    std::ofstream(file) << "The sky is";
    r = run_dak("generate -p " + dak::shell_word("-f" + file.string()) + " -n 1");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "which dak reads as the option -f with a value")) << r.output;
    fs::remove(file);
  }
  r = run_dak("generate --device cpu -n 1 -p --", false);  // "--" ends the options: no prompt given then
  EXPECT_EQ(r.output.find("looks like an option"), std::string::npos) << r.output;
}

}  // namespace
