// The 26th new-user trial's findings on plans and offload sizes: a model whose weights alone exceed
// HBM + pinnable memory, a bench sweep with one --plan, plan file names that grew per refusal, a
// prefill plan's field called unknown, Plan::load's fix that could not run, size messages that read
// the same number twice or named the wrong budget, the ring's fix without an amount, and
// --offload-ratio parsed two ways.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "core/plan.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::RunResult;

RunResult run_dak(const std::string& args) {
  return dak::testing::run_shell(std::string(DAK_BINARY) + " " + args + " 2>&1");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kData = DAK_TEST_DATA_DIR;
const std::string kTiny = kData + "/hf_parity/llama_gqa";
const std::string kConfigs = std::string(DAK_TEST_DATA_DIR) + "/../../configs";

// A fresh, empty folder under the test temp dir.
std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string() + "/";
}

// The fix line of an error (after "fix:"), trimmed.
std::string fix_line(const std::string& output) {
  const size_t at = output.find("fix:");
  if (at == std::string::npos) return "";
  size_t begin = output.find_first_not_of(' ', at + 4);
  const size_t end = output.find('\n', begin);
  return output.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

TEST(CliTrial25b, WeightsBeyondHbmAndPinnableNameTheModelNotTheShape) {
  const std::string dir = fresh_dir("dak_trial25b_405b");
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(kConfigs + "/llama-2-7b.json"));
  cfg["hidden_size"] = 16384, cfg["num_hidden_layers"] = 126, cfg["intermediate_size"] = 53248;
  cfg["vocab_size"] = 128256, cfg["num_attention_heads"] = 128, cfg["num_key_value_heads"] = 8;
  std::ofstream(dir + "cfg_405b.json") << cfg.dump();
  const RunResult r = run_dak("plan --model " + dir + "cfg_405b.json --batch 1 --prompt-len 1 --gen-len 2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "the model's weights alone (")) << r.output;
  EXPECT_TRUE(contains(r.output, "so no batch or context length fits")) << r.output;
  EXPECT_TRUE(contains(r.output, "where: --model (dak plan)\n")) << r.output;
  EXPECT_TRUE(contains(fix_line(r.output), "use a profile whose host_memory.pinnable_bytes is at least ")) << r.output;
  EXPECT_TRUE(contains(fix_line(r.output), "or a smaller model")) << r.output;
  EXPECT_FALSE(contains(r.output, "lower --batch")) << r.output;
  // Following it: a profile that pins the amount named plans this shape.
  const std::string fix = fix_line(r.output);
  const size_t at = fix.find("at least ") + 9;
  // The field's own unit, bytes, then the size in words (session 50: "8406909.47GiB" read badly).
  const std::string amount = fix.substr(at, fix.find(' ', at) - at);  // e.g. "663702568960"
  ASSERT_EQ(amount.find_first_not_of("0123456789"), std::string::npos) << fix;
  EXPECT_TRUE(contains(fix, amount + " (") && contains(fix, "GiB; `dak profile")) << fix;
  nlohmann::json profile = nlohmann::json::parse(std::ifstream(kConfigs + "/../profiles/h200-default.json"));
  profile["host_memory"]["pinnable_bytes"] = std::stoll(amount);
  std::ofstream(dir + "big_pin.json") << profile.dump();
  const RunResult followed = run_dak("plan --model " + dir + "cfg_405b.json --batch 1 --prompt-len 1 --gen-len 2 "
                                     "--profile " + dir + "big_pin.json");
  EXPECT_EQ(followed.exit_code, 0) << followed.output;
  // Where the shape is what does not fit, the shape advice stays.
  const RunResult shape = run_dak("plan --model llama-2-7b --batch 4096 --prompt-len 4000 --gen-len 96");
  EXPECT_EQ(shape.exit_code, 1) << shape.output;
  EXPECT_TRUE(contains(shape.output, "lower --batch")) << shape.output;
  EXPECT_FALSE(contains(shape.output, "weights alone")) << shape.output;
}

TEST(CliTrial25b, BenchSweepWithOnePlanIsRefusedUpFront) {
  const std::string dir = fresh_dir("dak_trial25b_bench");
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 8 --output json > " + dir + "pd.json").exit_code, 0);
  const RunResult r = run_dak("bench --model llama-2-7b --random-weights --batch 1,8 --plan " + dir + "pd.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "a plan serves one shape (batch 8, prompt 32, gen 32 for " + dir +
                                     "pd.json), but this bench sweeps 2 shapes"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "where: --batch (dak bench)\n")) << r.output;
  EXPECT_EQ(fix_line(r.output), "run one shape per --plan (the plan's: --batch 8 --prompt-len 32 --gen-len 32), or "
                                "drop --plan to plan every point of the sweep")
      << r.output;
  // Following it: past the plan checks (to the GPU's absence on this machine), no fresh file named.
  const RunResult one = run_dak("bench --model llama-2-7b --random-weights --batch 8 --prompt-len 32 --gen-len 32 "
                                "--plan " + dir + "pd.json");
  EXPECT_TRUE(contains(one.output, "dak bench needs a Hopper GPU")) << one.output;
  EXPECT_FALSE(contains(one.output, "the plan")) << one.output;
  const RunResult gens = run_dak("bench --model llama-2-7b --random-weights --batch 8 --gen-len 8,32 --plan " + dir +
                                 "pd.json");
  EXPECT_TRUE(contains(gens.output, "where: --gen-len (dak bench)\n")) << gens.output;
}

TEST(CliTrial25b, FreshPlanNamesDoNotPileUpTheModel) {
  const std::string dir = fresh_dir("dak_trial25b_names");
  EXPECT_EQ(dak::fresh_plan_file_name(dir + "pd.json", "llama-2-7b"), dir + "pd-llama-2-7b.json");
  // A name it made: the model is not added again.
  EXPECT_EQ(dak::fresh_plan_file_name(dir + "pd-llama-2-7b.json", "llama-2-7b"), dir + "pd-llama-2-7b-2.json");
  EXPECT_EQ(dak::fresh_plan_file_name(dir + "pd-llama-2-7b-2.json", "llama-2-7b"), dir + "pd-llama-2-7b.json");
  // Another model's suffix stays.
  EXPECT_EQ(dak::fresh_plan_file_name(dir + "pd-opt-30b.json", "llama-2-7b"), dir + "pd-opt-30b-llama-2-7b.json");
  // A --plan that is no file (trial 27: "> /dev/null-new.json", "> /tmp-new.json"): a plan inside the
  // folder, or in the working directory for a device.
  EXPECT_EQ(dak::fresh_plan_file_name(dir, "llama-2-7b"), dir + "plan-llama-2-7b.json");
  EXPECT_EQ(dak::fresh_plan_file_name("/dev/null", "llama-2-7b"), "plan-llama-2-7b.json");
  const RunResult r = run_dak("generate -m llama-2-7b --random-weights --prompt-ids 1 --plan /dev/null");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--output json > plan-new.json (MODEL the run's --model")) << r.output;
  EXPECT_FALSE(contains(r.output, "/dev/null-")) << r.output;
}

TEST(CliTrial25b, EveryFieldDakPlanWritesLoadsWithoutAnUnknownNotice) {
  const std::string dir = fresh_dir("dak_trial25b_fields");
  for (const std::string& flags : {std::string("--batch 8"), std::string("--gen-len 1 --phase prefill"),
                                   std::string("--batch 8 --offload prefetch --gpu-memory 4GiB"),
                                   std::string("--batch 8 --offload zero-copy --offload-ratio 0.3")}) {
    const std::string file = dir + "p.json";
    const RunResult made = run_dak("plan --model llama-2-7b " + flags + " --output json > " + file);
    ASSERT_EQ(made.exit_code, 0) << flags << ": " << made.output;
    std::vector<std::string> unknown;
    dak::Plan::load(file, &unknown);
    EXPECT_TRUE(unknown.empty()) << flags << ": " << (unknown.empty() ? "" : unknown.front());
  }
  // The trial's run: a prefill plan given to dak bench.
  ASSERT_EQ(run_dak("plan --model llama-2-7b --gen-len 1 --phase prefill --output json > " + dir + "pf.json").exit_code,
            0);
  const std::string written = nlohmann::json::parse(std::ifstream(dir + "pf.json")).dump();
  EXPECT_TRUE(contains(written, "\"predicted_prefill_s\"")) << written.substr(0, 200);
  const RunResult r = run_dak("bench --model llama-2-7b --random-weights --batch 8 --plan " + dir + "pf.json");
  EXPECT_FALSE(contains(r.output, "unknown field")) << r.output;
}

TEST(CliTrial25b, HandEditedPlanRefusalsGiveARunnableRegenerateCommand) {
  const std::string dir = fresh_dir("dak_trial25b_regen");
  const std::string good = dir + "pd.json", edited = dir + "edited.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 8 --profile h200-default --output json > " + good).exit_code, 0);
  nlohmann::json j = nlohmann::json::parse(std::ifstream(good));
  j["predicted_tpot_s"] = -1;
  std::ofstream(edited) << j.dump();
  RunResult r = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2 -n 2 --plan " + edited);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string fix = fix_line(r.output);
  // With the plan's profile, as every plan fix gives it (since session 49 here too).
  const std::string command = "dak plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --profile "
                              "h200-default --output json > " + dir + "edited-llama-2-7b.json";
  EXPECT_EQ(fix, "regenerate the plan: " + command) << r.output;
  // It runs, and writes a plan that loads, next to the user's file (which it leaves alone).
  const RunResult followed = run_dak(command.substr(4));
  EXPECT_EQ(followed.exit_code, 0) << followed.output;
  EXPECT_NO_THROW(dak::Plan::load(dir + "edited-llama-2-7b.json"));
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(edited))["predicted_tpot_s"], -1);
  // A batch the file does not give usably: the command with a placeholder the fix names.
  j = nlohmann::json::parse(std::ifstream(good));
  j["inputs"]["batch"] = 0;
  std::ofstream(edited) << j.dump();
  r = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2 -n 2 --plan " + edited);
  EXPECT_TRUE(contains(r.output, "plan field 'batch' must be in [1, 65536]")) << r.output;
  EXPECT_EQ(fix_line(r.output), "regenerate the plan for your run: dak plan --model llama-2-7b --batch B --prompt-len "
                                "32 --gen-len 32 --profile h200-default --output json > " + dir + "edited-llama-2-7b-2.json (B its batch; "
                                "the file does not give them)")
      << r.output;
  // Not an object at all: every part a placeholder.
  std::ofstream(edited) << "[1]";
  r = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2 -n 2 --plan " + edited);
  EXPECT_TRUE(contains(fix_line(r.output), "dak plan --model MODEL --batch B --prompt-len P --gen-len G --output json"))
      << r.output;
  EXPECT_FALSE(contains(r.output, "`dak plan --output json`")) << r.output;
}

TEST(CliTrial25b, SizeMessagesDifferAndNameTheBudgetsSource) {
  RunResult r = run_dak("generate -m llama-2-7b --random-weights --prompt-ids 1,2,3 --cpu-offload-gb 12.585");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "asks for 12.585 GiB in host memory, but only 12.583 GiB of weights + KV cache"))
      << r.output;
  const std::string dir = fresh_dir("dak_trial25b_budget");
  nlohmann::json p = nlohmann::json::parse(std::ifstream(kConfigs + "/../profiles/h200-default.json"));
  p["name"] = "small";
  p["hbm"]["free_after_context_bytes"] = int64_t(p["hbm"]["reserve_bytes"]) + 200 * (int64_t(1) << 20);
  std::ofstream(dir + "small.json") << p.dump();
  r = run_dak("generate -m llama-2-7b --random-weights --prompt-ids 1,2 -n 3 --profile " + dir +
              "small.json --cpu-offload-gb 0.01 --device cuda");
  EXPECT_TRUE(contains(r.output, "more than the 200.00 MiB default HBM budget of the profile 'small'")) << r.output;
  EXPECT_FALSE(contains(r.output, "budget of this GPU")) << r.output;
}

TEST(CliTrial25b, RingRefusalGivesTheBudgetThatHoldsIt) {
  const RunResult r = run_dak("plan --model llama-2-7b --offload prefetch --gpu-memory 30MiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "does not fit next to what stays in HBM: 779.61 MiB")) << r.output;
  EXPECT_EQ(fix_line(r.output), "raise --gpu-memory to at least 779.61MiB, or use --offload direct (no ring)")
      << r.output;
  EXPECT_EQ(run_dak("plan --model llama-2-7b --offload prefetch --gpu-memory 779.61MiB").exit_code, 0);
}

TEST(CliTrial25b, OffloadRatioParsesAndRefusesAlikeInEveryCommand) {
  const std::string plan = "plan --model llama-2-7b --batch 8 ";
  const std::string gen = "generate --model " + kTiny + " --prompt-ids 1,2 -n 2 ";
  EXPECT_EQ(run_dak(plan + "--offload-ratio '0.3 '").exit_code, 0);
  EXPECT_EQ(run_dak(plan + "--offload-ratio ' 0.3'").exit_code, 0);
  // The error lines from the first --offload-ratio on, with the command the place names ("where:
  // --offload-ratio (dak plan)") left out.
  const auto error_lines = [](const std::string& out) {
    const size_t at = out.find("--offload-ratio");
    std::string lines = at == std::string::npos ? out : out.substr(at);
    for (const char* command : {" (dak plan)", " (dak generate)"}) {
      for (size_t c = lines.find(command); c != std::string::npos; c = lines.find(command)) {
        lines.erase(c, std::string(command).size());
      }
    }
    return lines;
  };
  for (const char* value : {"abc", "2", "0.1,0.3"}) {
    const RunResult p = run_dak(plan + "--offload-ratio " + value);
    const RunResult g = run_dak(gen + "--offload-ratio " + value);
    EXPECT_EQ(p.exit_code, g.exit_code) << value << ": " << p.output << g.output;
    EXPECT_NE(p.exit_code, 0) << value;
    EXPECT_EQ(error_lines(p.output), error_lines(g.output)) << value;
  }
  EXPECT_TRUE(contains(run_dak(plan + "--offload-ratio abc").output, "'abc' is not a number, so not a fraction"));
}

TEST(CliTrial25b, HandEditedFieldsNoPlannerWritesAreRefused) {
  const std::string dir = fresh_dir("dak_trial25b_edits");
  const std::string good = dir + "pd.json", edited = dir + "edited.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 8 --offload-ratio 0.3 --output json > " + good).exit_code, 0);
  const nlohmann::json plan = nlohmann::json::parse(std::ifstream(good));
  size_t direct = 0;
  while (direct < plan["operators"].size() && !(plan["operators"][direct]["data_path"] == "direct" &&
                                                plan["operators"][direct]["host_bytes"] > 0))
    ++direct;
  ASSERT_LT(direct, plan["operators"].size());
  // Named with the operator (session 50's re-trial: these were the only plan refusals without it).
  const std::string op = "operators[" + std::to_string(direct) + "] (" +
                         plan["operators"][direct]["name"].get<std::string>() + ")";
  const struct {
    std::string path;  // JSON pointer
    nlohmann::json value;
    std::string says, where;
  } cases[] = {
      {"/" + std::string("operators/") + std::to_string(direct) + "/stages_per_cta", 1000,
       "plan field 'stages_per_cta' must be in [1, 6] on a direct-path operator with host bytes (the profile's "
       "h200-default max_stages_per_cta)",
       edited + ": " + op},
      {"/operators/" + std::to_string(direct) + "/host_ctas", 0, "plan field 'host_ctas' must be at least 1",
       edited + ": " + op},
      {"/operators/" + std::to_string(direct) + "/layer", 1000,
       "plan field 'layer' must be -1 (no layer) or in [0, 31] (the plan's 32 attention operators)", edited + ": " + op},
      {"/inputs/gpu_memory_bytes", 1, "plan field 'gpu_memory_bytes' must equal capacity.hbm_budget_bytes",
       edited + ": inputs"},
  };
  for (const auto& c : cases) {
    nlohmann::json j = plan;
    j[nlohmann::json::json_pointer(c.path)] = c.value;
    std::ofstream(edited) << j.dump();
    const RunResult r = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2 -n 2 --plan " + edited);
    EXPECT_EQ(r.exit_code, 1) << c.path << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.path << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "where: " + c.where + "\n")) << c.path << ": " << r.output;
    EXPECT_TRUE(contains(fix_line(r.output), "regenerate the plan: dak plan --model llama-2-7b --batch 8")) << r.output;
  }
  // A prefill plan for a run's decode steps: refused where it is used, with the decode plan's command.
  nlohmann::json j = plan;
  j["inputs"]["phase"] = "prefill";
  std::ofstream(edited) << j.dump();
  const RunResult r = run_dak("bench --model llama-2-7b --random-weights --batch 8 --plan " + edited);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "the plan was made for --phase prefill")) << r.output;
  EXPECT_TRUE(contains(r.output, "where: " + edited + "\n")) << r.output;
  EXPECT_TRUE(contains(fix_line(r.output), "make a decode plan for this run: dak plan --model llama-2-7b --batch 8 "))
      << r.output;
  EXPECT_FALSE(contains(fix_line(r.output), "--phase")) << r.output;
}

}  // namespace
