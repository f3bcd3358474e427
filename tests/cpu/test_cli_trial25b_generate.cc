// A new-user trial's findings on the CLI: fixes that led into another refusal between --device, --plan
// and the offload flags; notices that named no flag or suggested what cannot run here.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cli_test_util.h"

namespace {

using dak::testing::RunResult;

RunResult run_dak(const std::string& args) {
  return dak::testing::run_shell(std::string(DAK_BINARY) + " " + args + " 2>&1");
}

const std::string kData = DAK_TEST_DATA_DIR;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool no_gpu() { return contains(run_dak("generate -p hi -n 1 --device auto").output, "no usable GPU"); }

TEST(CliTrial25bGenerate, DeviceCpuRefusesTheOffloadFlagsFirstAndNamesThem) {
  // The trial: a plan for llama-2-7b with --device cpu said "make a plan for this model", and the new
  // plan was then refused by --device cpu ("drop the offload flags").
  const std::string plan = ::testing::TempDir() + "/dak_trial25b_gen_7b_plan.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --offload direct --output json > " + plan).exit_code, 0);
  RunResult r = run_dak("generate --plan " + plan + " -p \"Hello there\" -n 3 --device cpu");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: --plan sets how bytes are placed between HBM and host memory, but "
                                 "--device cpu runs everything from host memory"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   drop --plan")) << r.output;
  EXPECT_FALSE(contains(r.output, "the plan was made for the model")) << r.output;
  std::remove(plan.c_str());
  // Every flag given is named.
  r = run_dak("generate -p hi -n 2 --device cpu --gpu-memory 1GiB --allocator uniform");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: --gpu-memory and --allocator set how bytes are placed")) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   drop --gpu-memory and --allocator")) << r.output;
  EXPECT_FALSE(contains(r.output, "the offload flags")) << r.output;
}

TEST(CliTrial25bGenerate, NoGpuFixWithOffloadFlagsSaysToDropThem) {
  if (!no_gpu()) GTEST_SKIP() << "a GPU is present: --device cuda runs";
  for (const std::string flags : {std::string("--gpu-memory 1GiB"), std::string("--allocator uniform")}) {
    const std::string flag = flags.substr(0, flags.find(' '));
    RunResult r = run_dak("generate -p \"Hello there\" -n 2 " + flags + " --device cuda");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "fix:   drop " + flag + " and use --device cpu for the CPU reference path, or use "
                                   "--device auto to fall back automatically (it ignores " + flag + " on the CPU)"))
        << r.output;
    // Both ways the fix gives run.
    r = run_dak("generate -p \"Hello there\" -n 2 --device cpu");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    r = run_dak("generate -p \"Hello there\" -n 2 " + flags + " --device auto");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(contains(r.output, "dak: notice: " + flag + " is ignored on the CPU path")) << r.output;
  }
}

TEST(CliTrial25bGenerate, PlanModeNoticeOnlyWhereThePlanIsUsed) {
  // The trial: "pd.json was made for --offload direct; running in that mode", then "no usable GPU; using
  // the CPU reference path", then "the offload flags are ignored on the CPU path".
  if (!no_gpu()) GTEST_SKIP() << "a GPU is present: the plan is used";
  const std::string plan = ::testing::TempDir() + "/dak_trial25b_gen_smol_plan.json";
  ASSERT_EQ(run_dak("plan --model " + kData + "/../../models/SmolLM2-135M-Instruct.Q4_1.gguf --batch 1 --prompt-len 2 --gen-len 3 "
                    "--offload direct --output json > " + plan)
                .exit_code,
            0);
  const RunResult r = run_dak("generate --plan " + plan + " -p \"Hello there\" -n 3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "was made for --offload direct")) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: notice: --plan is ignored on the CPU path")) << r.output;
  std::remove(plan.c_str());
}

TEST(CliTrial25bGenerate, EveryCommandReportsAMissingModelPathAsPlanDoes) {
  // The trial: generate said "no such file or folder / where: foo/bar" while plan named --model, the
  // working directory and, for configs/opt-30b.json, the shipped config's name.
  const std::string dir = ::testing::TempDir();
  const auto in_dir = [&](const std::string& args) {
    return dak::testing::run_shell("cd " + dir + " && " + std::string(DAK_BINARY) + " " + args + " 2>&1");
  };
  ASSERT_EQ(dak::testing::run_shell("echo 'Hello there, world.' > " + dir + "/dak_trial25b_gen_text.txt").exit_code, 0);
  for (const std::string cmd : {std::string("generate -p hi -m foo/bar"), std::string("inspect --model foo/bar"),
                                std::string("perplexity --file dak_trial25b_gen_text.txt -m foo/bar"), std::string("plan --model foo/bar")}) {
    const RunResult r = in_dir(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "dak: error: no such file or folder: 'foo/bar' (relative to the working directory "))
        << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "  where: --model")) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "  fix:   check the path")) << cmd << "\n" << r.output;
  }
  // A shipped config's file by path: its name, where the command can run it (--random-weights).
  RunResult r = in_dir("generate --prompt-ids 1 -n 1 -m configs/opt-30b.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   give the shipped config's name instead, which works from any folder: --model "
                                 "opt-30b --random-weights (or check the path)"))
      << r.output;
  // With a text prompt the hint gives the prompt as ids (a config has no tokenizer: --random-weights
  // with --prompt is refused), for the config's file path and for the config itself.
  r = in_dir("generate -p hi -n 1 -m configs/opt-30b.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--model opt-30b --random-weights --prompt-ids 1,2,3 in place of --prompt")) << r.output;
  r = dak::testing::run_shell(std::string(DAK_BINARY) + " generate -p hi -n 1 -m " + kData +
                              "/../../configs/opt-30b.json 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "is a model config (hyper-parameters only, no weights)")) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   add --random-weights --prompt-ids 1,2,3 in place of --prompt")) << r.output;
  // --chat with a config: the fix drops --chat (and --system) as well; followed, --random-weights with
  // --chat is refused with the fix that leads out, not back to --prompt (the second trial of session 26).
  r = in_dir("generate --chat --system s -p hi -n 1 -m configs/opt-30b.json");
  EXPECT_TRUE(contains(r.output, "--prompt-ids 1,2,3 in place of --prompt (without --chat and --system)")) << r.output;
  r = in_dir("generate --chat --system s --prompt-ids 1,2,3 -n 1 -m opt-30b --random-weights");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--random-weights has no tokenizer and no chat template\n  where: --chat (dak generate)\n"
                                 "  fix:   drop --chat and --system and pass the prompt as token ids with --prompt-ids"))
      << r.output;
  // A folder holding only a config.json is a config too.
  const std::string cfg_dir = dir + "/dak_trial26_config_only";
  ASSERT_EQ(dak::testing::run_shell("mkdir -p " + cfg_dir + " && cp " + kData + "/../../configs/opt-30b.json " + cfg_dir +
                                    "/config.json")
                .exit_code,
            0);
  r = in_dir("generate -p hi -n 1 -m " + cfg_dir);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "holds a model config (config.json) but no weights\n  where: --model (dak generate)\n"
                                 "  fix:   add --random-weights --prompt-ids 1,2,3 in place of --prompt"))
      << r.output;
  // Its weights are looked for as the checkpoint reader looks: a link to nothing is named as such.
  ASSERT_EQ(dak::testing::run_shell("ln -sf " + cfg_dir + "/nothing " + cfg_dir + "/model.safetensors").exit_code, 0);
  r = in_dir("generate -p hi -n 1 -m " + cfg_dir);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "a symbolic link to a file that does not exist\n  where: " + cfg_dir +
                                 "/model.safetensors"))
      << r.output;
  // PyTorch weights beside the config (trial 27: "no weights"): named, with the conversion; without the
  // config, the checkpoint reader names them too.
  ASSERT_EQ(dak::testing::run_shell("rm " + cfg_dir + "/model.safetensors && touch " + cfg_dir +
                                    "/pytorch_model.bin " + cfg_dir + "/training_args.bin")
                .exit_code,
            0);
  for (const std::string& cmd : {std::string("generate -p hi -n 1 -m "), std::string("inspect ")}) {
    r = in_dir(cmd + cfg_dir);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "holds a model config (config.json) and weights dak does not read "
                                   "(pytorch_model.bin)"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "fix:   dak reads safetensors and GGUF weights, not pytorch_model.bin: convert"))
        << r.output;
  }
  ASSERT_EQ(dak::testing::run_shell("rm " + cfg_dir + "/config.json").exit_code, 0);
  r = in_dir("inspect " + cfg_dir);
  EXPECT_TRUE(contains(r.output, "or .gguf, only pytorch_model.bin")) << r.output;
  ASSERT_EQ(dak::testing::run_shell("rm -rf " + cfg_dir).exit_code, 0);
  r = in_dir("bench --batch 1 -m configs/opt-30b.json");
  EXPECT_TRUE(contains(r.output, "--model opt-30b")) << r.output;
  // inspect and perplexity cannot run a shipped config: no such hint there.
  for (const std::string cmd : {std::string("inspect --model configs/opt-30b.json"),
                                std::string("perplexity --file dak_trial25b_gen_text.txt -m configs/opt-30b.json")}) {
    r = in_dir(cmd);
    EXPECT_TRUE(contains(r.output, "no such file or folder: 'configs/opt-30b.json'")) << cmd << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "opt-30b --random-weights")) << cmd << "\n" << r.output;
  }
}

TEST(CliTrial25bGenerate, RandomWeightsWithoutModelTakeTheDefaultModelsConfig) {
  // The trial: --random-weights without --model failed "no model given", though --help and README say
  // --model defaults to $DAK_MODEL, else SmolLM2-135M-Instruct.
  const std::string model = kData + "/../../models/SmolLM2-135M-Instruct.Q4_1.gguf";
  for (const std::string env : {std::string(""), "DAK_MODEL=" + model + " ", std::string("DAK_MODEL= ")}) {
    for (const std::string args : {std::string("generate --random-weights --prompt-ids 1 -n 1"),
                                   std::string("bench --random-weights --batch 8")}) {
      const RunResult r = dak::testing::run_shell(env + std::string(DAK_BINARY) + " " + args + " 2>&1");
      EXPECT_FALSE(contains(r.output, "no model given")) << env << args << "\n" << r.output;
      if (contains(r.output, "dak: error:")) {  // no GPU here: refused for that, not for the model
        EXPECT_TRUE(contains(r.output, "cannot run --random-weights") || contains(r.output, "needs a Hopper GPU"))
            << env << args << "\n" << r.output;
      } else {
        EXPECT_EQ(r.exit_code, 0) << env << args << "\n" << r.output;
      }
    }
  }
  // $DAK_MODEL naming nothing is refused as such, as without --random-weights.
  const RunResult r = dak::testing::run_shell("DAK_MODEL=/nonexistent/m.gguf " + std::string(DAK_BINARY) +
                                              " generate --random-weights --prompt-ids 1 -n 1 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "$DAK_MODEL names '/nonexistent/m.gguf', which does not exist")) << r.output;
}

// Every line of a batch's stdout belongs to one sequence: "[i] " starts one, further lines are indented
// (an empty line stays empty: no trailing blanks).
void expect_framed(const std::string& out, const std::string& what) {
  size_t start = 0;
  while (start < out.size()) {
    const size_t end = out.find('\n', start);
    const std::string line = out.substr(start, end == std::string::npos ? std::string::npos : end - start);
    EXPECT_TRUE(line.empty() || line.rfind("[", 0) == 0 || line.rfind("    ", 0) == 0)
        << what << ": '" << line << "'\n" << out;
    EXPECT_FALSE(!line.empty() && line.find_first_not_of(' ') == std::string::npos)
        << what << ": a line of blanks only\n" << out;
    if (end == std::string::npos) break;
    start = end + 1;
  }
}

TEST(CliTrial25bGenerate, ChatBatchPrintsOnlyTheRepliesAndMultiLineTextsKeepTheirFraming) {
  // The trial: `[0] HiBonjour,\n\nC\n[1] ByeJe m'aime.`: the user's chat prompt glued to the reply, and
  // the reply's further lines without a marker.
  const std::string dak = std::string(DAK_BINARY) + " generate ";
  RunResult r = dak::testing::run_shell(dak + "--chat --system \"Answer in French.\" -p Hi -p Bye -n 6 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.output.rfind("[0] Bonjour,\n\n    C\n[1] Je m'aime.", 0) == 0) << r.output;
  EXPECT_FALSE(contains(r.output, "HiBonjour")) << r.output;
  expect_framed(r.output, "chat batch");
  // Plain completion echoes each prompt; its continuation's lines are indented too.
  r = dak::testing::run_shell(dak + "-p \"List:\" -p \"Poem:\" -n 8 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.output.rfind("[0] List:\n    ", 0) == 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\n[1] Poem:")) << r.output;
  expect_framed(r.output, "batch");
}

}  // namespace
