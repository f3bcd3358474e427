// A second new-user trial's findings: fix-line numbers that, passed back, are refused (rounded the
// wrong way), limits named in another flag than the one given, fix lines that are not complete
// commands, files passed to the wrong option, and notices that are not true.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint_test_util.h"
#include "cli_test_util.h"

namespace {

using dak::testing::RunResult;

RunResult run_dak(const std::string& args) {
  return dak::testing::run_dak_env("", args);
}

const std::string kData = DAK_TEST_DATA_DIR;
const std::string kProfile = kData + "/../../profiles/h200-default.json";

using dak::testing::contains;

// The word after `prefix` in `s` (up to a space, comma or parenthesis); empty when `prefix` is absent.
std::string word_after(const std::string& s, const std::string& prefix) {
  const size_t at = s.find(prefix);
  if (at == std::string::npos) return "";
  const size_t from = at + prefix.size();
  return s.substr(from, s.find_first_of(" ,()\n", from) - from);
}

// h200-default with only 1 MiB of pinnable host memory.
std::string small_pin_profile() {
  const std::string path = ::testing::TempDir() + "dak_trial2_smallpin.json";
  nlohmann::json j;
  std::ifstream(kProfile) >> j;
  j["host_memory"]["pinnable_bytes"] = 1048576;
  std::ofstream(path) << j.dump(1);
  return path;
}

TEST(CliTrial2, AnAtMostFixNumberIsAcceptedWhenPassedBack) {
  // The trial: "give at most 14.02" (rounded up) was then refused, and a small model's limit read
  // "give at most 0.00"; the pinning limit read "at most 0.0000 fits".
  const struct {
    std::string run, prefix, flag, refused;
  } cases[] = {
      {"generate --model llama-2-7b --random-weights --prompt-ids 1,2,3 --prompt-ids 4,5 -n 1500", "give at most ",
       "--cpu-offload-gb", "can move there"},
      {"generate --model " + kData + "/hf_parity/opt --prompt-ids 1,2,3 -n 4", "give at most ", "--cpu-offload-gb",
       "can move there"},
      {"plan --model llama-2-7b --profile " + small_pin_profile(), "offload ratio (at most ", "--offload-ratio",
       "can pin only"},
      // More than can move and more than can be pinned (the trial of session 27: "at most 128.49", then
      // refused at the profile's 120 GiB): the tighter limit.
      {"generate --model llama-2-70b --random-weights --prompt-ids 1,2,3", "give at most ", "--cpu-offload-gb",
       "can pin only"},
  };
  for (const auto& c : cases) {
    const std::string first = c.run + " " + c.flag + (c.flag == "--offload-ratio" ? " 0.5" : " 1000");
    const RunResult r = run_dak(first);
    EXPECT_EQ(r.exit_code, 1) << first << ": " << r.output;
    const std::string most = word_after(r.output, c.prefix);
    ASSERT_FALSE(most.empty()) << first << ": " << r.output;
    EXPECT_GT(std::stod(most), 0.0) << first << ": " << r.output;
    const RunResult again = run_dak(c.run + " " + c.flag + " " + most);
    EXPECT_FALSE(contains(again.output, c.refused)) << most << ": " << again.output;
  }
}

TEST(CliTrial2, PlanTakesCpuOffloadGbAsGenerateDoes) {
  // The trial of session 27: dak plan had no --cpu-offload-gb, so a `generate --cpu-offload-gb N` run
  // could not be previewed. It places N GiB on the host, with generate's checks and words.
  const RunResult r = dak::testing::run_dak_env("", "plan --model llama-2-7b --cpu-offload-gb 4 --output json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  const double host_gib = j["totals"]["host_bytes"].get<double>() / double(int64_t(1) << 30);
  EXPECT_GE(host_gib, 4.0 - 1e-9) << r.output;
  EXPECT_LT(host_gib, 4.05) << r.output;
  const struct {
    std::string flags, says;
    int exit_code;
  } refused[] = {
      {"--cpu-offload-gb 4 --gpu-memory 40GiB", "--gpu-memory (the HBM budget) and --cpu-offload-gb", 1},
      {"--cpu-offload-gb 1000", "can move there", 1},
      {"--cpu-offload-gb -1", "--cpu-offload-gb -1 is negative", 1},
      {"--cpu-offload-gb 4GiB", "has a unit, but this option takes a plain number of GiB", 2},
      {"--cpu-offload-gb 4 --sweep-ratios 0,50", "--cpu-offload-gb", 1},
  };
  for (const auto& c : refused) {
    const RunResult e = run_dak("plan --model llama-2-7b " + c.flags);
    EXPECT_EQ(e.exit_code, c.exit_code) << c.flags << ": " << e.output;
    EXPECT_TRUE(contains(e.output, c.says)) << c.flags << ": " << e.output;
  }
  const RunResult both = run_dak("plan --model llama-2-7b --cpu-offload-gb 4 --offload-ratio 0.1");
  EXPECT_EQ(both.exit_code, 0) << both.output;
  EXPECT_TRUE(contains(both.output, "dak: notice: --offload-ratio overrides --cpu-offload-gb 4")) << both.output;
}

TEST(CliTrial2, APinningLimitOfCpuOffloadGbIsNamedInItsOwnTerms) {
  // The trial: --cpu-offload-gb 0.2 past the pinnable memory said "where: --offload-ratio" and
  // "the offload ratio (at most 0.0038 fits)".
  const std::string run =
      "generate --model llama-2-7b --random-weights --prompt-ids 1,2 -n 2 --profile " + small_pin_profile();
  const RunResult r = run_dak(run + " --cpu-offload-gb 0.2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "where: --cpu-offload-gb")) << r.output;
  EXPECT_FALSE(contains(r.output, "offload ratio")) << r.output;
  const std::string most = word_after(r.output, "fix:   give at most ");
  ASSERT_FALSE(most.empty()) << r.output;
  const RunResult again = run_dak(run + " --cpu-offload-gb " + most);
  EXPECT_FALSE(contains(again.output, "can pin only")) << most << ": " << again.output;
}

TEST(CliTrial2, BudgetFixesGiveAUsableSize) {
  // The trial: "139.29 GiB is more than the 139.29 GiB ... free", "fix: give at most the GPU's free
  // memory"; --gpu-memory 1KiB said "a size without a unit counts bytes", though it has one.
  const RunResult over = run_dak("plan --model llama-2-7b --gpu-memory 139.29GiB");
  EXPECT_EQ(over.exit_code, 1) << over.output;
  const std::string most = word_after(over.output, "fix:   give at most ");
  ASSERT_FALSE(most.empty()) << over.output;
  EXPECT_EQ(run_dak("plan --model llama-2-7b --gpu-memory " + most).exit_code, 0) << most;
  for (const std::string cmd : {std::string("plan --model llama-2-7b"),
                                "generate --model " + kData + "/hf_parity/llama_gqa --prompt-ids 1,2 -n 2"}) {
    const RunResult r = run_dak(cmd + " --gpu-memory 1KiB");
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "without a unit")) << cmd << ": " << r.output;
    const std::string least = word_after(r.output, "raise --gpu-memory to at least ");
    ASSERT_FALSE(least.empty()) << cmd << ": " << r.output;
    const RunResult again = run_dak(cmd + " --gpu-memory " + least);
    EXPECT_FALSE(contains(again.output, "cannot hold")) << least << ": " << again.output;
    // Without a unit the hint stays.
    EXPECT_TRUE(contains(run_dak(cmd + " --gpu-memory 1000").output, "a size without a unit counts bytes")) << cmd;
  }
}

// Runs the `dak plan ...` command a fix line gives after `prefix` (to the end of the line).
RunResult run_fix_command(const std::string& output, const std::string& prefix) {
  const size_t at = output.find(prefix + "dak plan ");
  if (at == std::string::npos) return {127, "no command after '" + prefix + "' in: " + output};
  const size_t from = at + prefix.size() + 4;
  return dak::testing::run_shell(std::string(DAK_BINARY) + " " + output.substr(from, output.find('\n', from) - from));
}

TEST(CliTrial2, PlanFileFixesAreCompleteCommandsThatWork) {
  // The trial: --offload none with a plan suggested "--offload auto or direct" (then refused); the
  // mode and shape fixes lacked --model ("dak plan --batch 1 ... ..."); the model fix said "add the
  // --gpu-memory you planned with" though the plan records it.
  const std::string dir = ::testing::TempDir() + "dak_trial2_plans";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string plan = dir + "/p.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 1 --prompt-len 8 --gen-len 8 --offload-ratio 0.3 --offload "
                    "prefetch --output json > " + plan).exit_code,
            0);
  const std::string gen = "generate --model llama-2-7b --random-weights --prompt-ids 1,2 --plan ";
  const RunResult none = run_dak(gen + plan + " -n 2 --offload none");
  EXPECT_EQ(none.exit_code, 1) << none.output;
  EXPECT_TRUE(contains(none.output, "fix:   drop --offload none (the run then takes the mode the plan was made for, "
                                    "--offload prefetch)"))
      << none.output;
  EXPECT_FALSE(contains(none.output, "--offload auto or direct")) << none.output;
  const struct {
    std::string flags, prefix;
  } cases[] = {
      {"-n 2 --offload direct", "make the plan for this mode: "},
      {"-n 20", "make the plan for this run: "},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(gen + plan + " " + c.flags);
    EXPECT_EQ(r.exit_code, 1) << c.flags << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.prefix + "dak plan --model ")) << c.flags << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "--offload-ratio 0.3 --profile h200-default --output json > " + dir + "/p-llama-2-7b.json"))
        << c.flags << ": " << r.output;
    ASSERT_EQ(run_fix_command(r.output, c.prefix).exit_code, 0) << c.flags << ": " << r.output;
    const RunResult again = run_dak(gen + dir + "/p-llama-2-7b.json " + c.flags);
    EXPECT_FALSE(contains(again.output, "the plan ")) << c.flags << ": " << again.output;
    std::filesystem::remove(dir + "/p-llama-2-7b.json");
  }
  // The budget a plan for another model was made with is given.
  ASSERT_EQ(run_dak("plan --model llama-2-7b --gpu-memory 20GiB --output json > " + plan).exit_code, 0);
  const RunResult model =
      run_dak("generate --model " + kData + "/hf_parity/llama_gqa --prompt-ids 1,2 -n 2 --plan " + plan);
  EXPECT_EQ(model.exit_code, 1) << model.output;
  EXPECT_TRUE(contains(model.output, "--gpu-memory 20GiB --profile h200-default --output json > ")) << model.output;
  EXPECT_FALSE(contains(model.output, "you planned with")) << model.output;
  // The profile a plan was made with is given too (session 33's trial: an h100-default plan was
  // re-planned for dak plan's default), whichever it is: that default depends on the machine's GPU.
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 1 --prompt-len 8 --gen-len 8 --offload-ratio 0.3 --profile "
                    "h100-default --output json > " + plan).exit_code,
            0);
  const RunResult h100 = run_dak(gen + plan + " -n 20");
  EXPECT_EQ(h100.exit_code, 1) << h100.output;
  EXPECT_TRUE(contains(h100.output, "--offload-ratio 0.3 --profile h100-default --output json > ")) << h100.output;
  ASSERT_EQ(run_fix_command(h100.output, "make the plan for this run: ").exit_code, 0) << h100.output;
  const RunResult h100_again = run_dak(gen + dir + "/p-llama-2-7b.json -n 20");
  EXPECT_FALSE(contains(h100_again.output, "the plan ")) << h100_again.output;
  std::filesystem::remove(dir + "/p-llama-2-7b.json");
  // A profile file: the plan records only its name, so the fix says which file to pass.
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 1 --prompt-len 8 --gen-len 8 --offload-ratio 0.3 --profile " +
                    kData + "/../../profiles/h200-measured.json --output json > " + plan).exit_code,
            0);
  // A profile file: the plan records its absolute path, which the fix passes again (session 33's
  // second trial: a placeholder that did not run and quoted the name unsafely).
  const RunResult measured = run_dak(gen + plan + " -n 20");
  const std::string measured_file =
      std::filesystem::absolute(kData + "/../../profiles/h200-measured.json").lexically_normal().string();
  EXPECT_TRUE(contains(measured.output, "--offload-ratio 0.3 --profile " + measured_file + " --output json > "))
      << measured.output;
  ASSERT_EQ(run_fix_command(measured.output, "make the plan for this run: ").exit_code, 0) << measured.output;
  const RunResult measured_again = run_dak(gen + dir + "/p-llama-2-7b.json -n 20");
  EXPECT_FALSE(contains(measured_again.output, "the plan ")) << measured_again.output;
  std::filesystem::remove(dir + "/p-llama-2-7b.json");
  ASSERT_EQ(run_dak("plan --model llama-2-7b --batch 1 --prompt-len 8 --gen-len 8 --offload-ratio 0.3 --output json > " +
                    plan).exit_code,
            0);
  const RunResult plain = run_dak(gen + plan + " -n 20");
  EXPECT_TRUE(contains(plain.output, "--offload-ratio 0.3 --profile h200-default --output json > ")) << plain.output;
  std::filesystem::remove_all(dir);
}

TEST(CliTrial2, APlanOnTheCpuIsRefusedWithoutAdoptingItsMode) {
  // The trial: --plan with --device cpu said "running in that mode", then refused the plan.
  const std::string tiny = kData + "/hf_parity/llama_gqa";
  const std::string plan = ::testing::TempDir() + "dak_trial2_cpu_plan.json";
  ASSERT_EQ(run_dak("plan --model " + tiny + " --batch 1 --prompt-len 2 --gen-len 2 --offload-ratio 0.3 --offload "
                    "prefetch --output json > " + plan).exit_code,
            0);
  const RunResult r = run_dak("generate --model " + tiny + " --prompt-ids 1,2 -n 2 --device cpu --plan " + plan);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--device cpu runs everything from host memory")) << r.output;
  EXPECT_FALSE(contains(r.output, "running in that mode")) << r.output;
  std::remove(plan.c_str());
}

TEST(CliTrial2, AJsonFileGivenAsTheCheckpointSaysWhatItIs) {
  // The trial: a profile, a plan or a config given where weights are read said "unrecognized
  // checkpoint file"; a config file did not suggest --random-weights as its shipped name does.
  const std::string plan = ::testing::TempDir() + "dak_trial2_model_plan.json";
  ASSERT_EQ(run_dak("plan --model llama-2-7b --output json > " + plan).exit_code, 0);
  const std::string text = ::testing::TempDir() + "dak_trial2_text.txt";
  std::ofstream(text) << "hello\n";
  const std::string config = kData + "/../../configs/llama-2-7b.json";
  const struct {
    std::string args, fix;
  } cases[] = {
      {"generate -p hi --model " + kProfile, "this is a hardware profile; pass it with --profile"},
      {"generate -p hi --model " + plan, "this is an offload plan; pass it with --plan"},
      {"inspect " + kProfile, "this is a hardware profile; pass it with --profile"},
      {"perplexity -f " + text + " --model " + kProfile, "this is a hardware profile; pass it with --profile"},
      {"generate -p hi --model " + config, "add --random-weights"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "fix:   " + c.fix)) << c.args << ": " << r.output;
    EXPECT_FALSE(contains(r.output, "unrecognized checkpoint file")) << c.args << ": " << r.output;
  }
  std::remove(plan.c_str());
  std::remove(text.c_str());
}

TEST(CliTrial2, ReportPathsThatAreLinksOrFilesAreNamedAsSuch) {
  // The trial: `dak bench --csv DANGLING_LINK` said "already exists"; `dak profile -o FILE/x.json`
  // said "folder 'FILE' ... does not exist" and to create it.
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "dak_trial2_paths";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path link = dir / "dang.csv", file = dir / "exist.json";
  fs::create_symlink(dir / "nowhere.csv", link);
  std::ofstream(file) << "{}";
  RunResult r = run_dak("bench --model llama-2-7b --random-weights --csv " + link.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "is a symbolic link (to '" + (dir / "nowhere.csv").string() + "')")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "nowhere.csv")) << "nothing written through the link";
  r = run_dak("profile -o " + (file / "x.json").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "'" + file.string() + "' of '" + (file / "x.json").string() + "' is a file, not a folder"))
      << r.output;
  fs::remove_all(dir);
}

TEST(CliTrial2, ATemperatureTooSmallToSampleWithIsRefused) {
  // The trial: -t 1e-300 --top-p 0.5 ran greedy with "--top-p is ignored at --temperature 0".
  const std::string gen = "generate --model " + kData + "/hf_parity/llama_gqa --device cpu --prompt-ids 1,2 -n 1 ";
  RunResult r = run_dak(gen + "--temperature 1e-300 --top-p 0.5");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--temperature 1e-300 is too small to sample with")) << r.output;
  EXPECT_FALSE(contains(r.output, "ignored at --temperature 0")) << r.output;
  r = run_dak(gen + "--temperature 1e-37 --top-p 0.5");  // the fix's smallest temperature runs
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_dak(gen + "--temperature 0 --top-p 0.5");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--top-p is ignored at --temperature 0")) << r.output;
}

TEST(CliTrial2, ProfileSweepFlagsWithSkipGemmAndRunsHaveOneRange) {
  // The trial: --skip-gemm --gemm-model opt-30b said nothing of the ignored flag; --runs 2 was "too
  // few" and -1 "outside [0, 1000]".
  const std::string profile = "profile --output /nonexistent-dak-dir/p.json ";
  RunResult r = run_dak(profile + "--skip-gemm --gemm-model opt-30b --gemm-tokens 8");
  EXPECT_TRUE(contains(r.output, "notice: --gemm-model is ignored with --skip-gemm")) << r.output;
  EXPECT_TRUE(contains(r.output, "notice: --gemm-tokens is ignored with --skip-gemm")) << r.output;
  EXPECT_FALSE(contains(r.output, "--gemm-ratios is ignored")) << r.output;
  for (const char* runs : {"-1", "2", "1001"}) {
    r = run_dak(profile + "--runs " + runs);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, std::string("--runs ") + runs + " is outside 3 to 1000 (or 0: the default)"))
        << r.output;
  }
  EXPECT_TRUE(contains(run_dak("profile --help").output, "3 to 1000 (0 or absent: 5, 3 with --quick)"));
  // dak inspect takes its model as an argument: the hint says what to give, not "--model".
  r = run_dak("inspect " + kProfile);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "pass it with --profile (of dak plan, generate or bench), and give here a model"))
      << r.output;
}

TEST(CliTrial2, ABrokenConfigJsonIsNamedAsSuch) {
  // Session 43's trial: a folder holding only a config.json that does not parse was refused as "a
  // model config but no weights", and the file itself as "unrecognized checkpoint file".
  dak::testing::ScratchDir dir;
  dak::testing::write_bytes(dir / "config.json", "{\"model_type\": \"llama\", \"hidden_size\": \n");
  const std::string folder = dir.path().string(), file = (dir / "config.json").string();
  RunResult r = run_dak("generate -p hi --model " + folder);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: '" + folder + "' holds no weights, and the model config is not valid JSON: line 2"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "  where: " + file + "\n  fix:   repair the JSON, or pass a checkpoint folder")) << r.output;
  r = run_dak("generate -p hi --model " + file);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error: the model config is not valid JSON: line 2")) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   repair the JSON (it holds a model's hyper-parameters)")) << r.output;
  EXPECT_FALSE(contains(r.output, "unrecognized checkpoint file")) << r.output;
  // A valid config.json alone keeps its message (no weights, --random-weights).
  dak::testing::write_bytes(dir / "config.json", dak::testing::read_bytes(kData + "/../../configs/llama-2-7b.json"));
  r = run_dak("generate -p hi --model " + folder);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "holds a model config (config.json) but no weights")) << r.output;
}

}  // namespace
