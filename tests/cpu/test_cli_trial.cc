// A new-user trial's findings on `dak generate`, `dak plan` and `dak profile`: offload checks before
// the GPU for every model source, fix lines in the command's own terms that never overwrite the
// user's files, plan-file ranges, number overflow, help text, files passed to the wrong option,
// ignored sampling flags, dangling links and sweep steps.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.h"

namespace {

using dak::testing::RunResult;

RunResult run_dak(const std::string& args) {
  return dak::testing::run_dak_env("", args);
}

const std::string kData = DAK_TEST_DATA_DIR;
const std::string kTiny = kData + "/hf_parity/llama_gqa";

using dak::testing::contains;

TEST(CliTrial, AnOffloadBudgetThePlannerRefusesIsRefusedBeforeTheGpuForEveryModelSource) {
  // The trial: a real checkpoint with --device cuda said "cannot run on the GPU" instead of the
  // planner's refusal, and --device auto ran with "the offload flags are ignored" (exit 0); only
  // --random-weights was checked before the GPU.
  const std::string gen = "generate --model " + kTiny + " --prompt-ids 1,2 -n 2 ";
  const struct {
    std::string flags, says;
  } cases[] = {
      {"--device cuda --gpu-memory 100KiB --offload-ratio 0", "this offload ratio leaves"},
      {"--device auto --gpu-memory 100KiB --offload-ratio 0", "this offload ratio leaves"},
      {"--gpu-memory 1KiB", "an HBM budget of 1.00 KiB cannot hold"},
      {"--cpu-offload-gb 100000", "--cpu-offload-gb 100000 asks for"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(gen + c.flags);
    EXPECT_EQ(r.exit_code, 1) << c.flags << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.flags << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "cannot run on the GPU")) << c.flags << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "offload flags are ignored")) << c.flags << ": " << r.output;
  }
}

TEST(CliTrial, GenerateFixLinesNameGeneratesOwnOptions) {
  // The trial: "fix: ... or lower --batch / --prompt-len / --gen-len", flags of dak plan only.
  // The command's terms are given to the planner (ShapeTerms), not patched into its text.
  for (const std::string args :
       {std::string("generate --random-weights --model llama-2-7b --prompt-ids 1,2,3 --gpu-memory 1GiB "
                    "--offload-ratio 0"),
        "generate --model " + kTiny + " --prompt-ids 1,2 -n 2 --gpu-memory 1KiB"}) {
    const RunResult r = run_dak(args);
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.output;
    const size_t fix = r.output.find("fix:");
    ASSERT_NE(fix, std::string::npos) << args << ": " << r.output;
    const std::string tail = r.output.substr(fix);
    for (const char* flag : {"--batch", "--prompt-len", "--gen-len"}) {
      EXPECT_FALSE(contains(tail, flag)) << args << ": " << r.output;
    }
    // One prompt: fewer prompts is no fix (the session trial was told "give fewer prompts" for one).
    EXPECT_FALSE(contains(tail, "fewer prompts")) << args << ": " << r.output;
    EXPECT_TRUE(contains(tail, "give a shorter prompt")) << args << ": " << r.output;
  }
  {
    const RunResult two = run_dak("generate --model " + kTiny + " --prompt-ids 1,2 --prompt-ids 3 -n 2 --gpu-memory 1KiB");
    EXPECT_EQ(two.exit_code, 1) << two.output;
    EXPECT_TRUE(contains(two.output, "or give fewer prompts at once (--max-batch) or a shorter prompt")) << two.output;
  }
  const RunResult r = run_dak(
      "generate --random-weights --model llama-2-7b --prompt-ids 1,2,3 --gpu-memory 1GiB --offload-ratio 0");
  EXPECT_TRUE(contains(r.output, "fewer new tokens (--max-new-tokens / -n)")) << r.output;
  // The planner's own shape checks too (they were rewritten by text matching, which missed them).
  std::string ids = "1";
  for (int i = 1; i < 4100; ++i) ids += ",1";
  const RunResult context =
      run_dak("generate --random-weights --model llama-2-7b --prompt-ids " + ids + " --gpu-memory 20GiB");
  EXPECT_EQ(context.exit_code, 1) << context.output;
  // Since session 34 generate's own request check runs before the weights load and the plan, in
  // generate's terms too.
  EXPECT_TRUE(contains(context.output, "where: --max-new-tokens / prompt")) << context.output;
  EXPECT_TRUE(contains(context.output, "fix:   shorten the prompt to at most 4032 tokens")) << context.output;
  EXPECT_FALSE(contains(context.output, "--prompt-len")) << context.output;
  // Session 34's trial: a 16-token prompt with --max-context 8 and no -n was told to use
  // "--max-new-tokens 7 or less" (no help: the prompt alone fills the context), after the load.
  const RunResult fills = run_dak("generate --model " + kTiny + " --prompt-ids 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 "
                                  "--max-context 8");
  EXPECT_EQ(fills.exit_code, 1) << fills.output;
  EXPECT_TRUE(contains(fills.output, "the prompt has 16 tokens, more than the --max-context of 8 tokens"))
      << fills.output;
  EXPECT_TRUE(contains(fills.output, "shorten the prompt to at most 7 tokens")) << fills.output;
  EXPECT_FALSE(contains(fills.output, "--max-new-tokens 7")) << fills.output;
  // dak plan keeps its own flags.
  const RunResult plan = run_dak("plan --model llama-2-7b --offload-ratio 0 --gpu-memory 1GiB");
  EXPECT_EQ(plan.exit_code, 1) << plan.output;
  EXPECT_TRUE(contains(plan.output, "lower --batch, --prompt-len or --gen-len")) << plan.output;
}

TEST(CliTrial, AFixNeverSuggestsOverwritingTheUsersPlanFile) {
  // The trial: `dak generate -p Hi -n 4 --plan plan.json` (a plan for another model) suggested
  // "dak plan ... --output json > plan.json", which overwrites the user's plan.
  const std::string dir = ::testing::TempDir() + "dak_trial_plan_name";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 1 --prompt-len 2 --gen-len 2 --output json > " + dir +
                    "/plan.json 2>/dev/null")
                .exit_code,
            0);
  const std::string gen = "generate --prompt-ids 1,2 -n 4 --plan plan.json";
  RunResult r = dak::testing::run_shell("cd " + dir + " && " + DAK_BINARY + " " + gen + " 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--output json > plan-SmolLM2-135M-Instruct.Q4_1.json")) << r.output;
  EXPECT_FALSE(contains(r.output, "> plan.json")) << r.output;
  // A file of that name exists: the next free one.
  std::ofstream(dir + "/plan-SmolLM2-135M-Instruct.Q4_1.json") << "{}";
  r = dak::testing::run_shell("cd " + dir + " && " + DAK_BINARY + " " + gen + " 2>&1");
  EXPECT_TRUE(contains(r.output, "--output json > plan-SmolLM2-135M-Instruct.Q4_1-2.json")) << r.output;
  // In the plan's folder when it is elsewhere.
  r = run_dak("generate --prompt-ids 1,2 -n 4 --plan " + dir + "/plan.json");
  EXPECT_TRUE(contains(r.output, "> " + dir + "/plan-SmolLM2-135M-Instruct.Q4_1-2.json")) << r.output;
  std::filesystem::remove_all(dir);
}

TEST(CliTrial, PlanFileFieldsOutOfRangeAreRefusedNamingTheFileAndField) {
  // The trial: a plan with capacity.hbm_budget_bytes -5 or inputs.max_context 10000000 ran (exit 0).
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "dak_trial_plan_ranges.json", edited = dir + "dak_trial_plan_ranges_edited.json";
  ASSERT_EQ(run_dak("plan --model " + kTiny + " --batch 1 --prompt-len 2 --gen-len 2 --output json > " + good +
                    " 2>/dev/null")
                .exit_code,
            0);
  const nlohmann::json plan = nlohmann::json::parse(std::ifstream(good));
  const struct {
    const char* section;
    const char* field;
    nlohmann::json value;
    const char* says;
  } cases[] = {
      {"capacity", "hbm_budget_bytes", -5, "must be a positive number of bytes"},
      {"capacity", "kv_bytes", -1, "must not be negative"},
      {"capacity", "global_ratio", 1.5, "must be a fraction in [0, 1]"},
      {"inputs", "max_context", 10000000, "must be prompt_len + gen_len (4)"},
      {"inputs", "context_len", 0, "must be in [1, max_context]"},
      {"inputs", "gen_len", int64_t(1) << 40, "must be in [1, 16777216]"},
      {"inputs", "gpu_memory_bytes", -5, "must be a positive number of bytes"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = plan;
    j[c.section][c.field] = c.value;
    std::ofstream(edited) << j.dump();
    const RunResult r = run_dak("generate --model " + kTiny + " --prompt-ids 1,2 -n 2 --plan " + edited);
    EXPECT_EQ(r.exit_code, 1) << c.field << ": " << r.output;
    EXPECT_TRUE(contains(r.output, std::string("plan field '") + c.field + "' " + c.says)) << c.field << ": "
                                                                                          << r.output;
    EXPECT_TRUE(contains(r.output, "where: " + edited + ": " + c.section)) << c.field << ": " << r.output;
  }
  std::remove(good.c_str());
  std::remove(edited.c_str());
}

TEST(CliTrial, APlanFileOffloadRatioOutsideAFractionIsRefused) {
  // The session-35 trial: inputs.offload_ratio 7 in a hand-edited plan was accepted.
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "dak_trial_plan_ratio.json", edited = dir + "dak_trial_plan_ratio_edited.json";
  ASSERT_EQ(run_dak("plan --model " + kTiny + " --batch 1 --prompt-len 2 --gen-len 2 --offload-ratio 0.3 --output json > " +
                    good + " 2>/dev/null")
                .exit_code,
            0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(good));
  for (const double bad : {7.0, -0.1}) {
    j["inputs"]["offload_ratio"] = bad;
    std::ofstream(edited) << j.dump();
    const RunResult r = run_dak("generate --model " + kTiny + " --prompt-ids 1,2 -n 2 --plan " + edited);
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "offload_ratio")) << bad << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "must be a fraction in [0, 1] or null")) << bad << ": " << r.output;
  }
  std::remove(good.c_str());
  std::remove(edited.c_str());
}

TEST(CliTrial, UnknownPlanFieldsAreNamedInANotice) {
  // Session 23's leftover: a misspelt or extra field of a hand-edited plan was ignored silently.
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "dak_trial_plan_unknown.json", edited = dir + "dak_trial_plan_unknown_edited.json";
  ASSERT_EQ(run_dak("plan --model " + kTiny + " --batch 1 --prompt-len 2 --gen-len 2 --output json > " + good +
                    " 2>/dev/null")
                .exit_code,
            0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(good));
  j["comment"] = "mine";
  j["inputs"]["gpu_memroy_bytes"] = 5;
  j["operators"][1]["host_rowz"] = 0;
  std::ofstream(edited) << j.dump();
  const RunResult r = run_dak("generate --model " + kTiny + " --prompt-ids 1,2 -n 2 --plan " + edited);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"'comment'", "'inputs.gpu_memroy_bytes'", "'operators[1].host_rowz'"}) {
    EXPECT_TRUE(contains(r.output, edited + ": unknown field " + f + " ignored")) << f << ": " << r.output;
  }
  EXPECT_EQ(r.output.find("unknown field 'comment'"), r.output.rfind("unknown field 'comment'")) << "one notice per field";
  // The planner's own file: no notice.
  const RunResult clean = run_dak("generate --model " + kTiny + " --prompt-ids 1,2 -n 2 --plan " + good);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_FALSE(contains(clean.output, "unknown field")) << clean.output;
  std::remove(good.c_str());
  std::remove(edited.c_str());
}

TEST(CliTrial, NumbersBeyondDoublesRangeAreOutOfRangeNotNotANumber) {
  // The trial: `--temperature 1e400` (and --top-p, --offload-ratio, --cpu-offload-gb) said "is not a
  // number" and exited 2, while `-n 99999999999999999999` said "too large" and exited 1 (README: a
  // value out of range exits 1).
  const std::string gen = "generate --model " + kTiny + " --device cpu --prompt-ids 1,2 ";
  const struct {
    std::string args, says;
  } cases[] = {
      {"--temperature 1e400", "--temperature: '1e400' is too large"},
      {"--top-p 1e400", "--top-p: '1e400' is too large"},
      {"--top-p 1e-400", "--top-p: '1e-400' is too small"},
      {"--cpu-offload-gb 1e400", "--cpu-offload-gb: '1e400' is too large"},
      {"--cpu-offload-gb -1e400", "--cpu-offload-gb: '-1e400' is too small"},
      // (--device cpu refuses the offload flags themselves: see CliTrial25bGenerate.)
      {"--max-new-tokens 99999999999999999999", "--max-new-tokens: '99999999999999999999' is too large"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(gen + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.args << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "not a number")) << c.args << ": " << r.output;
  }
  const RunResult ratio = run_dak("generate --model " + kTiny + " --device auto --prompt-ids 1,2 --offload-ratio 1e400");
  EXPECT_EQ(ratio.exit_code, 1) << ratio.output;
  EXPECT_TRUE(contains(ratio.output, "'1e400' is not a fraction in [0, 1]")) << ratio.output;
  const RunResult plan = run_dak("plan --model llama-2-7b --offload-ratio 1e400");
  EXPECT_EQ(plan.exit_code, 1) << plan.output;
  EXPECT_TRUE(contains(plan.output, "'1e400' is not a fraction in [0, 1]")) << plan.output;  // as generate says
  // Text that is not a number is still a usage error;
  // an infinity written out is out of range, as 1e400 is.
  EXPECT_EQ(run_dak(gen + "--temperature nan").exit_code, 2);
  const RunResult inf = run_dak(gen + "--temperature inf");
  EXPECT_EQ(inf.exit_code, 1) << inf.output;
  EXPECT_TRUE(contains(inf.output, "--temperature: 'inf' is too large\n")) << inf.output;
  // A nonzero number below double's normal range is refused as too small to hold, not taken as the
  // 0 it rounds to (session 35's trial: `--temperature 1e-400` ran greedy with a notice about
  // temperature 0, and `--offload-ratio 1e-400` planned 0 % without a word).
  for (const std::string tiny_value : {"1e-400", "1e-310"}) {
    const RunResult tiny = run_dak(gen + "-n 1 --temperature " + tiny_value);
    EXPECT_EQ(tiny.exit_code, 1) << tiny.output;
    EXPECT_TRUE(contains(tiny.output, "--temperature: '" + tiny_value + "' is too small to hold")) << tiny.output;
  }
  EXPECT_EQ(run_dak(gen + "-n 1 --temperature 0.000").exit_code, 0);
  const RunResult tiny_ratio = run_dak("plan --model llama-2-7b --offload-ratio 1e-400");
  EXPECT_EQ(tiny_ratio.exit_code, 1) << tiny_ratio.output;
  EXPECT_TRUE(contains(tiny_ratio.output, "'1e-400' is too small to hold")) << tiny_ratio.output;
}

TEST(CliTrial, HelpStatesTheRangesAndCpuOffloadGbSaysToDropAUnit) {
  // The trial: --help gave neither --temperature's range nor --cpu-offload-gb's (nor that it takes
  // no unit), and `--cpu-offload-gb 4GiB` said only "is not a number".
  const RunResult help = run_dak("generate --help");
  EXPECT_TRUE(contains(help.output, "Sampling temperature, from 0 (greedy) to 100")) << help.output;
  EXPECT_TRUE(contains(help.output, "a plain number from 0 to 1e6 without a unit")) << help.output;
  for (const std::string value : {"4GiB", "'4 GB'", "0.5G"}) {
    const RunResult r = run_dak("generate --model " + kTiny + " --prompt-ids 1,2 --cpu-offload-gb " + value);
    EXPECT_EQ(r.exit_code, 2) << value << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "has a unit, but this option takes a plain number of GiB: drop the unit"))
        << value << ": " << r.output;
  }
  const RunResult r = run_dak("generate --model " + kTiny + " --prompt-ids 1,2 --cpu-offload-gb 4GiB");
  EXPECT_TRUE(contains(r.output, "(--cpu-offload-gb 4; ")) << r.output;
  // Not a size: not a number, as before.
  const RunResult x = run_dak("generate --model " + kTiny + " --prompt-ids 1,2 --cpu-offload-gb 4x");
  EXPECT_EQ(x.exit_code, 2) << x.output;
  EXPECT_TRUE(contains(x.output, "'4x' is not a number")) << x.output;
}

TEST(CliTrial, AFileGivenToTheWrongOptionSaysWhichOptionTakesIt) {
  // The trial: `dak plan --model profiles/h200-default.json` said "missing model_type ... add
  // model_type to config.json"; `dak generate --plan profiles/h200-default.json` said "format must be
  // dak.plan ... (format in src/core/plan.h)", a source file.
  const std::string profile = kData + "/../../profiles/h200-default.json";
  const std::string plan = ::testing::TempDir() + "dak_trial_wrong_option_plan.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --output json > " + plan + " 2>/dev/null").exit_code, 0);
  const struct {
    std::string args, says, fix;
  } cases[] = {
      {"plan --model " + profile, "this file is a hardware profile (\"format\": \"dak.hardware_profile\"), not a model config",
       "this is a hardware profile; pass it with --profile"},
      {"generate --prompt-ids 1,2 --plan " + profile,
       "this file is a hardware profile (\"format\": \"dak.hardware_profile\"), not an offload plan",
       "this is a hardware profile; pass it with --profile"},
      {"plan --model llama-2-7b --profile " + plan, "this file is an offload plan", "this is an offload plan; pass it with --plan (of dak generate or dak bench)"},
      {"plan --model " + plan, "this file is an offload plan", "this is an offload plan; pass it with --plan (of dak generate or dak bench)"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "fix:   " + c.fix)) << c.args << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "model_type")) << c.args << ": " << r.output;
  }
  // No fix line points at a source file: a plan of another format, a profile lacking a field.
  const std::string other = ::testing::TempDir() + "dak_trial_other_format.json";
  std::ofstream(other) << R"({"format": "something.else", "version": 1, "name": "x"})";
  for (const std::string args : {"generate --prompt-ids 1,2 --plan " + other, "plan --model llama-2-7b --profile " + other}) {
    const RunResult r = run_dak(args);
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "src/")) << args << ": " << r.output;
  }
  std::ofstream(other) << R"({"format": "dak.hardware_profile", "version": 1})";
  const RunResult lacking = run_dak("plan --model llama-2-7b --profile " + other);
  EXPECT_EQ(lacking.exit_code, 1) << lacking.output;
  EXPECT_TRUE(contains(lacking.output, "hardware profile lacks field")) << lacking.output;
  EXPECT_FALSE(contains(lacking.output, "src/")) << lacking.output;
  std::remove(plan.c_str());
  std::remove(other.c_str());
}

TEST(CliTrial, TopPAndTopKAtGreedyDecodingAreANotice) {
  // The trial: --top-p 0.5 or --top-k 5 at the default temperature 0 were ignored without a word.
  const std::string gen = "generate --model " + kTiny + " --device cpu --prompt-ids 1,2 -n 1 ";
  const struct {
    std::string flags, says;
  } cases[] = {
      {"--top-p 0.5", "dak: notice: --top-p is ignored at --temperature 0"},
      {"--top-k 5", "dak: notice: --top-k is ignored at --temperature 0"},
      {"--top-k 5 --top-p 0.5 --temperature 0", "dak: notice: --top-k / --top-p are ignored at --temperature 0"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(gen + c.flags);
    EXPECT_EQ(r.exit_code, 0) << c.flags << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.flags << ": " << r.output;
  }
  // Sampling, or cuts that change nothing: no notice.
  for (const std::string flags : {"--top-k 5 --top-p 0.5 --temperature 0.7", "--top-k 0 --top-p 1", ""}) {
    const RunResult r = run_dak(gen + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "ignored at --temperature")) << flags << ": " << r.output;
  }
}

TEST(CliTrial, ASweepStepOutOfRangeIsNamedAsTheStep) {
  // The trial: `--sweep-ratios 0:100:-5` said "'-5' is outside [0, 100] percent"; it is the step.
  const struct {
    std::string value, says;
  } cases[] = {
      {"0:100:-5", "the step '-5' of '0:100:-5' is outside (0, 100] percent"},
      {"0:100:0", "the step '0' of '0:100:0' is outside (0, 100] percent"},
      {"-5:100:5", "the start '-5' is outside [0, 100] percent"},
      {"0:1000:5", "the stop '1000' is outside [0, 100] percent"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak("plan --model llama-2-7b --sweep-ratios " + c.value);
    EXPECT_EQ(r.exit_code, 1) << c.value << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.value << ": " << r.output;
  }
  const RunResult step = run_dak("plan --model llama-2-7b --sweep-ratios 0:100:-5");
  EXPECT_TRUE(contains(step.output, "fix:   give a positive step of at most 100 percent")) << step.output;
}

}  // namespace
