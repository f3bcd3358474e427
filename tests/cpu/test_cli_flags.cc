// Integer flags of `dak plan`, `dak bench attention`, `dak bench gemm` and `dak profile` are read
// as decimal numbers, on any machine. CLI11 alone read a leading 0 as octal (--batch 010 planned
// batch 8) and 0x as hex (--batch 0x10 planned 16), and clamped 10^22 to 2^63 - 1. Now 010 is ten,
// 0x10 / abc / 1.5 are "not a whole number" (exit 2: the option's parser refuses them) and a value
// beyond the option's integer type is "too large" (exit 1: a whole number out of range), each naming
// the allowed values, before any GPU is looked for. The comma-list flags (--batch / --ctx of bench
// attention, --tokens, --congestion, --gemm-tokens) keep their own decimal parsing: 010 is ten there
// too, 0x10 exits 2 and huge values exit 1.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

using dak::testing::RunResult;
using dak::testing::says_refusal;

const std::string kNoGpu = "CUDA_VISIBLE_DEVICES=";

RunResult run_dak(const std::string& args) {
  return dak::testing::run_dak_env(kNoGpu, args);
}

using dak::testing::contains;

const std::string kHuge = "9999999999999999999999";  // beyond int64: CLI11 alone clamped it to 2^63 - 1

struct Flag {
  std::string command;  // the command line up to the flag
  std::string flag;
  std::string allowed;  // the text after "; use "
};

/// hex, non-numeric and fractional values of `f` exit 2, huge ones 1 (out of range), each naming the
/// flag, the value and the allowed values.
void expect_refused_at_parsing(const Flag& f) {
  const struct {
    std::string value, says;
    int exit_code;
  } cases[] = {
      {"0x10", "'0x10' is not a whole number", 2},
      {"abc", "'abc' is not a whole number", 2},
      {"1.5", "'1.5' is not a whole number", 2},
      {kHuge, "'" + kHuge + "' is too large", 1},
  };
  for (const auto& c : cases) {
    const std::string args = f.command + " " + f.flag + " " + c.value;
    const RunResult r = run_dak(args);
    EXPECT_EQ(r.exit_code, c.exit_code) << args << "\n" << r.output;
    EXPECT_TRUE(says_refusal(r.output, f.flag + ": " + c.says + "; use " + f.allowed, c.exit_code))
        << args << "\n" << r.output;
    EXPECT_FALSE(contains(r.output, "needs a Hopper GPU")) << args << "\n" << r.output;
  }
}

TEST(CliFlags, PlanIntegersAreDecimal) {
  const std::string plan = "plan --model llama-2-7b";
  const std::string count = "a count of at least 1; --prompt-len + --gen-len must fit in the model's context";
  for (const Flag& f : {Flag{plan, "--batch", "a count from 1 to 65536 (the sequences the planner supports)"},
                        Flag{plan, "--prompt-len", count}, Flag{plan, "--gen-len", count},
                        Flag{plan, "--tile-rows", "a count of rows from 1 to 16384"}}) {
    expect_refused_at_parsing(f);
  }
  // A leading 0 is ten, not octal 8 (and 0100 a hundred, not 64).
  RunResult r = run_dak(plan + " --batch 010 --prompt-len 0100 --gen-len 010 --tile-rows 0100 --output json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* s : {"\"batch\": 10,", "\"prompt_len\": 100,", "\"gen_len\": 10,", "\"tile_rows\": 100"}) {
    EXPECT_TRUE(contains(r.output, s)) << s << "\n" << r.output;
  }
  r = run_dak(plan + " --batch 010");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "batch 10  prompt 32  gen 32")) << r.output;
  // Decimal 20000 is above the planner's 16384 rows (octal 020000 = 8192 was accepted).
  r = run_dak(plan + " --tile-rows 020000");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--tile-rows 20000 is more than the planner supports (16384 rows)")) << r.output;
  // The later range checks stay: zero is a whole number, refused by the command (exit 1).
  r = run_dak(plan + " --batch 0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--batch 0 is not a positive count")) << r.output;
  // A comma list is one value here: plan takes one batch.
  r = run_dak(plan + " --batch 1,8");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--batch: '1,8' is not a whole number")) << r.output;
}

TEST(CliFlags, BenchAttentionIntegersAreDecimal) {
  const std::string bench = "bench attention --dry-run";
  const std::string host_stages =
      "0 (the default) or steps from 1 to 8 that fit the 226.5 KiB of SMEM per CTA: up to 8 at head_dim 64, 80 and 96, "
      "6 at 128, 2 at 256";
  const std::string hbm_stages = host_stages;  // long splits' HBM warps stage their steps as host warps do
  for (const Flag& f : {Flag{bench, "--repeats", "a count from 5 to 1000"},
                        Flag{bench, "--host-ctas", "0 (the default schedule's) or a count from 1 to 1024"},
                        Flag{bench, "--host-stages", host_stages}, Flag{bench, "--hbm-stages", hbm_stages},
                        Flag{bench, "--hbm-runs", "a count from 1 to 1000"}}) {
    expect_refused_at_parsing(f);
  }
  // int options: 3000000000 fits int64 but not the option's int, "too large" too (not CLI11's
  // "Could not convert").
  RunResult r = run_dak(bench + " --host-ctas 3000000000");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(says_refusal(r.output, "--host-ctas: '3000000000' is too large; use 0 (the default schedule's)", 1))
      << r.output;
  // A leading 0 is ten: --host-stages 010 is refused as 10 (octal 8 passed the [0, 8] check).
  r = run_dak(bench + " --host-stages 010");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--host-stages 10 is outside [0, 8] steps in flight")) << r.output;
  r = run_dak(bench + " --hbm-stages 9");  // the flag given is named, not both (session 32's trial)
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--hbm-stages 9 is outside [0, 8] steps in flight\n  where: --hbm-stages (dak bench attention)\n"
                                 "  fix:   give 0 (the default) or steps that fit a CTA's SMEM: up to 8 at head_dim 64, 80 "
                                 "and 96, 6 at 128, 2 at 256")) << r.output;
  for (const char* flag : {"--repeats", "--hbm-runs"}) {
    // Decimal 1001 is above 1000 (octal 01001 = 513 was accepted).
    r = run_dak(bench + " " + flag + " 01001");
    EXPECT_EQ(r.exit_code, 1) << flag << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "1001")) << flag << "\n" << r.output;
  }
  // Accepted values in the schedules: 010 host CTAs, 06 / 03 stages; the comma lists read 010 as ten too.
  r = run_dak(bench + " --models llama-2-7b --batch 010 --ctx 0512 --ratios 1/2 --no-balance-point --host-ctas 010 "
                      "--host-stages 06 --hbm-stages 03 --repeats 010 --hbm-runs 010");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "| llama-2-7b | 10 | 512 |")) << r.output;
  EXPECT_TRUE(contains(r.output, "host_ctas=10x6 stages hbm_ctas=120x3 stages")) << r.output;
  // Comma lists: hex entries are refused by the list parser (exit 2), huge ones as out of range (exit 1).
  for (const std::string& bad : {std::string("0x10"), std::string("8,0x10"), kHuge}) {
    for (const std::string flag : {"--batch", "--ctx"}) {
      r = run_dak(bench + " " + flag + " " + bad);
      const bool huge = bad == kHuge;
      EXPECT_EQ(r.exit_code, huge ? 1 : 2) << flag << " " << bad << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, huge ? flag + " value " + kHuge + " is outside [1, "
                                          : std::string("is not a comma-separated list of")))
          << flag << " " << bad << "\n" << r.output;
      EXPECT_TRUE(contains(r.output, "where: " + flag)) << flag << " " << bad << "\n" << r.output;
    }
  }
  // 7 and 8 stages exceed the SMEM of a head_dim 128 CTA: the help says so, and the run refuses them.
  r = run_dak("bench attention --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "steps in flight per host warp, the host CTAs running 4 warps; " + host_stages)) << r.output;
  EXPECT_TRUE(contains(r.output, "steps in flight per HBM warp; " + hbm_stages)) << r.output;
  EXPECT_FALSE(contains(r.output, "1..8")) << r.output;
  const std::string d128 = bench + " --models llama-2-7b --batch 8 --ctx 512 --ratios 0,1/2";
  for (const std::string flag : {"--host-stages", "--hbm-stages"}) {
    EXPECT_EQ(run_dak(d128 + " " + flag + " 6").exit_code, 0) << flag;
    r = run_dak(d128 + " " + flag + " 7");
    EXPECT_EQ(r.exit_code, 1) << flag << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, flag + " 7 needs ")) << flag << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "more than the 231936 bytes of dynamic SMEM a plan may take")) << flag << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "where: " + flag)) << flag << "\n" << r.output;
  }
}

TEST(CliFlags, AnHbmRingDepthThatDoesNotFitIsIgnoredWithANotice) {
  // DAK_ATTN_HBM_STAGES=8 at head_dim 128 (session 43's trial: "278528 bytes of SMEM per CTA exceed
  // the 231936 byte limit", exit 1, without naming the switch); --hbm-stages still overrides it.
  const std::string bench = "bench attention --dry-run --models llama-2-7b --batch 8 --ctx 512 --ratios 0";
  RunResult r = dak::testing::run_dak_env("DAK_ATTN_HBM_STAGES=8", bench);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: notice: DAK_ATTN_HBM_STAGES=8 ignored at head_dim 128 (a ring of 8 ")) << r.output;
  EXPECT_TRUE(contains(r.output, "more than the 231936 a plan may take); the plan keeps ")) << r.output;
  r = dak::testing::run_dak_env("DAK_ATTN_HBM_STAGES=8", bench + " --hbm-stages 3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "x3 stages")) << r.output;
  r = dak::testing::run_dak_env("DAK_ATTN_HBM_STAGES=3", bench);  // a depth that fits is taken, silently
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(contains(r.output, "notice")) << r.output;
  EXPECT_TRUE(contains(r.output, "hbm_ctas=256x3 stages")) << r.output;  // 2 CTAs an SM still fit
  // A ring that leaves room for one CTA an SM is planned for one (the launch ran the plan's 2 CTAs
  // an SM in two waves), by the flag and by the switch alike.
  r = run_dak(bench + " --hbm-stages 4");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "hbm_ctas=132x4 stages")) << r.output;
  r = dak::testing::run_dak_env("DAK_ATTN_HBM_STAGES=4", bench);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "hbm_ctas=132x4 stages")) << r.output;
}

TEST(CliFlags, AttentionSplitAndWaveSwitchesShowInTheDryRun) {
  // DAK_ATTN_SPLITS and DAK_ATTN_HBM_WAVES (session 46's A/B switches), as the measurement plans them.
  const std::string bench = "bench attention --dry-run --models llama-2-7b --batch 64 --ctx 512 --ratios 0";
  RunResult r = dak::testing::run_dak_env("DAK_ATTN_SPLITS=4", bench);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "split=4x128 ")) << r.output;
  EXPECT_TRUE(contains(r.output, "(combine in CTA")) << r.output;
  EXPECT_FALSE(contains(r.output, "notice")) << r.output;
  // 9 splits of whole 16-key steps do not exist at 512 keys (4 steps each fill 8): a notice says so
  // (the session-46 trial: 9 silently gave 8, 13 and 15 both 11).
  r = dak::testing::run_dak_env("DAK_ATTN_SPLITS=9", bench);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "split=8x64 ")) << r.output;
  EXPECT_TRUE(contains(r.output, "dak: notice: DAK_ATTN_SPLITS=9 gives 8 splits of 64 keys at a context of 512"))
      << r.output;
  r = dak::testing::run_dak_env("DAK_ATTN_SPLITS=17", bench);  // outside 1..16: ignored with a notice
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "DAK_ATTN_SPLITS")) << r.output;
  EXPECT_TRUE(contains(r.output, "split=1x512 ")) << r.output;
  // Waves: one HBM CTA per 4 items (64 x 32 items, one split: 512 CTAs) instead of the 264 slots.
  r = run_dak(bench);
  EXPECT_TRUE(contains(r.output, "hbm_ctas=264x")) << r.output;
  r = dak::testing::run_dak_env("DAK_ATTN_HBM_WAVES=1", bench);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "hbm_ctas=512x")) << r.output;
  // Only the HBM CTAs change: the host side is planned against the SM slots as without waves (a
  // session-46 review: the 1-warp host plan that session 45 rejected came back under waves).
  const std::string b512 = "bench attention --dry-run --models llama-3-8b --batch 512 --ctx 512 --ratios 0";
  r = run_dak(b512);
  EXPECT_TRUE(contains(r.output, "b_host=6 split=1x512 host_ctas=8x2 stages hbm_ctas=256x")) << r.output;
  r = dak::testing::run_dak_env("DAK_ATTN_HBM_WAVES=1", b512);
  EXPECT_TRUE(contains(r.output, "b_host=6 split=1x512 host_ctas=8x2 stages hbm_ctas=1012x")) << r.output;
}

TEST(CliFlags, BenchAttentionKvPadRowsShowInTheDryRun) {
  // DAK_BENCH_KV_PAD_ROWS (session 43's A/B): the dry run plans the padded blocks as the measurement
  // does; a bad value is ignored with a notice that shows it (session 43's trial: silent).
  const std::string bench = "bench attention --dry-run --models llama-2-7b --batch 8 --ctx 512 --ratios 0";
  RunResult r = dak::testing::run_dak_env("DAK_BENCH_KV_PAD_ROWS=8", bench);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "max_ctx=520 ")) << r.output;
  EXPECT_FALSE(contains(r.output, "notice")) << r.output;
  for (const char* bad : {"x", "-1", "4097", "99999"}) {
    r = dak::testing::run_dak_env(std::string("DAK_BENCH_KV_PAD_ROWS=") + bad, bench);
    EXPECT_EQ(r.exit_code, 0) << bad << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, std::string("dak: notice: DAK_BENCH_KV_PAD_ROWS='") + bad + "' ignored")) << r.output;
    EXPECT_TRUE(contains(r.output, "max_ctx=512 ")) << bad << "\n" << r.output;
  }
}

TEST(CliFlags, BenchGemmIntegersAreDecimal) {
  const std::string bench = "bench gemm --dry-run";
  for (const Flag& f : {Flag{bench, "--runs", "a count from 5 to 1000"},
                        Flag{bench, "--layers", "a count from 1 to 1024"},
                        Flag{bench, "--max-cluster", "4, 2 or 1 (multicast off)"}}) {
    expect_refused_at_parsing(f);
  }
  // A leading 0 is ten: --max-cluster 010 is refused as 10 (octal 8 would have said 8); decimal
  // 1025 / 1001 are above the ranges (octal 01025 = 533 and 01001 = 513 were accepted).
  const struct {
    std::string args, says;
  } refused[] = {
      {"--max-cluster 010", "--max-cluster 10 is not 1, 2 or 4"},
      {"--layers 01025", "--layers 1025 is outside [1, 1024]"},
      {"--runs 01001", "--runs 1001 is outside [5, 1000]"},
  };
  for (const auto& c : refused) {
    const RunResult r = run_dak(bench + " " + c.args);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.says)) << c.args << "\n" << r.output;
  }
  // Accepted values: 010 layers in the stack, 010 tokens and 010 host CTAs (comma lists) as ten.
  RunResult r = run_dak(bench + " --models llama-2-7b --tokens 010 --ratios 10 --congestion 010,3 --max-cluster 01 "
                                "--layers 010 --runs 010");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "llama-2-7b N=10 stack10 layer")) << r.output;
  EXPECT_TRUE(contains(r.output, "host_ctas=10x3 stages")) << r.output;
  EXPECT_TRUE(contains(r.output, "multicast off (--max-cluster 1)")) << r.output;
  // --seed (uint64, a whole number): hex is refused at parsing (exit 2), -1 and 2^64 are out of range
  // (exit 1).
  for (const std::string& bad : {std::string("0x10"), std::string("-1"), std::string("18446744073709551616")}) {
    r = run_dak(bench + " --seed " + bad);
    EXPECT_EQ(r.exit_code, bad == "0x10" ? 2 : 1) << bad << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "--seed: must be a whole number from 0 to 18446744073709551615")) << bad << "\n"
                                                                                                       << r.output;
    // Out of range: the fix gives the range, as every other option's out-of-range fix does.
    if (bad != "0x10") {
      EXPECT_TRUE(contains(r.output, "fix:   use a whole number from 0 to 18446744073709551615")) << bad << "\n"
                                                                                                   << r.output;
    }
  }
  EXPECT_EQ(run_dak(bench + " --models llama-2-7b --tokens 8 --ratios 10 --seed 010").exit_code, 0);
  // Comma lists: hex entries are refused by the list parser (exit 2), huge ones as out of range (exit 1).
  for (const std::string& args : {std::string("--tokens 0x10"), "--tokens 8," + kHuge,
                                  std::string("--congestion 0x4,4"), "--congestion 4," + kHuge}) {
    r = run_dak(bench + " " + args);
    EXPECT_EQ(r.exit_code, contains(args, kHuge) ? 1 : 2) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, args.substr(0, args.find(' ')))) << args << "\n" << r.output;
  }
}

TEST(CliFlags, ProfileIntegersAreDecimal) {
  const std::string profile = "profile --output /nonexistent-dak-dir/p.json";
  expect_refused_at_parsing({profile, "--runs", "0 (the default: 5, 3 with --quick) or a count from 3 to 1000"});
  // Decimal 1001 is above 1000 (octal 01001 = 513 was accepted), before the output file or the GPU.
  RunResult r = run_dak(profile + " --runs 01001");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--runs 1001 is outside 3 to 1000 (or 0: the default)")) << r.output;
  // --runs 02 is two, too few (it passes the parser as two, not as a refused non-number).
  r = run_dak(profile + " --runs 02");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--runs 2 is outside 3 to 1000 (or 0: the default)")) << r.output;
  // --gemm-tokens (a comma list): 010000 is ten thousand, above 8192 (octal 4096 was accepted), and huge
  // values are out of range (exit 1); hex is refused by the list parser (exit 2).
  for (const std::string& bad : {std::string("010000"), kHuge}) {
    r = run_dak(profile + " --gemm-tokens " + bad);
    EXPECT_EQ(r.exit_code, 1) << bad << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "--gemm-tokens value " + bad + " is outside [1, 8192]")) << bad << "\n"
                                                                                           << r.output;
  }
  r = run_dak(profile + " --gemm-tokens 0x10");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "is not a comma-separated list of token counts in [1, 8192]: '0x10' is not one"))
      << r.output;
}

TEST(CliFlags, SeedsAndDecimalsAreDecimal) {
  // Seeds: CLI11 read "010" as octal 8 after unsigned_64's check; now the same run as --seed 10.
  const std::string gen = std::string("generate --model ") + DAK_TEST_DATA_DIR +
                          "/hf_parity/llama_gqa --device cpu --prompt-ids 1,2 -n 6 --temperature 1 --output json ";
  const RunResult ten = run_dak(gen + "--seed 10");
  const RunResult octal = run_dak(gen + "--seed 010");
  const RunResult eight = run_dak(gen + "--seed 8");
  ASSERT_EQ(ten.exit_code, 0) << ten.output;
  ASSERT_EQ(octal.exit_code, 0) << octal.output;
  const auto ids = [](const std::string& out) { return out.substr(out.find("generated_ids"), 60); };
  EXPECT_EQ(ids(octal.output), ids(ten.output));
  EXPECT_NE(ids(eight.output), ids(ten.output)) << "seeds 8 and 10 should differ for this check to mean anything";
  // Decimal numbers: hexadecimal floats ("0x.8" = 0.5 for strtod and CLI11) are refused.
  RunResult r = run_dak("plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --offload-ratio 0x.8");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'0x.8' is not a number, so not a fraction in [0, 1]"), std::string::npos)
      << r.output;
  r = run_dak("plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --offload-ratio 1.5");
  EXPECT_EQ(r.exit_code, 1) << r.output;  // a number: the range check after parsing says [0, 1]
  EXPECT_NE(r.output.find("[0, 1]"), std::string::npos) << r.output;
  r = run_dak(gen + "--cpu-offload-gb 0x1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--cpu-offload-gb: '0x1' is not a number"), std::string::npos) << r.output;
  // A size without its unit counts bytes: 0.5 is not a whole number of them (the session-17 trial:
  // --gpu-memory 1.5 became 1 B), and a small whole number gets the unit hint in the budget's error.
  r = run_dak("plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --gpu-memory 0.5");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // not a size: the option's parser refuses it
  EXPECT_NE(r.output.find("'0.5' has no unit, so it counts bytes, and is not a whole number of them"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("e.g. 0.5GiB"), std::string::npos) << r.output;
  r = run_dak("plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --gpu-memory 20");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("a size without a unit counts bytes: write e.g. 20GiB"), std::string::npos) << r.output;
  // 0 is no budget in any unit: the budget's own fix alone (the session-25 trial got both hints).
  r = run_dak("plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --gpu-memory 0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("fix:   pass a size with its unit, such as 20GiB or 512MiB"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("write e.g. 20GiB"), std::string::npos) << r.output;
  // --top-p below the smallest normal float would be 0 once stored: refused as out of range.
  r = run_dak(gen + "--top-p 1e-300");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--top-p"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1.2e-38"), std::string::npos) << r.output;
  r = run_dak(gen + "--offload-ratio 0x.8");  // a list option, parsed by parse_number
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0x.8"), std::string::npos) << r.output;
}

}  // namespace
