// The 51st session's trial findings (files the CLI writes, option hints) end to end: an existing
// report path is refused with a free name as the fix (never "remove the old one": it may be the
// model), a sink such as /dev/null is taken for --json and --csv, --json / --csv on a command that
// prints its report with --output say so (and the other way round), and an option given twice
// under its short and long name says they are one.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "checkpoint_test_util.h"
#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using dak::testing::contains;
using dak::testing::fresh_test_dir;
using dak::testing::RunResult;

const std::string kNoGpu = "CUDA_VISIBLE_DEVICES=";
RunResult run_dak(const std::string& args) { return dak::testing::run_dak_env(kNoGpu, args); }

TEST(CliTrial51, AnExistingReportPathGetsAFreeNameNotAdviceToRemoveIt) {
  const fs::path dir = fresh_test_dir("dak_trial51_reports");
  dak::testing::write_bytes(dir / "model.gguf", "the user's model");
  dak::testing::write_bytes(dir / "model-2.gguf", "another");
  for (const std::string cmd : {"bench --model llama-2-7b --random-weights", "bench gemm", "bench attention"}) {
    const RunResult r = run_dak(cmd + " --json " + (dir / "model.gguf").string());
    EXPECT_EQ(r.exit_code, 1) << cmd << r.output;
    EXPECT_TRUE(contains(r.output, "'" + (dir / "model.gguf").string() + "' already exists")) << cmd << r.output;
    EXPECT_TRUE(contains(r.output, "fix:   give a new file name, e.g. " + (dir / "model-3.gguf").string() +
                                       " (dak does not overwrite files)"))
        << cmd << r.output;
    EXPECT_FALSE(contains(r.output, "remove")) << cmd << r.output;
  }
  EXPECT_EQ(dak::testing::read_bytes(dir / "model.gguf"), "the user's model");
}

TEST(CliTrial51, SinksAreTakenForReports) {
  // /dev/null for both reports: no "already exists", no "the same file"; the run goes on to the
  // GPU check (none here).
  for (const std::string cmd : {"bench --model llama-2-7b --random-weights", "bench gemm", "bench attention"}) {
    const RunResult r = run_dak(cmd + " --json /dev/null --csv /dev/null");
    EXPECT_EQ(r.exit_code, 1) << cmd << r.output;
    EXPECT_TRUE(contains(r.output, "needs a Hopper GPU")) << cmd << r.output;
    EXPECT_FALSE(contains(r.output, "already exists")) << cmd << r.output;
  }
}

TEST(CliTrial51, ReportOptionHintsNameTheOptionThisCommandHas) {
  RunResult r = run_dak("plan --model llama-2-7b --json x.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "fix:   dak plan prints json with --output json (redirect it to a file: > out.json)"))
      << r.output;
  r = run_dak("generate -p hi --json x.json");
  EXPECT_TRUE(contains(r.output, "dak generate prints json with --output json")) << r.output;
  // inspect's --output has no csv: no such hint.
  r = run_dak("inspect --csv x.csv");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(contains(r.output, "--output csv")) << r.output;
  // The other way round, and the list of commands that have --output says how many it leaves out.
  r = run_dak("bench gemm --output json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "`dak perplexity` and ")) << r.output;
  EXPECT_TRUE(contains(r.output, " more have it)")) << r.output;
  EXPECT_TRUE(contains(r.output, "dak bench gemm writes its report with --json FILE / --csv FILE")) << r.output;
  // -o and --output are one option.
  r = run_dak("profile -o x.json --output y.json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--output was given 2 times (-o is --output); give it once")) << r.output;
}

}  // namespace
