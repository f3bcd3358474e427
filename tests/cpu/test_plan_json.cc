// Plan JSON round trip, size parsing, and `dak plan` end to end (run through DAK_BINARY).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <string>

#include "cli_test_util.h"
#include "error_test_util.h"
#include "core/byte_size.h"
#include "core/config_locator.h"
#include "core/error.h"
#include "core/plan_report.h"
#include "core/planner.h"

namespace dak {
namespace {

constexpr int64_t kGiB = int64_t(1) << 30;

Plan sample_plan(const std::string& model, int64_t batch, int64_t budget) {
  PlanRequest r;
  r.model_name = model;
  r.shape.batch = batch;
  r.shape.prompt_len = 32;  // the CLI defaults
  r.shape.gen_len = 32;
  r.gpu_memory_bytes = budget;
  return make_plan(locate_model_config(model).config, HardwareProfile::h200_default(), r);
}

TEST(PlanJson, RoundTripIsExact) {
  for (const Plan& p : {sample_plan("llama-2-7b", 8, 6 * kGiB), sample_plan("opt-30b", 64, 40 * kGiB)}) {
    const std::string text = p.to_json().dump();
    const Plan back = Plan::from_json(nlohmann::json::parse(text), "round trip");
    EXPECT_EQ(back, p);
    EXPECT_EQ(back.to_json().dump(), text);
  }
}

TEST(PlanJson, CarriesTpotAndOperatorRows) {
  const Plan p = sample_plan("llama-2-7b", 8, 6 * kGiB);
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j.at("format"), "dak.plan");
  EXPECT_GT(j.at("predicted_tpot_s").get<double>(), 0.0);
  ASSERT_EQ(j.at("operators").size(), p.ops.size());
  const nlohmann::json& row = j.at("operators").at(2);  // layers.0.qkv_proj
  for (const char* key : {"name", "bytes", "host_fraction", "host_bytes", "data_path", "predicted_time_s", "bound"})
    EXPECT_TRUE(row.contains(key)) << key;
  EXPECT_EQ(j.at("inputs").at("gpu_memory_bytes"), 6 * kGiB);
  EXPECT_EQ(j.at("inputs").at("profile_version"), 1);
}

TEST(PlanJson, APlanMatchesOnlyTheModelItWasMadeFor) {
  const Plan plan = sample_plan("llama-2-7b", 8, 40 * kGiB);
  const ModelConfig own = locate_model_config("llama-2-7b").config;
  const RequestedShape run{8, 32, 32};
  check_plan_model(plan, own, "llama-2-7b", "plan.json", run);  // no throw
  ModelConfig fewer = own;
  fewer.num_layers = 30;
  testing::expect_error([&] { check_plan_model(plan, fewer, "my-model", "plan.json", run); },
                        {"the plan was made for the model 'llama-2-7b', but the loaded model is 'my-model' (30 layers",
                         "32 layers in the plan, 30 in the loaded model", "plan.json",
                         "dak plan --model my-model --batch 8 --prompt-len 32 --gen-len 32 --gpu-memory 40GiB --profile h200-default "
                         "--output json > "
                         "plan-my-model.json"});
  ModelConfig gqa = own;
  gqa.num_kv_heads = 8;  // the same names and layer count: the shapes tell them apart
  testing::expect_error([&] { check_plan_model(plan, gqa, "gqa", "plan.json", run); },
                        {"'layers.0.qkv_proj' is 12288 x 4096 in the plan, 6144 x 4096 in the loaded model"});
  ModelConfig other = locate_model_config("llama-3-8b").config;
  testing::expect_error([&] { check_plan_model(plan, other, "llama-3-8b", "plan.json", run); },
                        {"'embed_tokens' is 32000 x 4096 in the plan, 128256 x 4096 in the loaded model"});
}

TEST(PlanJson, APlanForAnotherModelSuggestsThePlanOfTheRunsOwnShape) {
  // New-user trial: the fix of a plan made for another model suggested the refused plan's batch and
  // lengths (batch 8, 32 + 32), not the batch and lengths the run asked for.
  const Plan plan = sample_plan("llama-2-7b", 8, 40 * kGiB);
  const ModelConfig other = locate_model_config("llama-3-8b").config;
  try {
    check_plan_model(plan, other, "llama-3-8b", "plan.json", RequestedShape{2, 100, 20});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.fix_part(),
              "make a plan for this model: dak plan --model llama-3-8b --batch 2 --prompt-len 100 --gen-len 20 "
              "--gpu-memory 40GiB --profile h200-default --output json > plan-llama-3-8b.json");
  }
  // The command itself: the model as a shell word, a mode other than auto, and a decode step to plan.
  EXPECT_EQ(plan_command_for("my model/config.json", RequestedShape{1, 7, 1}, "direct", "my plan.json"),
            "dak plan --model 'my model/config.json' --batch 1 --prompt-len 7 --gen-len 2 --offload direct --output "
            "json > 'my plan.json'");
  EXPECT_EQ(plan_command_for("llama-2-7b", RequestedShape{64, 512, 128}, "auto", "plan.json"),
            "dak plan --model llama-2-7b --batch 64 --prompt-len 512 --gen-len 128 --output json > plan.json");
  EXPECT_EQ(plan_command_for("llama-2-7b", RequestedShape{64, 512, 128}, "", "plan.json"),
            plan_command_for("llama-2-7b", RequestedShape{64, 512, 128}, "auto", "plan.json"));
}

TEST(PlanJson, MalformedPlansNameTheField) {
  nlohmann::json j = sample_plan("llama-2-7b", 1, 20 * kGiB).to_json();
  j.erase("predicted_tpot_s");
  try {
    Plan::from_json(j, "plan.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("predicted_tpot_s"), std::string::npos) << e.what();
  }
  j = sample_plan("llama-2-7b", 1, 20 * kGiB).to_json();
  j["operators"][3]["host_rows"] = j["operators"][3]["split_rows"].get<int64_t>() + 1;
  EXPECT_THROW(Plan::from_json(j, "plan.json"), Error);
  j = sample_plan("llama-2-7b", 1, 20 * kGiB).to_json();
  j["operators"][3]["data_path"] = "teleport";
  EXPECT_THROW(Plan::from_json(j, "plan.json"), Error);
  j["format"] = "something.else";
  EXPECT_THROW(Plan::from_json(j, "plan.json"), Error);
  // Edits the session-8 trial passed through: a host fraction outside [0, 1], more host units than
  // the operator has, a tensor with more rows than the split.
  const nlohmann::json good = sample_plan("llama-2-7b", 8, 6 * kGiB).to_json();
  for (const auto& [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"host_fraction", 1.5}, {"host_fraction", -0.5}, {"host_units", 1000000}, {"host_units", -1}}) {
    j = good;
    j["operators"][3][field] = value;
    try {
      Plan::from_json(j, "plan.json");
      FAIL() << "no error for " << field << " = " << value.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  j = good;
  j["operators"][3]["tensors"][0]["rows"] = int64_t(1) << 50;
  EXPECT_THROW(Plan::from_json(j, "plan.json"), Error);
  // The units of the largest split_rows are counted without overflow (fuzz_plan_json, session 50:
  // split_rows 2^63 - 1 overflowed the rounded-up division under UBSan): every unit is allowed.
  j = good;
  j["operators"][3]["split_rows"] = INT64_MAX;
  j["operators"][3]["unit_rows"] = 128;
  j["operators"][3]["host_units"] = INT64_MAX / 128 + 1;
  try {
    Plan::from_json(j, "plan.json");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("host_units"), std::string::npos) << e.what();
  }
  j["operators"][3]["host_units"] = INT64_MAX / 128 + 2;
  try {
    Plan::from_json(j, "plan.json");
    FAIL() << "no error for host_units beyond the operator's units";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("host_units"), std::string::npos) << e.what();
  }
  // Operator rows the engine reads (session-23 trial: these were accepted).
  const auto host_op = [&]() {
    for (size_t i = 0; i < good["operators"].size(); ++i)
      if (good["operators"][i]["host_rows"].get<int64_t>() > 0) return i;
    return size_t(0);
  };
  const size_t h = host_op();
  ASSERT_GT(good["operators"][h]["host_rows"].get<int64_t>(), 0);
  for (const auto& [field, value] : std::vector<std::pair<std::string, int64_t>>{
           {"unit_rows", 0}, {"cluster", 3}, {"host_bytes", 0}, {"host_ctas", 100000}, {"stages_per_cta", -1}}) {
    j = good;
    j["operators"][h][field] = value;
    try {
      Plan::from_json(j, "plan.json");
      FAIL() << "no error for " << field << " = " << value;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("plan field '"), std::string::npos) << e.what();
    }
  }
  // The shape in inputs, named as the file's (session-23 trial: batch 0 read "where: step shape").
  for (const auto& [field, value] : std::vector<std::pair<std::string, int64_t>>{
           {"batch", 0}, {"batch", 65537}, {"prompt_len", 0}, {"gen_len", -3}}) {
    j = good;
    j["inputs"][field] = value;
    try {
      Plan::from_json(j, "plan.json");
      FAIL() << "no error for " << field << " = " << value;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("plan field '" + field + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("plan.json: inputs"), std::string::npos) << e.what();
    }
  }
}

Plan single_path_plan(DataPath path) {
  PlanRequest r;
  r.model_name = "llama-2-7b";
  r.shape.batch = 8;
  r.shape.prompt_len = 32;
  r.shape.gen_len = 32;
  r.offload_ratio = 0.1;
  r.allow_staged = false;
  r.single_path = path;
  return make_plan(locate_model_config("llama-2-7b").config, HardwareProfile::h200_default(), r);
}

TEST(PlanJson, SinglePathPlansRecordTheirModeAndRoundTrip) {
  const Plan zc = single_path_plan(DataPath::kZeroCopy), pf = single_path_plan(DataPath::kStaged);
  EXPECT_EQ(zc.inputs.offload_mode, "zero-copy");
  EXPECT_EQ(pf.inputs.offload_mode, "prefetch");
  EXPECT_EQ(single_path_plan(DataPath::kDirect).inputs.offload_mode, "direct");
  EXPECT_EQ(sample_plan("llama-2-7b", 8, 6 * kGiB).inputs.offload_mode, "auto");
  EXPECT_GT(zc.totals.zero_copy_host_bytes, 0);
  EXPECT_EQ(zc.totals.zero_copy_host_bytes, zc.totals.host_bytes);
  EXPECT_EQ(zc.totals.direct_host_bytes, 0);
  EXPECT_GT(pf.totals.prefetch_pipeline_s, 0);
  for (const Plan& p : {zc, pf}) {
    const std::string text = p.to_json().dump();
    const Plan back = Plan::from_json(nlohmann::json::parse(text), "round trip");
    EXPECT_EQ(back, p);
    EXPECT_EQ(back.to_json().dump(), text);
  }
  // A plan file from before session 11 has no offload_mode: it loads, with the mode unknown.
  nlohmann::json old = sample_plan("llama-2-7b", 8, 6 * kGiB).to_json();
  old["inputs"].erase("offload_mode");
  EXPECT_EQ(Plan::from_json(old, "old.json").inputs.offload_mode, "");
}

TEST(PlanJson, ImpossibleTimesAndPathsAreRefused) {
  const nlohmann::json zc = single_path_plan(DataPath::kZeroCopy).to_json();
  const nlohmann::json pf = single_path_plan(DataPath::kStaged).to_json();
  const auto expect_error = [](const nlohmann::json& j, const std::string& needle) {
    try {
      Plan::from_json(j, "plan.json");
      FAIL() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("plan.json"), std::string::npos) << e.what();
    }
  };
  for (double bad : {0.0, -5.0, 1e308}) {
    nlohmann::json j = zc;
    j["predicted_tpot_s"] = bad;
    expect_error(j, "predicted_tpot_s");
  }
  for (double bad : {-1.0, 1e308}) {
    nlohmann::json j = pf;
    j["totals"]["prefetch_pipeline_s"] = bad;
    expect_error(j, "prefetch_pipeline_s");
  }
  nlohmann::json j = pf;
  j["totals"]["prefetch_pipeline_s"] = "fast";
  expect_error(j, "prefetch_pipeline_s");
  j = zc;
  j["inputs"]["offload_mode"] = "teleport";
  expect_error(j, "offload_mode");
  // Paths: the first operator with host bytes of each kind.
  const auto first = [](const nlohmann::json& p, const std::string& kind) {
    for (size_t i = 0; i < p["operators"].size(); ++i)
      if (p["operators"][i]["kind"] == kind && p["operators"][i]["host_bytes"].get<int64_t>() > 0) return i;
    ADD_FAILURE() << "no " << kind << " with host bytes";
    return size_t(0);
  };
  j = zc;
  j["operators"][first(zc, "linear")]["data_path"] = "none";
  expect_error(j, "data_path 'none' with");
  j = pf;
  j["operators"][first(pf, "attention")]["data_path"] = "staged";
  expect_error(j, "only linear weights are staged");
  j = zc;
  j["operators"][first(zc, "linear")]["data_path"] = "direct";
  expect_error(j, "in a plan for --offload zero-copy");
  j = pf;
  j["operators"][first(pf, "linear")]["data_path"] = "zero_copy";
  expect_error(j, "in a plan for --offload prefetch");
  j = pf;
  j["operators"][first(pf, "linear")]["data_path"] = "direct";
  expect_error(j, "every host linear is staged");
  j = zc;
  j["operators"][2]["predicted_time_s"] = -0.5;
  expect_error(j, "predicted_time_s");
  const nlohmann::json direct = single_path_plan(DataPath::kDirect).to_json();
  j = direct;
  j["operators"][first(direct, "linear")]["data_path"] = "staged";
  expect_error(j, "in a plan for --offload direct");
  j = direct;
  j["totals"]["zero_copy_host_bytes"] = 5;
  expect_error(j, "zero_copy_host_bytes");
  j = zc;  // a file without a mode predates zero_copy paths
  j["inputs"].erase("offload_mode");
  expect_error(j, "zero_copy_host_bytes");
  j["totals"].erase("zero_copy_host_bytes");
  expect_error(j, "(not recorded)");
  j = zc;
  j["totals"]["pin_time_s"] = -1.0;
  expect_error(j, "pin_time_s");
  // The prefetch engine's ring is kStagingRingSlots slots of the largest staged host part.
  const Plan p = single_path_plan(DataPath::kStaged);
  int64_t largest = 0;
  for (const PlanOp& o : p.ops)
    if (o.path == DataPath::kStaged) largest = std::max(largest, o.host_bytes);
  EXPECT_EQ(p.totals.staging_ring_bytes, kStagingRingSlots * largest);
  EXPECT_EQ(p.totals.hbm_bytes, p.capacity.total_bytes - p.totals.host_bytes + kStagingRingSlots * largest);
}

TEST(Planner, PrefetchAndZeroCopyMoveNothingWithoutPressure) {
  // The direct allocation takes balance points where all fits (a gain only on the direct path);
  // prefetch and zero-copy keep everything in HBM then, and predict what the all-HBM engine runs.
  PlanRequest r;
  r.model_name = "llama-2-7b";
  r.shape.batch = 8;
  r.shape.prompt_len = 32;
  r.shape.gen_len = 32;
  r.allow_staged = false;
  const ModelConfig cfg = locate_model_config("llama-2-7b").config;
  r.single_path = DataPath::kDirect;
  EXPECT_GT(make_plan(cfg, HardwareProfile::h200_default(), r).totals.host_bytes, 0);
  r.offload_ratio = 0.0;
  const double all_hbm = make_plan(cfg, HardwareProfile::h200_default(), r).predicted_tpot_s;
  r.offload_ratio.reset();
  for (DataPath path : {DataPath::kStaged, DataPath::kZeroCopy}) {
    r.single_path = path;
    const Plan p = make_plan(cfg, HardwareProfile::h200_default(), r);
    EXPECT_EQ(p.totals.host_bytes, 0) << data_path_name(path);
    EXPECT_EQ(p.totals.prefetch_pipeline_s, 0) << data_path_name(path);
    EXPECT_DOUBLE_EQ(p.predicted_tpot_s, all_hbm) << data_path_name(path);
  }
}

TEST(ByteSize, ParsesUnits) {
  EXPECT_EQ(parse_byte_size("20GiB", "f"), 20 * kGiB);
  EXPECT_EQ(parse_byte_size("20gib", "f"), 20 * kGiB);
  EXPECT_EQ(parse_byte_size("20G", "f"), 20 * kGiB);
  EXPECT_EQ(parse_byte_size("1.5GB", "f"), 1'500'000'000);
  EXPECT_EQ(parse_byte_size("512 MiB", "f"), 512 << 20);
  EXPECT_EQ(parse_byte_size("4096", "f"), 4096);
  EXPECT_EQ(parse_byte_size("2KB", "f"), 2000);
  EXPECT_EQ(parse_byte_size("0.5KiB", "f"), 512);
  EXPECT_EQ(parse_byte_size(" 20GiB\t", "f"), 20 * kGiB);  // blanks around a quoted value
  for (const char* bad : {"", "GiB", "-1GiB", "1.2.3GB", "10XB", "20 Gigs", ".", "1e3"})
    EXPECT_THROW(parse_byte_size(bad, "--gpu-memory"), Error) << bad;
  EXPECT_THROW(parse_byte_size("99999999TiB", "f"), Error);
  // An exponent is named as such (it read "unknown unit 'e30GiB'").
  for (const char* exp : {"1e30GiB", "2E9", "1e-3GB"}) {
    try {
      parse_byte_size(exp, "--gpu-memory");
      ADD_FAILURE() << exp << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("has an exponent"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(format_bytes(20.0 * kGiB), "20.00 GiB");
  EXPECT_EQ(format_bytes(512), "512 B");
}

using testing::RunResult;
using testing::run_shell;

RunResult dak_plan(const std::string& args, bool stderr_too = true) {
  // From another directory: shipped configs and the default profile must not depend on the cwd.
  return run_shell("cd / && " + std::string(DAK_BINARY) + " plan " + args + (stderr_too ? " 2>&1" : " 2>/dev/null"));
}

TEST(PlanCli, JsonOutputMatchesTheLibrary) {
  const RunResult r =
      dak_plan("--model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --gpu-memory 6GiB --output json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const Plan cli = Plan::from_json(nlohmann::json::parse(r.output), "dak plan stdout");
  const Plan lib = sample_plan("llama-2-7b", 8, 6 * kGiB);
  EXPECT_EQ(cli, lib);
}

TEST(PlanCli, ASweepTableGivenAsAPlanIsNamedSo) {
  // The trial of session 27: `--plan` of the --sweep-ratios JSON read "plan data is not a JSON object".
  const RunResult sweep = dak_plan("--model llama-2-7b --sweep-ratios 0,50 --output json", false);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.output;
  try {
    Plan::from_json(nlohmann::json::parse(sweep.output), "sweep.json");
    FAIL() << "a sweep table loaded as a plan";
  } catch (const Error& e) {
    EXPECT_EQ(e.what_part(), "this is the ratio table of `dak plan --sweep-ratios`, not a plan");
    EXPECT_NE(e.fix_part().find("--offload-ratio R --output json"), std::string::npos) << e.what();
  }
}

TEST(PlanCli, TextOutputShowsTableTpotAndEb) {
  const RunResult r = dak_plan("--model opt-6.7b --gpu-memory 10GiB --allocator uniform");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* s : {"layers.0.qkv_proj", "predicted TPOT", "EB", "host %", "bound", "per role"})
    EXPECT_NE(r.output.find(s), std::string::npos) << s << "\n" << r.output;
  EXPECT_EQ(r.output.find("layers.5.qkv_proj"), std::string::npos);  // layer 0 only without --verbose
  const RunResult v = dak_plan("--model opt-6.7b --gpu-memory 10GiB --verbose");
  EXPECT_NE(v.output.find("layers.31.fc2"), std::string::npos);
  // The mode is named, and zero-copy bytes are not called direct.
  EXPECT_NE(r.output.find("offload auto (staged path allowed)"), std::string::npos) << r.output;
  const RunResult z = dak_plan("--model opt-6.7b --gpu-memory 10GiB --offload zero-copy");
  ASSERT_EQ(z.exit_code, 0) << z.output;
  for (const char* s : {"offload zero-copy (the ordinary kernels", "direct 0 B, staged 0 B, zero-copy",
                        "at least the host bytes at the link's rate"})
    EXPECT_NE(z.output.find(s), std::string::npos) << s << "\n" << z.output;
  const RunResult f = dak_plan("--model opt-6.7b --gpu-memory 10GiB --offload prefetch");
  EXPECT_NE(f.output.find("offload prefetch (every host linear staged)"), std::string::npos) << f.output;
  EXPECT_NE(f.output.find("copy pipeline"), std::string::npos) << f.output;
  // The trial of session 27: what the prediction is, and the references apart from it.
  EXPECT_NE(f.output.find("= the copy pipeline's replay (staged linears copied ahead of their kernels)\n"),
            std::string::npos)
      << f.output;
  const RunResult d = dak_plan("--model opt-6.7b --gpu-memory 10GiB --offload direct");
  EXPECT_NE(d.output.find("= the operators one after another, of which launch overheads"), std::string::npos)
      << d.output;
}

TEST(PlanCli, AcceptsConfigPathsAndFolders) {
  const std::string file = locate_model_config("qwen2-7b").path.string();
  const RunResult r = dak_plan("--model " + file + " --phase prefill --output json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output).at("inputs").at("phase"), "prefill");
  const RunResult d = dak_plan(std::string("--model ") + DAK_TEST_DATA_DIR + "/hf_parity/llama_gqa --batch 2");
  EXPECT_EQ(d.exit_code, 0) << d.output;
}

TEST(PlanCli, BadInputGivesClearErrors) {
  RunResult r = dak_plan("--model llama-2-7b --gpu-memory 20XB");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // not a size: the option's parser refuses it
  EXPECT_NE(r.output.find("unknown unit"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--gpu-memory"), std::string::npos) << r.output;
  r = dak_plan("--model no-such-model");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("llama-2-7b"), std::string::npos) << r.output;  // lists the shipped configs
  r = dak_plan("--model llama-2-70b --gpu-memory 2GiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("pin"), std::string::npos) << r.output;
  r = dak_plan("--model llama-2-7b --batch 0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  r = dak_plan("--model llama-2-7b --profile /nonexistent.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  r = dak_plan("--model llama-2-7b --offload-ratio -1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("[0, 1]"), std::string::npos) << r.output;
  r = dak_plan("--model llama-2-7b --allocator best");
  EXPECT_NE(r.exit_code, 0) << r.output;
}

TEST(PlanCli, SweepPrintsGreedyAndUniform) {
  const RunResult r = dak_plan("--model opt-6.7b --batch 16 --sweep-ratios 0:100:50 --output json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_DOUBLE_EQ(j[1].at("ratio").get<double>(), 0.5);
  EXPECT_GE(j[1].at("speedup").get<double>(), 1.0);
  EXPECT_NE(dak_plan("--model opt-6.7b --sweep-ratios 0:abc:10").exit_code, 0);
  EXPECT_NE(dak_plan("--model opt-6.7b --sweep-ratios nan").exit_code, 0);
  const RunResult many = dak_plan("--model opt-6.7b --sweep-ratios 0:100:1e-9");
  EXPECT_EQ(many.exit_code, 1) << many.output;
  EXPECT_NE(many.output.find("more than 1001 points"), std::string::npos) << many.output;
  // Ratios that need more pinned memory than the profile has, or leave more in HBM than the
  // budget, are reported, not fatal: 131 GiB in all fits HBM at 0 % but not the 120 GiB of pins at
  // 100 %; with 162 GiB (prompt 128) 0 % does not fit HBM.
  const RunResult big =
      dak_plan("--model opt-30b --batch 512 --prompt-len 80 --sweep-ratios 0,100 --output json", false);
  ASSERT_EQ(big.exit_code, 0) << big.output;
  const nlohmann::json b = nlohmann::json::parse(big.output);
  EXPECT_FALSE(b[0].contains("refused"));
  EXPECT_NE(b[1].at("refused").get<std::string>().find("pin"), std::string::npos);
  const RunResult tall =
      dak_plan("--model opt-30b --batch 512 --prompt-len 128 --sweep-ratios 0,50 --output json", false);
  ASSERT_EQ(tall.exit_code, 0) << tall.output;
  const nlohmann::json t = nlohmann::json::parse(tall.output);
  EXPECT_NE(t[0].at("refused").get<std::string>().find("more than the HBM budget"), std::string::npos);
  EXPECT_FALSE(t[1].contains("refused"));
}

TEST(PlanCli, SweepRowsTellTheGivenRatiosApart) {
  // New-user trial: --sweep-ratios 0,0.5,99.99,100 printed whole percent (two rows read "0 %"), and
  // 0:1000:500 said "'1000' is not a percentage".
  RunResult r = dak_plan("--model llama-2-7b --sweep-ratios 0,0.5,99.99,100", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* row : {"\n| 0 % | ", "\n| 0.5 % | ", "\n| 99.99 % | ", "\n| 100 % | "}) {
    EXPECT_NE(r.output.find(row), std::string::npos) << row << "\n" << r.output;
  }
  r = dak_plan("--model llama-2-7b --sweep-ratios 0:0.3:0.1", false);  // 0.1 steps: no 0.30000000000000004
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* row : {"\n| 0.1 % | ", "\n| 0.2 % | ", "\n| 0.3 % | "}) {
    EXPECT_NE(r.output.find(row), std::string::npos) << row << "\n" << r.output;
  }
  // A number outside [0, 100] is out of range (exit 1); text that is not a number a usage error (exit 2).
  r = dak_plan("--model llama-2-7b --sweep-ratios 0:1000:500");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("'1000' is outside [0, 100] percent"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not a percentage"), std::string::npos) << r.output;
  r = dak_plan("--model llama-2-7b --sweep-ratios=-5,50");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("'-5' is outside [0, 100] percent"), std::string::npos) << r.output;
  r = dak_plan("--model llama-2-7b --sweep-ratios 0:abc:10");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'abc' is not a number"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("where: --sweep-ratios"), std::string::npos) << r.output;
}

TEST(PlanReport, PercentagesHaveTheDecimalsThatTellThemApart) {
  EXPECT_EQ(format_percent(0.0), "0");
  EXPECT_EQ(format_percent(-0.0), "0");
  EXPECT_EQ(format_percent(0.005), "0.5");
  EXPECT_EQ(format_percent(0.9999), "99.99");
  EXPECT_EQ(format_percent(1.0), "100");
  EXPECT_EQ(format_percent(0.29), "29");  // 28.999999999999996 in binary
  EXPECT_EQ(format_percent(0.123456), "12.3456");
  EXPECT_EQ(format_percent(1e-7), "0.00001");
}

TEST(PlanCli, APositiveForcedRatioIsALowerBound) {
  // Session-23 trial: --offload-ratio 1e-300 said "forced to 0.00 %" over a plan with 0.79 % on the
  // host (the balance points of the memory-bound linears, allocator.h phase 1, stay).
  RunResult r = dak_plan("--model llama-2-7b --offload-ratio 1e-300");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("offload ratio forced to at least 1e-298 %"), std::string::npos) << r.output;
  r = dak_plan("--model llama-2-7b --offload-ratio 0.1");
  EXPECT_NE(r.output.find("offload ratio forced to at least 10 %"), std::string::npos) << r.output;
  r = dak_plan("--model llama-2-7b --offload-ratio 0");
  EXPECT_NE(r.output.find("offload ratio forced to exactly 0 %"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("host      0 B"), std::string::npos) << r.output;
}

TEST(PlanCli, AHostAmountIsReportedAsTheAmountUnderTheProfilesBudget) {
  // Session-48 trial: `dak plan --cpu-offload-gb 4` printed "forced to at least 31.24809277 %" (the
  // derived ratio with every digit, as if the user had typed it) and dropped the "(profile default)"
  // tag of the budget it had not been given.
  RunResult r = dak_plan("--model llama-2-7b --cpu-offload-gb 4 --profile h200-default");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("offload ratio forced to at least 31.25 % of weights + KV (--cpu-offload-gb: 4.00 GiB on "
                          "the host)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("HBM budget 137.29 GiB (profile default)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("31.248"), std::string::npos) << r.output;
  // The JSON records the amount; it round-trips, and a fix that redoes the plan asks for the amount.
  r = dak_plan("--model llama-2-7b --cpu-offload-gb 4.5 --profile h200-default --output json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.at("inputs").at("cpu_offload_bytes").get<int64_t>(), 9 * kGiB / 2);
  EXPECT_TRUE(j.at("inputs").at("gpu_memory_default").get<bool>());
  const Plan back = Plan::from_json(j, "amount.json");
  ASSERT_TRUE(back.inputs.cpu_offload_bytes.has_value());
  EXPECT_EQ(*back.inputs.cpu_offload_bytes, 9 * kGiB / 2);
  EXPECT_EQ(back.to_json().dump(), j.dump());
  EXPECT_EQ(planned_budget_flags(back.inputs), " --cpu-offload-gb 4.5 --profile h200-default");
  // The fewest digits that give the same bytes back (trial of session 49: 0.049999999813735485).
  r = dak_plan("--model llama-2-7b --cpu-offload-gb 0.05 --profile h200-default --output json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(planned_budget_flags(Plan::from_json(nlohmann::json::parse(r.output), "small.json").inputs),
            " --cpu-offload-gb 0.05 --profile h200-default");
  r = dak_plan("--model llama-2-7b --cpu-offload-gb 10 --profile h200-default --output json");  // not 1e+01
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(planned_budget_flags(Plan::from_json(nlohmann::json::parse(r.output), "ten.json").inputs),
            " --cpu-offload-gb 10 --profile h200-default");
  // A ratio given as a ratio keeps its own digits and flag; a plan without the field reads as before.
  r = dak_plan("--model llama-2-7b --offload-ratio 0.3124809 --profile h200-default --output json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json ratio = nlohmann::json::parse(r.output);
  EXPECT_TRUE(ratio.at("inputs").at("cpu_offload_bytes").is_null());
  EXPECT_EQ(planned_budget_flags(Plan::from_json(ratio, "ratio.json").inputs),
            " --offload-ratio 0.3124809 --profile h200-default");
  ratio["inputs"].erase("cpu_offload_bytes");
  EXPECT_FALSE(Plan::from_json(ratio, "old.json").inputs.cpu_offload_bytes.has_value());
  // Malformed amounts name the field.
  nlohmann::json bad = j;
  bad["inputs"]["cpu_offload_bytes"] = -1;
  EXPECT_THROW(Plan::from_json(bad, "bad.json"), Error);
  bad = j;
  bad["inputs"]["offload_ratio"] = nullptr;
  try {
    Plan::from_json(bad, "bad.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu_offload_bytes"), std::string::npos) << e.what();
  }
}

TEST(PlanCli, AFasterPlacementLeftOutForItsRingIsNoted) {
  // Trial of session 49: SmolLM2 at 55 % was planned all direct (3.412 ms) while a staged placement
  // predicted 2.831 ms was dropped for holding more HBM than the model without offload; only
  // DAK_PLAN_TRACE=1 said so.
  const std::string model =
      (std::filesystem::path(DAK_DEFAULT_MODELS_DIR) / "SmolLM2-135M-Instruct.Q4_1.gguf").string();
  RunResult r = dak_plan("--model " + model + " --offload-ratio 0.55 --profile h200-default");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note      a placement with staged linears was predicted faster ("), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the model needs without offload, so it would free no HBM"), std::string::npos) << r.output;
  r = dak_plan("--model " + model + " --offload-ratio 0.55 --profile h200-default --output json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.at("notes").size(), 1u) << r.output;
  const Plan back = Plan::from_json(j, "notes.json");
  EXPECT_EQ(back.notes.size(), 1u);
  EXPECT_EQ(back.to_json(), j);
  nlohmann::json bad = j;
  bad["notes"] = {1, 2};
  EXPECT_THROW(Plan::from_json(bad, "bad.json"), Error);
  // A plan without one has "notes": [] (the Llama-2-7B point takes its fastest placement), and a file
  // without the key (written before session 49) loads with none.
  r = dak_plan("--model llama-2-7b --offload-ratio 0.3 --profile h200-default --output json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  nlohmann::json plain = nlohmann::json::parse(r.output);
  EXPECT_EQ(plain.at("notes"), nlohmann::json::array()) << r.output;
  plain.erase("notes");
  EXPECT_TRUE(Plan::from_json(plain, "old.json").notes.empty());
}

TEST(PlanCli, ForcedRatiosAndBudgetsMustFitTheGpu) {
  RunResult r = dak_plan("--model llama-2-70b --batch 8 --gpu-memory 4GiB --offload-ratio 0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("more than the HBM budget of 4.00 GiB"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("force at least"), std::string::npos) << r.output;
  r = dak_plan("--model llama-2-7b --gpu-memory 1TiB");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("free after context creation"), std::string::npos) << r.output;
  EXPECT_EQ(dak_plan("--model llama-2-7b --gpu-memory 100GiB").exit_code, 0);
}

}  // namespace
}  // namespace dak
