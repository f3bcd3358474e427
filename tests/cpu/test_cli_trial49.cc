// The 49th session's trial findings end to end: a --plan file whose batch differs from the run's is
// refused for the batch alone (a plan's positions need only suffice), with the way to run it as planned;
// a plan whose operators' derived fields were edited is refused, naming the operator and the field; a
// text file's UTF-8 byte order mark is left out of the prompt and the scored text, with a notice;
// under --ignore-eos the text shows the special tokens generated.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

using dak::testing::contains;
using dak::testing::RunResult;

RunResult run_dak(const std::string& args) { return dak::testing::run_dak_env("", args); }

TEST(CliTrial49, APlanOfAnotherBatchIsRefusedForItsBatch) {
  const std::string dir = ::testing::TempDir() + "dak_trial49_plans";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string plan = dir + "/b8.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 0.05 --profile "
                    "h200-default --output json > " + plan).exit_code,
            0);
  const std::string gen = "generate --model llama-2-7b --random-weights --prompt-ids 1,2 --plan " + plan;
  // One prompt of 2 tokens and 4 new fits the plan's 64 positions: only the batch is named.
  const RunResult batch = run_dak(gen + " -n 4");
  EXPECT_EQ(batch.exit_code, 1) << batch.output;
  EXPECT_TRUE(contains(batch.output, "the plan is for batch 8 (sequences decoded together); this run has batch 1\n"))
      << batch.output;
  EXPECT_FALSE(contains(batch.output, "positions")) << batch.output;
  EXPECT_TRUE(contains(batch.output, "fix:   give 8 prompts (more with --max-batch 8), or make the plan for this run: "
                                     "dak plan --model llama-2-7b --batch 1 --prompt-len 2 --gen-len 4 "
                                     "--cpu-offload-gb 0.05 --profile "))
      << batch.output;
  // Too few positions as well: both named, the positions with where they come from, and only the new
  // plan as the fix (running 8 prompts would still be refused for the positions).
  const RunResult both = run_dak(gen + " -n 100");
  EXPECT_EQ(both.exit_code, 1) << both.output;
  EXPECT_TRUE(contains(both.output, "this run has batch 1; and the plan holds 64 positions per sequence, fewer than "
                                    "the 102 this run needs (prompt 2 + 100 new)"))
      << both.output;
  EXPECT_TRUE(contains(both.output, "fix:   make the plan for this run: dak plan ")) << both.output;
  const RunResult sized = run_dak(gen + " -n 4 --max-context 100");  // the positions are --max-context's
  EXPECT_EQ(sized.exit_code, 1) << sized.output;
  EXPECT_TRUE(contains(sized.output, "fewer than the 100 this run needs (--max-context)")) << sized.output;
  // dak bench names its own flag for the batch.
  const RunResult bench = run_dak("bench --model llama-2-7b --random-weights --batch 4 --prompt-len 8 --gen-len 4 "
                                  "--plan " + plan);
  EXPECT_EQ(bench.exit_code, 1) << bench.output;
  EXPECT_TRUE(contains(bench.output, "fix:   run --batch 8, or make the plan for this run: ")) << bench.output;
  // The same batch with too few positions: the positions alone.
  const std::string one = dir + "/b1.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 1 --prompt-len 4 --gen-len 4 --profile h200-default --output "
                    "json > " + one).exit_code,
            0);
  const RunResult positions = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2 -n 20 --plan " + one);
  EXPECT_EQ(positions.exit_code, 1) << positions.output;
  EXPECT_TRUE(contains(positions.output, "dak: error: the plan holds 8 positions per sequence, fewer than the 22 this "
                                         "run needs (prompt 2 + 20 new)\n"))
      << positions.output;
  EXPECT_FALSE(contains(positions.output, "this run has batch")) << positions.output;
  EXPECT_FALSE(contains(positions.output, "prompt (more with")) << positions.output;
  // A batch-1 plan asks for "1 prompt" (singular) where the run has more.
  const RunResult two = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2 --prompt-ids 3 -n 2 "
                                "--plan " + one);
  EXPECT_TRUE(contains(two.output, "fix:   give 1 prompt (more with --max-batch 1), or ")) << two.output;
}

TEST(CliTrial49, EditedOperatorFieldsAreRefusedWithTheOperatorsName) {
  const std::string dir = ::testing::TempDir() + "dak_trial49_edits";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string plan = dir + "/p.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 1 --prompt-len 8 --gen-len 8 --offload-ratio 0.3 --profile h200-default --output json > " +
                    plan).exit_code,
            0);
  nlohmann::json good;
  std::ifstream(plan) >> good;
  size_t qkv = 0;
  while (qkv < good["operators"].size() && good["operators"][qkv]["name"] != "layers.0.qkv_proj") ++qkv;
  ASSERT_LT(qkv, good["operators"].size());
  const std::string at = "operators[" + std::to_string(qkv) + "] (layers.0.qkv_proj)";
  const std::string gen = "generate --model llama-2-7b --random-weights --prompt-ids 1,2 -n 4 --plan ";
  // The untouched plan passes the checks (the run may still need a GPU for --random-weights).
  const RunResult untouched = run_dak(gen + plan);
  for (const char* refusal : {"the plan's", "the plan is", "the plan was", "the plan holds", "plan field"})
    EXPECT_FALSE(contains(untouched.output, refusal)) << untouched.output;
  const struct {
    std::function<void(nlohmann::json&)> edit;
    std::string says;
  } cases[] = {
      {[&](nlohmann::json& j) { j["operators"][qkv]["bytes"] = int64_t(1e12); },
       at + ": bytes is 1000000000000, where the planner writes 100663296"},
      {[&](nlohmann::json& j) { j["operators"][qkv]["layer"] = -1; }, at + ": layer is -1, where the planner writes 0"},
      {[&](nlohmann::json& j) { j["operators"][qkv]["context"] = -1; }, at + ": context is -1"},
      {[&](nlohmann::json& j) { j["operators"][qkv]["role"] = "o_proj"; }, at + ": role is 'o_proj'"},
      {[&](nlohmann::json& j) { j["totals"]["host_bytes"] = 1; },
       "totals: host_bytes (the sum of its operators' host_bytes) is 1, where the planner writes"},
      // Session 50: the other fields that follow from the model, the budget and the placement.
      {[&](nlohmann::json& j) { j["operators"][qkv]["step_bytes"] = 5.0; }, at + ": step_bytes is 5, where"},
      {[&](nlohmann::json& j) { j["operators"][qkv]["flops"] = 0.0; }, at + ": flops is 0, where"},
      {[&](nlohmann::json& j) { j["operators"][qkv]["host_fraction"] = 0.75; },
       at + ": host_fraction (for host_units "},
      {[&](nlohmann::json& j) { j["capacity"]["workspace_bytes"] = 7; },
       "the plan's capacity: workspace_bytes is 7, where the planner writes"},
      {[&](nlohmann::json& j) { j["capacity"]["required_host_bytes"] = 1; },
       "capacity: required_host_bytes is 1, where the planner writes 0"},
      {[&](nlohmann::json& j) { j["totals"]["direct_host_bytes"] = 0; },
       "totals: direct_host_bytes (the sum over its direct-path operators) is 0, where"},
      {[&](nlohmann::json& j) { j["totals"]["host_ratio"] = 0.5; }, "totals: host_ratio is 0.5, where"},
      {[&](nlohmann::json& j) { j["totals"]["hbm_bytes"] = 1000; }, "totals: hbm_bytes is 1000, where"},
      {[&](nlohmann::json& j) { j["totals"]["step_bytes"] = 1.0; }, "totals: step_bytes is 1, where"},
      // An edited batch is named as the run's mismatch, before the operators it would change.
      {[&](nlohmann::json& j) { j["inputs"]["batch"] = 8; }, "the plan is for batch 8 (sequences decoded together)"},
      {[&](nlohmann::json& j) {
         nlohmann::json& units = j["operators"][qkv]["host_units"];
         units = units.get<int64_t>() == 0 ? 1 : 0;
       },
       at + ": host_rows (for host_units "},
      {[&](nlohmann::json& j) { j["operators"][qkv]["host_bytes"] = -5; },
       at + "\n  fix:"},  // the field check of the file itself (below)
  };
  for (const auto& c : cases) {
    nlohmann::json j = good;
    c.edit(j);
    const std::string edited = dir + "/edited.json";
    std::ofstream(edited) << j.dump(1);
    const RunResult r = run_dak(gen + edited);
    EXPECT_EQ(r.exit_code, 1) << c.says << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << r.output;
  }
  nlohmann::json j = good;
  j["operators"][qkv]["host_bytes"] = -5;
  std::ofstream(dir + "/negative.json") << j.dump(1);
  const RunResult negative = run_dak(gen + dir + "/negative.json");
  EXPECT_TRUE(contains(negative.output, "plan field 'host_bytes' -5 is outside [0, bytes] ([0, 100663296])") ||
              contains(negative.output, "'host_bytes': -5 is outside [0, bytes] ([0, 100663296])"))
      << negative.output;
  EXPECT_FALSE(contains(negative.output, "host_rows")) << negative.output;

  // An edit of the placement with what follows from it kept consistent passes (docs/planner.md §6):
  // a host linear's path switched between direct and staged, the totals by path, the ring and HBM bytes redone.
  nlohmann::json moved = good;
  size_t host_linear = 0;
  while (host_linear < good["operators"].size() && !(good["operators"][host_linear]["kind"] == "linear" &&
                                                      good["operators"][host_linear]["host_bytes"].get<int64_t>() > 0))
    ++host_linear;
  ASSERT_LT(host_linear, good["operators"].size());
  nlohmann::json& op = moved["operators"][host_linear];
  op["data_path"] = op["data_path"] == "staged" ? "direct" : "staged";
  if (op["data_path"] == "direct" && op["host_ctas"].get<int64_t>() < 1) op["host_ctas"] = 1;
  if (op["data_path"] == "direct" && op["stages_per_cta"].get<int64_t>() < 1) op["stages_per_cta"] = 1;
  int64_t direct = 0, staged = 0, largest = 0;
  for (const nlohmann::json& o : moved["operators"]) {
    const int64_t h = o["host_bytes"].get<int64_t>();
    if (o["data_path"] == "direct") direct += h;
    if (o["data_path"] == "staged") staged += h, largest = std::max(largest, h);
  }
  nlohmann::json& t = moved["totals"];
  t["direct_host_bytes"] = direct, t["staged_host_bytes"] = staged, t["staging_ring_bytes"] = 3 * largest;
  t["hbm_bytes"] = moved["capacity"]["total_bytes"].get<int64_t>() - t["host_bytes"].get<int64_t>() + 3 * largest;
  std::ofstream(dir + "/moved.json") << moved.dump(1);
  const RunResult consistent = run_dak(gen + dir + "/moved.json");
  for (const char* refusal : {"the plan's", "the plan is", "the plan was", "the plan holds", "plan field"})
    EXPECT_FALSE(contains(consistent.output, refusal)) << consistent.output;
  // It runs, or (built without the GPU layer) stops only for the random weights, after the plan's checks.
  EXPECT_TRUE(consistent.exit_code == 0 || contains(consistent.output, "dak: error: cannot run --random-weights: "))
      << consistent.output;
  EXPECT_TRUE(untouched.exit_code == 0 || contains(untouched.output, "dak: error: cannot run --random-weights: "))
      << untouched.output;
}

TEST(CliTrial49, AByteOrderMarkIsNoPartOfAPromptOrAScoredText) {
  const std::string dir = ::testing::TempDir() + "dak_trial49_bom";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/plain.txt") << "The three primary colors are";
  std::ofstream(dir + "/bom.txt") << "\xEF\xBB\xBFThe three primary colors are";
  const std::string model =
      " --device cpu --model " + (std::filesystem::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf").string();
  const std::string gen = "generate -n 3" + model + " -f ";
  const RunResult plain = dak::testing::run_dak_env("", gen + dir + "/plain.txt", false);
  const RunResult bom = dak::testing::run_dak_env("", gen + dir + "/bom.txt", false);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(bom.exit_code, 0) << bom.output;
  EXPECT_EQ(bom.output, plain.output);  // the same ids, the same echo: no BOM printed
  const RunResult notice = run_dak(gen + dir + "/bom.txt");
  EXPECT_TRUE(contains(notice.output, "dak: notice: --prompt-file " + dir +
                                          "/bom.txt starts with a UTF-8 byte order mark (EF BB BF); it is left out "
                                          "of the prompt"))
      << notice.output;
  EXPECT_FALSE(contains(run_dak(gen + dir + "/plain.txt").output, "byte order mark"));
  // A byte that is not UTF-8 is counted from the file's start, the mark included (offset 6 here).
  std::ofstream(dir + "/bad.txt") << "\xEF\xBB\xBF" "abc\xFF" "def";
  const RunResult bad = run_dak(gen + dir + "/bad.txt");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(contains(bad.output, "the prompt is not valid UTF-8 (byte 6, counted from the start with its byte "
                                   "order mark)\n  where: --prompt-file " + dir + "/bad.txt"))
      << bad.output;
  // Standard input and dak perplexity alike.
  const RunResult piped = run_dak("perplexity --output json" + model + " --file - < " + dir + "/bom.txt");
  const RunResult scored = dak::testing::run_dak_env("", "perplexity --output json" + model + " --file " + dir +
                                                         "/plain.txt", false);
  ASSERT_EQ(scored.exit_code, 0) << scored.output;
  EXPECT_TRUE(contains(piped.output, "dak: notice: standard input (--file -) starts with a UTF-8 byte order mark"))
      << piped.output;
  const auto value = [](const std::string& out) {
    const size_t at = out.find("\"perplexity\"");
    return at == std::string::npos ? std::string("none") : out.substr(at, out.find_first_of(",}", at) - at);
  };
  EXPECT_NE(value(scored.output), "none") << scored.output;
  EXPECT_EQ(value(piped.output), value(scored.output)) << piped.output;
}

TEST(CliTrial49, IgnoreEosShowsTheSpecialTokensItGoesPast) {
  const std::string cmd = "generate --device cpu --output json --model " +
                          (std::filesystem::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf").string() +
                          " --prompt-ids 1,4093,198,19556,2 -n 12";  // <|im_start|>user\nHello<|im_end|>
  const RunResult past = dak::testing::run_dak_env("", cmd + " --ignore-eos", false);
  const RunResult stops = dak::testing::run_dak_env("", cmd, false);
  ASSERT_EQ(past.exit_code, 0) << past.output;
  ASSERT_EQ(stops.exit_code, 0) << stops.output;
  const nlohmann::json p = nlohmann::json::parse(past.output)["sequences"][0];
  const nlohmann::json s = nlohmann::json::parse(stops.output)["sequences"][0];
  // The model answers and ends its turn (id 2, <|im_end|>, its EOS): the plain run stops there and
  // leaves the special tokens out of the text; --ignore-eos goes on, and its text shows them.
  ASSERT_TRUE(s["stopped_at_eos"].get<bool>()) << stops.output;
  const std::vector<int32_t> answer = s["generated_ids"];
  ASSERT_GE(answer.size(), 2u);
  EXPECT_EQ(answer.back(), 2) << stops.output;
  EXPECT_FALSE(contains(s["text"].get<std::string>(), "<|")) << stops.output;
  const std::vector<int32_t> longer = p["generated_ids"];
  ASSERT_GT(longer.size(), answer.size()) << past.output;
  EXPECT_TRUE(std::equal(answer.begin(), answer.end(), longer.begin())) << past.output;
  const std::string text = p["text"].get<std::string>();
  EXPECT_TRUE(contains(text, "<|im_start|>")) << text;  // id 1, the first id generated after the newline
  EXPECT_TRUE(contains(text, "<|im_end|>")) << text;
}

TEST(CliTrial49, ARedoFixAsksForNoMoreThanTheNewShapeCanMove) {
  // Trial of session 49: a batch-8 plan of 0.26 GiB on the host (its limit ~0.2614) was redone for a
  // batch-1 run with --cpu-offload-gb 0.26, which that shape cannot move (at most ~0.25): the fix now
  // asks for the plan's ratio there, and the amount where it fits.
  const std::string dir = ::testing::TempDir() + "dak_trial49_amounts";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string model =
      (std::filesystem::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf").string();
  const auto fix_command = [](const std::string& output) {
    const std::string prefix = "make the plan for this run: dak plan ";
    const size_t at = output.find(prefix);
    if (at == std::string::npos) return std::string();
    const size_t from = at + prefix.size() - 5;  // from "plan "
    return output.substr(from, output.find('\n', from) - from);
  };
  for (const auto& [amount, flag] :
       {std::pair{"0.26", "--offload-ratio 0.9"}, std::pair{"0.1", "--cpu-offload-gb 0.1 "}}) {
    const std::string plan = dir + "/p" + amount + ".json";
    ASSERT_EQ(run_dak("plan --model " + model + " --cpu-offload-gb " + amount + " --profile h200-default --output "
                      "json > " + plan).exit_code,
              0);
    const RunResult r = run_dak("generate --model " + model + " --plan " + plan + " --prompt-ids 1 -n 3");
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, flag)) << r.output;
    const std::string command = fix_command(r.output);
    ASSERT_FALSE(command.empty()) << r.output;
    const RunResult followed = run_dak(command);  // the fix runs (it writes a new plan beside the old)
    EXPECT_EQ(followed.exit_code, 0) << command << "\n" << followed.output;
  }
}

}  // namespace
