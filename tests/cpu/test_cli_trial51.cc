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
    // The name with the report's extension (not another .gguf).
    EXPECT_TRUE(contains(r.output, "fix:   give a new file name, e.g. " + (dir / "model.json").string() +
                                       " (dak does not overwrite files)"))
        << cmd << r.output;
    const RunResult csv = run_dak(cmd + " --csv " + (dir / "model.gguf").string());
    EXPECT_TRUE(contains(csv.output, "e.g. " + (dir / "model.csv").string())) << cmd << csv.output;
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

// The re-trial of session 51: "-" is no report file, a pipe nobody reads is refused before the run
// (its report would be lost after it), and -o / --json get the hint of the command's own option.
TEST(CliTrial51, DashAPipeWithoutAReaderAndShortOptionHints) {
  const fs::path dir = fresh_test_dir("dak_trial51_pipes");
  RunResult r = run_dak("bench gemm --json -");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--json - would be a file named '-'")) << r.output;
  ASSERT_EQ(dak::testing::run_shell("mkfifo " + (dir / "pipe").string()).exit_code, 0);
  for (const std::string cmd : {"bench gemm --csv ", "bench attention --json ", "profile -o "}) {
    r = run_dak(cmd + (dir / "pipe").string());
    EXPECT_EQ(r.exit_code, 1) << cmd << r.output;
    EXPECT_TRUE(contains(r.output, "no process reads the pipe '" + (dir / "pipe").string() + "'")) << cmd << r.output;
  }
  // With a reader the pipe is taken (the run then stops at the GPU check here).
  r = dak::testing::run_shell("cd " + dir.string() + " && (cat pipe > got.txt & sleep 0.2; " + kNoGpu + " " +
                              std::string(DAK_BINARY) + " bench gemm --csv pipe 2>&1; echo rc=$?; kill %1)");
  EXPECT_TRUE(contains(r.output, "needs a Hopper GPU")) << r.output;
  r = run_dak("plan --model llama-2-7b -o json");
  EXPECT_TRUE(contains(r.output, "dak plan's --output has no short form: --output json")) << r.output;
  r = run_dak("profile --json x.json");
  EXPECT_TRUE(contains(r.output, "dak profile writes its JSON to --output FILE (-o FILE)")) << r.output;
}

// Blanks around a whole number are dropped, as they are around a decimal one (" 0.3").
TEST(CliTrial51, BlanksAroundAWholeNumberAreDropped) {
  const RunResult r = run_dak("generate --device cpu -p hi -n ' 2' --seed '7 ' --output json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\"decode_steps\": 1")) << r.output;
  EXPECT_EQ(run_dak("generate --device cpu -p hi -n ' '").exit_code, 2);
}

// A profile shipped in profiles/ but not compiled in, named without its path: the fix gives the path.
TEST(CliTrial51, AShippedProfileFileNamedWithoutItsPathGetsThePath) {
  for (const std::string name : {"h200-measured", "h200-measured.json"}) {
    const RunResult r = run_dak("plan --model llama-2-7b --profile " + name);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(contains(r.output, "fix:   give the shipped file's path: --profile " + std::string(DAK_SOURCE_DIR) +
                                       "/profiles/h200-measured.json"))
        << r.output;
    const RunResult ok = run_dak("plan --model llama-2-7b --profile " + std::string(DAK_SOURCE_DIR) +
                                 "/profiles/h200-measured.json");
    EXPECT_EQ(ok.exit_code, 0) << ok.output;
  }
}

// Ctrl-C during `dak generate` (trial of session 51: the run died with nothing after the streamed
// text, and a JSON run printed nothing): the tokens so far are printed with the timings, a line says
// it was interrupted, and the exit status is 130; SIGTERM during `dak perplexity` prints the score
// of the windows done and exits 143. The signal is sent once output shows the loop has begun.
TEST(CliTrial51, AnInterruptedRunPrintsWhatItComputed) {
  const fs::path dir = fresh_test_dir("dak_trial51_interrupt");
  const std::string dak = std::string(DAK_BINARY);
  // `ready`: a shell test that holds once the loop runs (at most 90 s of polling).
  const auto run_until = [&](const std::string& command, const std::string& ready, const char* signal) {
    // env --default-signal: a job started with & by a script has SIGINT ignored, which dak keeps;
    // a terminal's foreground run has it at its default.
    return dak::testing::run_shell("cd " + dir.string() + " && (env --default-signal=INT " + command +
                                   " > out.txt 2> err.txt & pid=$!; for i in $(seq 1 900); do " + ready +
                                   " && break; sleep 0.1; done; kill -" + signal + " $pid; wait $pid; echo rc=$?)");
  };
  // The InterruptScope is in place: the process catches SIGINT (bit 1 of SigCgt in /proc/PID/status).
  const std::string catches_sigint = "[ $(( 0x$(awk '/^SigCgt/ {print $2}' /proc/$pid/status) & 2 )) -ne 0 ]";
  RunResult r = run_until(dak + " generate --device cpu -p 'Once upon a time' -n 4000 --ignore-eos",
                          "grep -q 'Once upon' out.txt", "INT");  // the first token is out
  std::string out = dak::testing::read_bytes(dir / "out.txt"), err = dak::testing::read_bytes(dir / "err.txt");
  EXPECT_TRUE(contains(r.output, "rc=130")) << r.output << err;
  EXPECT_EQ(out.rfind("Once upon a time", 0), 0u) << out;
  EXPECT_TRUE(contains(err, "dak: interrupted: stopping after the current step")) << err;
  EXPECT_TRUE(contains(err, " decode step")) << err;  // the timings of the steps that ran (0 or more)
  EXPECT_TRUE(contains(err, "dak: interrupted (Ctrl-C): ")) << err;
  EXPECT_TRUE(contains(err, " before it, printed above")) << err;  // "1 new token", "49 new tokens"

  r = run_until(dak + " generate --device cpu -p 'Once upon a time' -n 4000 --ignore-eos --output json",
                catches_sigint, "INT");
  out = dak::testing::read_bytes(dir / "out.txt");
  EXPECT_TRUE(contains(r.output, "rc=130")) << r.output;
  EXPECT_TRUE(contains(out, "\"interrupted\": true")) << out;
  EXPECT_TRUE(contains(out, "\"generated_ids\"")) << out;

  std::string text;
  for (int i = 0; i < 3000; ++i) text += "the quick brown fox jumps over the lazy dog ";
  dak::testing::write_bytes(dir / "text.txt", text);
  r = run_until(dak + " perplexity --device cpu --file text.txt --context 64",
                catches_sigint + " && grep -q ' [1-9][0-9]* of [0-9]* tokens scored' err.txt", "TERM");  // windows done
  out = dak::testing::read_bytes(dir / "out.txt");
  err = dak::testing::read_bytes(dir / "err.txt");
  EXPECT_TRUE(contains(r.output, "rc=143")) << r.output << err;
  EXPECT_TRUE(contains(out, "perplexity ")) << out;
  EXPECT_TRUE(contains(out, " over the first ")) << out;
  EXPECT_TRUE(contains(err, "dak: interrupted (SIGTERM): the score above is of the first ")) << err;
}

}  // namespace
