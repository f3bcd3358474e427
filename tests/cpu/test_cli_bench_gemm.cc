// `dak bench gemm` from the command line, on any machine: the help documents every option and
// metric, --dry-run lists the shapes, offload points and kernel schedules without a GPU, bad
// arguments are refused before looking for one, and without a usable GPU (hidden with
// CUDA_VISIBLE_DEVICES=, or a dak built without CUDA) the command fails with exit code 1 and the
// reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_test_util.h"

namespace {

using dak::testing::RunResult;

RunResult run_dak(const std::string& args, const std::string& env = "") {
  return dak::testing::run_dak_env(env, args);
}

const std::string kNoGpu = "CUDA_VISIBLE_DEVICES=";

using dak::testing::contains;

/// The lines of `text` that start with `prefix`.
std::string lines_starting_with(const std::string& text, const std::string& prefix) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find('\n', i);
    if (j == std::string::npos) j = text.size();
    const std::string line = text.substr(i, j - i);
    if (line.rfind(prefix, 0) == 0) out += line + "\n";
    i = j + 1;
  }
  return out;
}

TEST(CliBenchGemm, HelpDocumentsEveryOptionAndMetric) {
  const RunResult r = run_dak("bench gemm --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* s : {"--models", "--tokens", "--ratios", "--runs", "--warmup-ms", "--layers", "--congestion", "--per-gemm-min-mib",
                        "--stack-host-gib", "--full", "--quick", "--dry-run", "--json", "--csv", "--seed", "EB", "--compute-tile",
                        "ideal", "B_g", "B_h", "cuBLAS", "prefetch", "128-row units", "target", "bits"}) {
    EXPECT_TRUE(contains(r.output, s)) << s << " missing from:\n" << r.output;
  }
  const RunResult bench = run_dak("bench --help");
  EXPECT_TRUE(contains(bench.output, "gemm")) << bench.output;
}

TEST(CliBenchGemm, DryRunListsTheFusedLinearShapesOfEachModel) {
  const RunResult r = run_dak("bench gemm --dry-run", kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The timing settings a real run would use (a session-37 trial could not see them).
  EXPECT_TRUE(contains(r.output, "timing: per figure 0 ms of sustained load (--warmup-ms), 2 warm-up(s), 7 timed runs"))
      << r.output;
  const RunResult warm = run_dak("bench gemm --dry-run --warmup-ms 20 --runs 9 --models llama-2-7b", kNoGpu);
  ASSERT_EQ(warm.exit_code, 0) << warm.output;
  EXPECT_TRUE(contains(warm.output, "timing: per figure 20 ms of sustained load (--warmup-ms), 2 warm-up(s), 9 timed runs"))
      << warm.output;
  // qkv = [H*D + 2*Hkv*D, hidden], o = [hidden, H*D], gate_up = [2I, hidden] (OPT: fc1 [I, hidden]),
  // down = [hidden, I].
  EXPECT_TRUE(contains(r.output, "llama-2-7b: qkv 12288x4096 (96.0 MiB), o 4096x4096 (32.0 MiB), gate_up "
                                 "22016x4096 (172.0 MiB), down 4096x11008 (86.0 MiB)"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "llama-2-70b: qkv 10240x8192 (160.0 MiB), o 8192x8192 (128.0 MiB), gate_up "
                                 "57344x8192 (896.0 MiB), down 8192x28672 (448.0 MiB)"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "opt-30b: qkv 21504x7168 (294.0 MiB), o 7168x7168 (98.0 MiB), gate_up "
                                 "28672x7168 (392.0 MiB), down 7168x28672 (392.0 MiB)"))
      << r.output;
}

TEST(CliBenchGemm, DryRunTimesSingleGemmsOnlyForWeightsOfAtLeast256MiB) {
  const RunResult r = run_dak("bench gemm --dry-run --tokens 8", kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Per-GEMM experiments: 70B gate_up and down, OPT-30B qkv, fc1 and fc2; none for Llama-2-7B.
  for (const char* e : {"llama-2-70b N=8 gemm gate_up:", "llama-2-70b N=8 gemm down:", "opt-30b N=8 gemm qkv:",
                        "opt-30b N=8 gemm gate_up:", "opt-30b N=8 gemm down:"}) {
    EXPECT_TRUE(contains(r.output, e)) << e << "\n" << r.output;
  }
  for (const char* e : {"llama-2-7b N=8 gemm", "llama-2-70b N=8 gemm qkv:", "llama-2-70b N=8 gemm o:",
                        "opt-30b N=8 gemm o:"}) {
    EXPECT_FALSE(contains(r.output, e)) << e << "\n" << r.output;
  }
  for (const char* e : {"llama-2-7b N=8 stack8 layer: 9 points", "llama-2-70b N=8 stack8 layer:",
                        "opt-30b N=8 stack8 layer:"}) {
    EXPECT_TRUE(contains(r.output, e)) << e << "\n" << r.output;
  }
  EXPECT_TRUE(contains(r.output, "dak bench gemm --dry-run: 8 experiment(s)")) << r.output;
  // Lowering the threshold adds the smaller weights.
  const RunResult all = run_dak("bench gemm --dry-run --tokens 8 --models llama-2-7b --per-gemm-min-mib 0", kNoGpu);
  ASSERT_EQ(all.exit_code, 0) << all.output;
  EXPECT_TRUE(contains(all.output, "llama-2-7b N=8 gemm o: 9 points")) << all.output;
  EXPECT_TRUE(contains(all.output, "dak bench gemm --dry-run: 5 experiment(s)")) << all.output;
}

TEST(CliBenchGemm, ComputeTileIsChosenPerShapeOrForced) {
  // N = 512 on 132 SMs: Llama-2-7B's qkv runs 128 x 128, its gate_up and Llama-2-70B's 128 x 256
  // (the fitted cost model, core/tiered_gemm_schedule.h); --compute-tile forces one.
  const RunResult r = run_dak("bench gemm --dry-run --models llama-2-7b,llama-2-70b --tokens 512 --ratios 0", kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "qkv: M=12288 N=512 K=4096 m_host=0 tile=128x128x64")) << r.output;
  EXPECT_TRUE(contains(r.output, "gate_up: M=22016 N=512 K=4096 m_host=0 tile=128x256x64")) << r.output;
  EXPECT_TRUE(contains(r.output, "gate_up: M=57344 N=512 K=8192 m_host=0 tile=128x256x64")) << r.output;
  const RunResult forced =
      run_dak("bench gemm --dry-run --models llama-2-7b --tokens 512 --ratios 0 --compute-tile 256", kNoGpu);
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_TRUE(contains(forced.output, "qkv: M=12288 N=512 K=4096 m_host=0 tile=128x256x64")) << forced.output;
  EXPECT_TRUE(contains(forced.output, "compute tile (N > 64): 128 x 256 (--compute-tile)")) << forced.output;
}

TEST(CliBenchGemm, HostRowsAreWholeTilesAsThePlannerPlacesThem) {
  const RunResult r = run_dak("bench gemm --dry-run --models llama-2-7b --tokens 8 --ratios 0,0.5,1,2,10,100", kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Units of 128 rows, the nearest count, at least one: 0.5 % of 12288 = 61.44 rows (0.48 units) -> 128;
  // 1 % of 12288 = 122.88 -> 128; 2 % of 22016 = 440.32 (3.44 units) -> 384; 10 % = 2201.6 (17.2) -> 2176.
  for (const char* s : {"x 0% qkv: M=12288 N=8 K=4096 m_host=0 ", "x 0.5% qkv: M=12288 N=8 K=4096 m_host=128 ",
                        "x 0.5% o: M=4096 N=8 K=4096 m_host=128 ", "x 1% qkv: M=12288 N=8 K=4096 m_host=128 ",
                        "x 2% gate_up: M=22016 N=8 K=4096 m_host=384 ", "x 10% gate_up: M=22016 N=8 K=4096 m_host=2176 ",
                        "x 100% gate_up: M=22016 N=8 K=4096 m_host=22016 "}) {
    EXPECT_TRUE(contains(r.output, s)) << s << "\n" << r.output;
  }
  const RunResult bad = run_dak("bench gemm --dry-run --models llama-2-7b --host-rows 64", kNoGpu);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;  // not one of its values: a usage error
  EXPECT_TRUE(contains(bad.output, "--host-rows: 64 not in {tile,row}")) << bad.output;
}

TEST(CliBenchGemm, HostRowsAreTheRatioTimesMRoundedToTheNearestRowWithHostRowsRow) {
  const RunResult r =
      run_dak("bench gemm --dry-run --models llama-2-7b --tokens 8 --ratios 0,0.5,1,100 --host-rows row", kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 0.5 % of 12288 = 61.44 -> 61; of 4096 = 20.48 -> 20; of 22016 = 110.08 -> 110; of 4096 -> 20.
  // 1 % of 12288 = 122.88 -> 123; of 4096 = 40.96 -> 41.
  for (const char* s : {"x 0% qkv: M=12288 N=8 K=4096 m_host=0 ", "x 0.5% qkv: M=12288 N=8 K=4096 m_host=61 ",
                        "x 0.5% o: M=4096 N=8 K=4096 m_host=20 ", "x 0.5% gate_up: M=22016 N=8 K=4096 m_host=110 ",
                        "x 0.5% down: M=4096 N=8 K=11008 m_host=20 ", "x 1% qkv: M=12288 N=8 K=4096 m_host=123 ",
                        "x 1% o: M=4096 N=8 K=4096 m_host=41 ", "x 100% gate_up: M=22016 N=8 K=4096 m_host=22016 "}) {
    EXPECT_TRUE(contains(r.output, s)) << s << "\n" << r.output;
  }
}

TEST(CliBenchGemm, HostHeavyStackPointsAreSkippedUnlessFull) {
  const std::string args = "bench gemm --dry-run --models llama-2-70b --tokens 8";
  const RunResult r = run_dak(args, kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 8 layers x 1632 MiB: 40 % (5.1 GiB) fits under the default 8 GiB, 100 % (12.75 GiB) does not.
  EXPECT_TRUE(contains(r.output, "llama-2-70b N=8 stack8 layer: 8 points")) << r.output;
  EXPECT_TRUE(contains(r.output, "llama-2-70b N=8 stack8: x = 100% skipped (12.75 GiB of host rows per replay > "
                                 "--stack-host-gib 8; --full measures it)"))
      << r.output;
  // Single GEMMs are never skipped.
  EXPECT_TRUE(contains(r.output, "llama-2-70b N=8 gemm gate_up: 9 points")) << r.output;

  const RunResult full = run_dak(args + " --full", kNoGpu);
  ASSERT_EQ(full.exit_code, 0) << full.output;
  EXPECT_TRUE(contains(full.output, "llama-2-70b N=8 stack8 layer: 9 points")) << full.output;
  EXPECT_FALSE(contains(full.output, "skipped")) << full.output;

  const RunResult tight = run_dak(args + " --stack-host-gib 1", kNoGpu);
  ASSERT_EQ(tight.exit_code, 0) << tight.output;
  EXPECT_TRUE(contains(tight.output, "llama-2-70b N=8 stack8 layer: 5 points")) << tight.output;  // up to 5 %
}

TEST(CliBenchGemm, CongestionOverridesTheHostSideOfEveryOffloadedPoint) {
  const RunResult r =
      run_dak("bench gemm --dry-run --models llama-2-7b --tokens 8 --ratios 0,10 --congestion 2,3", kNoGpu);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string x10 = lines_starting_with(r.output, "  x 10% ");
  ASSERT_FALSE(x10.empty()) << r.output;
  size_t n = 0;
  for (size_t i = x10.find("host_ctas=2x3 stages hbm_ctas="); i != std::string::npos;
       i = x10.find("host_ctas=2x3 stages hbm_ctas=", i + 1)) {
    ++n;
  }
  EXPECT_EQ(n, 4u) << x10;  // all four ops of the layer
  // x = 0 has no host rows: the override does not apply.
  const std::string x0 = lines_starting_with(r.output, "  x 0% ");
  EXPECT_TRUE(contains(x0, "host_ctas=0x")) << x0;
  EXPECT_FALSE(contains(x0, "host_ctas=2x3")) << x0;
}

TEST(CliBenchGemm, RatiosBelowOnePercentAreNoticedAsPercent) {
  // Session-16 trial: --ratios 0.5 (meant as half, as in dak bench attention) ran 0.5 % silently.
  RunResult r = run_dak("bench gemm --dry-run --quick --ratios 0,0.5,1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: notice: --ratios 0,0.5,1 is read in percent")) << r.output;
  r = run_dak("bench gemm --dry-run --quick --ratios 0,0.5,10");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "read in percent")) << r.output;
}

TEST(CliBenchGemm, BadArgumentsAreRefusedBeforeLookingForAGpu) {
  struct Case {
    const char* args;
    const char* needle;
    int exit_code = 1;  // 2: refused by the flag's own parser (a usage error); 1: out of range, or a conflict
  };
  for (const Case& c : {Case{"bench gemm --ratios 101", "--ratios"}, Case{"bench gemm --ratios=-1", "--ratios"},
                        Case{"bench gemm --ratios 1,,2", "--ratios", 2}, Case{"bench gemm --ratios abc", "--ratios", 2},
                        Case{"bench gemm --ratios nan", "--ratios", 2}, Case{"bench gemm --tokens 0", "--tokens"},
                        Case{"bench gemm --tokens 8193", "--tokens"}, Case{"bench gemm --tokens 8,x", "--tokens", 2},
                        Case{"bench gemm --models no-such-model", "where: --models"},
                        Case{"bench gemm --models llama-2-7b,", "--models", 2}, Case{"bench gemm --runs 3", "--runs"},
                        Case{"bench gemm --runs 2000000000", "--runs"},
                        Case{"bench gemm --layers 0", "--layers"}, Case{"bench gemm --congestion 4", "--congestion", 2},
                        Case{"bench gemm --congestion 0,2", "--congestion"},
                        Case{"bench gemm --congestion 4,x", "--congestion", 2},
                        Case{"bench gemm --congestion 132,1 --ratios 50", "leave no SM"},
                        Case{"bench gemm --congestion 2,99 --tokens 8 --ratios 10", "SMEM ring"},
                        Case{"bench gemm --stack-host-gib 0", "--stack-host-gib"},
                        Case{"bench gemm --max-cluster 3", "--max-cluster"},
                        Case{"bench gemm --max-cluster 0", "--max-cluster"},
                        Case{"bench gemm --compute-tile 64", "--compute-tile: 64 not in {auto,128,256}", 2},
                        Case{"bench gemm --congestion 119,1 --tokens 1024 --ratios 10", "whole multicast clusters of 4"},
                        Case{"bench gemm --dry-run --json /tmp/dak-dry-run-never-written.json", "--dry-run"},
                        // Session-18 trial: every row on the host leaves no HBM rows to keep an SM for.
                        Case{"bench gemm --dry-run --models llama-2-7b --tokens 8 --ratios 100 --congestion 1000,4",
                             "more than the 132 that run at once"}}) {
    const RunResult r = run_dak(c.args, kNoGpu);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "dak: error:")) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.needle)) << c.args << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "needs a Hopper GPU")) << c.args << "\n" << r.output;
  }
}

TEST(CliBenchGemm, ModelErrorsNameTheModelAndTheFile) {
  // Session-18 trial: a broken config.json among several --models lost its path; a model whose
  // linear has K % 8 != 0 got the schedule's internal message; --congestion at x = 0 only did nothing.
  const std::string dir = ::testing::TempDir() + "dak_bench_gemm_models";
  std::filesystem::create_directories(dir + "/trunc");
  std::filesystem::create_directories(dir + "/i100");
  {
    std::ofstream(dir + "/trunc/config.json") << "{\"model_type\": \"llama\", \"hidden_size\": 4";
    std::ofstream(dir + "/i100/config.json")
        << R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 100, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 1000})";
  }
  RunResult r = run_dak("bench gemm --dry-run --models llama-2-7b," + dir + "/trunc", kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, dir + "/trunc/config.json (--models " + dir + "/trunc)")) << r.output;
  r = run_dak("bench gemm --dry-run --models " + dir + "/i100", kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "'s down has K = 100 input features")) << r.output;
  r = run_dak("bench gemm --dry-run --models llama-2-7b --tokens 8 --ratios 0 --congestion 1000,4", kNoGpu);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--congestion 1000,4 has no effect")) << r.output;
  r = run_dak("bench gemm --dry-run --models llama-2-7b --tokens 8 --ratios -0", kNoGpu);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "x -0%")) << r.output;
}

TEST(CliBenchGemm, WithoutAGpuFailsWithTheReason) {
  const RunResult r = run_dak("bench gemm --quick", kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: error:")) << r.output;
  EXPECT_TRUE(contains(r.output, "dak bench gemm needs a Hopper GPU")) << r.output;
  EXPECT_TRUE(contains(r.output, "--dry-run")) << "the fix should name the GPU-free alternative\n" << r.output;
  // The parent `dak bench` must not run after its subcommand (it would complain about its own flags).
  EXPECT_FALSE(contains(r.output, "dak bench needs a Hopper GPU")) << r.output;
}

}  // namespace

namespace {

// Report files are checked before any work: an existing file is never overwritten, a folder that
// does not exist or the same file for --json and --csv is refused (bench, bench gemm, bench
// attention share the check).
TEST(CliBenchReports, RefusesReportFilesItCouldNotWriteOrWouldOverwrite) {
  const std::string dir = ::testing::TempDir() + "dak_report_files";
  dak::testing::run_shell("rm -rf " + dir + " && mkdir -p " + dir + " && printf 'keep me' > " + dir + "/old.json");
  for (const std::string cmd : {"bench --model llama-2-7b --random-weights", "bench gemm", "bench attention"}) {
    RunResult r = run_dak(cmd + " --json " + dir + "/old.json", kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "already exists")) << cmd << "\n" << r.output;
    r = run_dak(cmd + " --csv " + dir + "/missing/x.csv", kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "not a writable folder")) << cmd << "\n" << r.output;
    r = run_dak(cmd + " --json " + dir + "/same --csv " + dir + "/same", kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "both name")) << cmd << "\n" << r.output;
    r = run_dak(cmd + " --json " + dir, kNoGpu);  // a folder
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "is a folder, not a file name")) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "e.g. " + dir + "/bench.json")) << cmd << "\n" << r.output;
    r = run_dak(cmd + " --csv " + dir, kNoGpu);  // the example names a CSV file (trial of session 49)
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "e.g. " + dir + "/bench.csv")) << cmd << "\n" << r.output;
  }
  // A name already taken in the folder is not suggested.
  dak::testing::run_shell("touch " + dir + "/bench.csv");
  const RunResult taken = run_dak("bench gemm --csv " + dir, kNoGpu);
  EXPECT_TRUE(contains(taken.output, "e.g. " + dir + "/bench-2.csv")) << taken.output;
  EXPECT_EQ(dak::testing::run_shell("cat " + dir + "/old.json").output, "keep me");
  EXPECT_NE(dak::testing::run_shell("ls " + dir + "/same 2>&1").exit_code, 0) << "a refused run created a file";
}

// New-user trial: `--json X --csv ./X` passed the check (it compared the names), so the CSV would
// have overwritten the JSON. One file however spelt (relative, ./, absolute, through a ".." or a
// link to its folder) is refused before any work and before a GPU is looked for; two files are
// not. An input of the run (the config, a --plan file) exists, so it is refused as existing.
TEST(CliBenchReports, OneFileSpeltTwoWaysIsRefused) {
  const std::string dir = ::testing::TempDir() + "dak_report_same_file";
  dak::testing::run_shell("rm -rf " + dir + " && mkdir -p " + dir + "/sub && ln -s " + dir + " " + dir + "/link");
  const std::string in_dir = "cd " + dir + " && " + kNoGpu;  // run_dak's env prefix: relative names are in dir
  const std::string config = std::string(DAK_TEST_DATA_DIR) + "/../../configs/llama-2-7b.json";
  for (const std::string cmd : {"bench --model llama-2-7b --random-weights", "bench gemm", "bench attention"}) {
    for (const std::string csv : {std::string("./X"), dir + "/X", std::string("sub/../X"), std::string("link/X"),
                                  dir + "/link/./X"}) {
      const RunResult r = run_dak(cmd + " --json X --csv " + csv, in_dir);
      EXPECT_EQ(r.exit_code, 1) << cmd << " --csv " << csv << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "dak: error: --json 'X' and --csv '" + csv + "' name the same file"))
          << cmd << " --csv " << csv << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "where: --json / --csv")) << cmd << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "fix:   give two different files")) << cmd << "\n" << r.output;
      EXPECT_FALSE(contains(r.output, "Hopper")) << cmd << "\n" << r.output;
    }
    // Two files: refused only for the missing GPU (and nothing written).
    RunResult r = run_dak(cmd + " --json X --csv sub/X", in_dir);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "needs a Hopper GPU")) << cmd << "\n" << r.output;
    // The model's config as a report file: it exists, so it is never written.
    r = run_dak(cmd + " --csv " + config, kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "already exists")) << cmd << "\n" << r.output;
    // A dangling link to the other report (writing through it would create that file and then
    // truncate it; session-22 trial): refused, and named as a link (session-24 trial: it read
    // "already exists").
    dak::testing::run_shell("ln -sfn X " + dir + "/dangling");
    r = run_dak(cmd + " --json X --csv dangling", in_dir);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "dak: error: 'dangling' is a symbolic link (to 'X')")) << cmd << "\n" << r.output;
  }
  EXPECT_NE(dak::testing::run_shell("ls " + dir + "/X " + dir + "/sub/X 2>&1").exit_code, 0)
      << "a refused run created a file";
  dak::testing::run_shell("rm -rf " + dir);
}

}  // namespace
