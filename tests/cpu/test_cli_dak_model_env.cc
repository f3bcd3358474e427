// A new-user trial's findings on how the CLI names a model it did not get from --model: a model from
// $DAK_MODEL was refused as "'' is a model config" with "where: --model"; a config.json beside its
// weights was told to add --random-weights (GPU only) instead of passing its folder; dak plan ignored
// $DAK_MODEL, which the README says --model falls back to; a DAK_CONFIGS_DIR naming a file "does not
// exist".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::contains;
using dak::testing::RunResult;
using dak::testing::run_dak_env;

const std::string kData = DAK_TEST_DATA_DIR;
// A checkpoint folder: config.json beside model.safetensors.
const std::string kWeightsDir = kData + "/safetensors/tiny_llama_single";

// Scratch files under the test's temp folder: a model config alone in its folder, a config beside a
// .gguf file, and a text file.
struct Scratch {
  // One folder a test: ctest runs the tests of this file side by side.
  fs::path root = fs::path(::testing::TempDir()) /
                  (std::string("dak_model_env_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::path config_only = root / "config_only" / "config.json";
  fs::path gguf_dir = root / "gguf_dir";
  fs::path text = root / "t.txt";
  Scratch() {
    fs::remove_all(root);
    fs::create_directories(config_only.parent_path());
    fs::create_directories(gguf_dir);
    fs::copy_file(kWeightsDir + "/config.json", config_only);
    fs::copy_file(kWeightsDir + "/config.json", gguf_dir / "config.json");
    fs::create_symlink(kData + "/gguf/tiny_llama.gguf", gguf_dir / "model.gguf");
    std::ofstream(text) << "hello\n";
  }
  ~Scratch() { fs::remove_all(root); }
};

TEST(CliDakModelEnv, ARefusedModelFromDakModelIsNamedWithTheVariable) {
  const Scratch s;
  const std::string config = s.config_only.string();
  for (const std::string cmd :
       {std::string("generate --prompt-ids 1 -n 1"), std::string("inspect"), "perplexity -f " + s.text.string()}) {
    // A model config: its path, not '', and DAK_MODEL as the place (it said "where: --model").
    RunResult r = run_dak_env("DAK_MODEL=" + config, cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "dak: error: '" + config + "' is a model config (hyper-parameters only, no weights)\n"
                                   "  where: DAK_MODEL (environment)\n"))
        << cmd << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "''")) << cmd << "\n" << r.output;
    if (cmd == "inspect") {  // its fix named `dak plan --model ''`
      EXPECT_TRUE(contains(r.output, "(`dak plan --model " + config + "` plans its config)")) << r.output;
    }
    // A folder without a model, and a file that is no checkpoint: DAK_MODEL named with the path.
    for (const fs::path& p : {s.root, s.text}) {
      r = run_dak_env("DAK_MODEL=" + p.string(), cmd);
      EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "  where: DAK_MODEL (environment): " + p.string() + "\n")) << cmd << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "  fix:   point DAK_MODEL at a Hugging Face model folder (config.json + "
                                     "*.safetensors), a .safetensors file with config.json beside it, or a .gguf "
                                     "file; or unset it for the default model"))
          << cmd << "\n" << r.output;
    }
  }
  // --model is named as before.
  const RunResult r = run_dak_env("", "generate --prompt-ids 1 -n 1 --model " + config);
  EXPECT_TRUE(contains(r.output, "is a model config (hyper-parameters only, no weights)\n  where: --model (dak generate)\n"))
      << r.output;
}

TEST(CliDakModelEnv, AConfigBesideItsWeightsPointsAtItsFolder) {
  const Scratch s;
  // The weights are safetensors or a .gguf file: the folder is the model (it said "add --random-weights").
  for (const std::string dir : {kWeightsDir, s.gguf_dir.string()}) {
    const std::string config = dir + "/config.json";
    for (const std::string cmd : {"generate --prompt-ids 1 -n 1 --model " + config, "inspect " + config,
                                  "perplexity -f " + s.text.string() + " --model " + config}) {
      const RunResult r = run_dak_env("", cmd);
      EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "is a model config (hyper-parameters only, no weights)")) << cmd << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "  fix:   pass its folder, which holds the weights: --model " + dir + "\n"))
          << cmd << "\n" << r.output;
      EXPECT_FALSE(contains(r.output, "--random-weights")) << cmd << "\n" << r.output;
    }
    const RunResult r = run_dak_env("DAK_MODEL=" + config, "inspect");
    EXPECT_TRUE(contains(r.output, "  fix:   point DAK_MODEL at its folder, which holds the weights: DAK_MODEL=" + dir))
        << r.output;
    // The fix, followed, runs.
    EXPECT_EQ(run_dak_env("", "generate --prompt-ids 1 -n 1 --device cpu --model " + dir).exit_code, 0) << dir;
    EXPECT_EQ(run_dak_env("DAK_MODEL=" + dir, "inspect").exit_code, 0) << dir;
  }
  // A config alone keeps the --random-weights advice, which says it needs a GPU.
  const RunResult r = run_dak_env("", "generate --prompt-ids 1 -n 1 --model " + s.config_only.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "  fix:   add --random-weights to run it with deterministic random weights (dak "
                                 "generate / dak bench; GPU only: random weights do not run on the CPU), or pass a "
                                 "checkpoint folder or .gguf file"))
      << r.output;
}

TEST(CliDakModelEnv, PlanTakesTheModelFromDakModel) {
  const Scratch s;
  // The README: --model, when omitted, falls back to $DAK_MODEL (dak plan said "--model is required").
  RunResult r = run_dak_env("DAK_MODEL=llama-2-7b", "plan", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "model     llama-2-7b (llama)")) << r.output;
  r = run_dak_env("DAK_MODEL=" + s.config_only.string(), "plan", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "model     config_only (llama)")) << r.output;
  // --model wins over it.
  r = run_dak_env("DAK_MODEL=/nonexistent/dak-model", "plan --model llama-2-7b", /*merge_stderr=*/false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // A DAK_MODEL that names nothing is refused as the other commands refuse it.
  r = run_dak_env("DAK_MODEL=/nonexistent/dak-model", "plan");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "$DAK_MODEL names '/nonexistent/dak-model', which does not exist\n"
                                 "  where: DAK_MODEL (environment)"))
      << r.output;
  // Neither: a plan has no default model; the fix names both ways.
  r = run_dak_env("env -u DAK_MODEL", "plan --batch 8");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: --model is required\n  where: dak plan\n"
                                 "  fix:   pass --model CONFIG (e.g. --model llama-2-7b) or set DAK_MODEL"))
      << r.output;
}

TEST(CliDakModelEnv, AConfigsDirThatIsAFileIsNamedSo) {
  const Scratch s;
  const RunResult r = run_dak_env("DAK_CONFIGS_DIR=" + s.text.string(), "plan --model llama-2-7b");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "(none found: the path is a file, not a folder; DAK_CONFIGS_DIR names it: point it "
                                 "at a folder of configs, or unset it for the shipped configs)"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "does not exist")) << r.output;
}

}  // namespace
