// `dak bench` and `--random-weights` from the command line, on any machine: the help documents
// every option and metric, bad arguments are refused before touching a GPU, and without a
// usable GPU (hidden here with CUDA_VISIBLE_DEVICES=, or a dak built without CUDA) both fail
// with exit code 1 and a message saying why.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "cli_test_util.h"

namespace {

using dak::testing::RunResult;

/// Runs `env dak args` through the shell; env is a prefix like "CUDA_VISIBLE_DEVICES=".
RunResult run_dak(const std::string& args, const std::string& env = "") {
  return dak::testing::run_dak_env(env, args);
}

const std::string kNoGpu = "CUDA_VISIBLE_DEVICES=";

TEST(CliBench, HelpDocumentsEveryOptionAndMetric) {
  const RunResult r = run_dak("bench --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* s : {"--model", "--random-weights", "--weights-seed", "--batch", "--prompt-len", "--gen-len",
                        "--repeats", "--output", "--csv", "--json", "--hbm-buffer-gib", "--hbm-runs", "TTFT", "TPOT",
                        "tok/s", "EB", "floor", "B_g", "target"}) {
    EXPECT_NE(r.output.find(s), std::string::npos) << s << " missing from:\n" << r.output;
  }
  const RunResult top = run_dak("--help");
  EXPECT_NE(top.output.find("bench"), std::string::npos) << top.output;
}

TEST(CliBench, WithoutAGpuFailsWithTheReason) {
  const RunResult r = run_dak("bench --model llama-2-7b --random-weights --batch 1", kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("dak: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("needs a Hopper GPU"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dak plan"), std::string::npos) << "the fix should name the GPU-free alternative\n"
                                                         << r.output;
}

TEST(CliBench, BadArgumentsAreRefusedBeforeLookingForAGpu) {
  struct Case {
    const char* args;
    const char* needle;
    int exit_code = 1;  // 2: refused by the flag's own parser (a usage error); 1: out of range, or a conflict
  };
  for (const Case& c : {Case{"bench --model llama-2-7b --random-weights --repeats 3", "--repeats"},
                        Case{"bench --model llama-2-7b --random-weights --repeats 2000", "--repeats"},
                        // NaN / inf / huge buffers passed a `<= 0` check into a float-to-integer conversion.
                        Case{"bench --model llama-2-7b --random-weights --hbm-buffer-gib nan", "--hbm-buffer-gib", 2},
                        Case{"bench --model llama-2-7b --random-weights --hbm-buffer-gib inf", "'inf' is too large"},
                        Case{"bench --model llama-2-7b --random-weights --hbm-buffer-gib 1e300", "--hbm-buffer-gib"},
                        Case{"bench --model llama-2-7b --random-weights --hbm-runs 2000000000", "--hbm-runs"},
                        Case{"bench --model llama-2-7b --random-weights --batch 0", "--batch"},
                        Case{"bench --model llama-2-7b --random-weights --batch 1,x", "--batch", 2},
                        Case{"bench --model llama-2-7b --random-weights --batch 48,abc", "whole numbers", 2},
                        Case{"bench --model llama-2-7b --random-weights --gen-len 1", "--gen-len"},
                        Case{"bench --model no-such-model --random-weights", "shipped config"}}) {
    const RunResult r = run_dak(c.args, kNoGpu);
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.needle), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("needs a Hopper GPU"), std::string::npos) << c.args << "\n" << r.output;
  }
  const RunResult bad_output = run_dak("bench --model llama-2-7b --random-weights --output xml");
  EXPECT_NE(bad_output.exit_code, 0) << bad_output.output;
}

TEST(CliBench, BatchHasThePlanCapAndItsMessage) {
  // New-user trial: dak bench --batch took values up to 2^31 - 1 while dak plan --batch stops at
  // 65536 (the sequences the planner supports). Both now refuse a larger batch with one message, exit
  // 1 (a well-formed value out of range), before a GPU is looked for; any item of a list counts.
  const std::string plan = run_dak("plan --model llama-2-7b --batch 65537").output;
  const std::string says = "--batch 65537 is larger than the planner supports (65536 sequences)";
  EXPECT_NE(plan.find(says), std::string::npos) << plan;
  for (const char* list : {"65537", "1,8,65537", "65537,512"}) {
    const RunResult r = run_dak(std::string("bench --model llama-2-7b --random-weights --batch ") + list, kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << list << ": " << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << list << ": " << r.output;
    EXPECT_NE(r.output.find("where: --batch"), std::string::npos) << list << ": " << r.output;
    EXPECT_NE(r.output.find("fix:   pass a count from 1 to 65536"), std::string::npos) << list << ": " << r.output;
    EXPECT_EQ(r.output.find("needs a Hopper GPU"), std::string::npos) << list << ": " << r.output;
    // The fix is the same as dak plan's.
    EXPECT_NE(plan.find(r.output.substr(r.output.find("fix:"))), std::string::npos) << r.output << "\n" << plan;
  }
  // Beyond int64, and below 1: refused as out of range too (exit 1), as written.
  RunResult r = run_dak("bench --model llama-2-7b --random-weights --batch 1,99999999999999999999", kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--batch 99999999999999999999 is larger than the planner supports"), std::string::npos)
      << r.output;
  r = run_dak("bench --model llama-2-7b --random-weights --batch 8,0", kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--batch 0 is not a positive count"), std::string::npos) << r.output;
  // The cap itself is accepted: refused only for the missing GPU.
  r = run_dak("bench --model llama-2-7b --random-weights --batch 1,65536", kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find("--batch"), std::string::npos) << r.output;
  // A list that is not one is still a usage error (exit 2), whatever its numbers.
  EXPECT_EQ(run_dak("bench --model llama-2-7b --random-weights --batch 65537,x", kNoGpu).exit_code, 2);
  // --help says the range.
  const RunResult help = run_dak("bench --help");
  EXPECT_NE(help.output.find("Sequences per step, a count from 1 to 65536"), std::string::npos) << help.output;
}

TEST(CliBench, ArgumentsAreCheckedAgainstTheModelBeforeLookingForAGpu) {
  // New-user trial: dak bench checked prompt + gen against the model's context only on the GPU
  // (this machine said "needs a Hopper GPU"), while dak plan refuses it without one. Any pair of
  // the sweep counts; the longest that fits is refused only for the missing GPU.
  for (const char* lens : {"--prompt-len 4000 --gen-len 97", "--prompt-len 8,4000 --gen-len 2,97",
                           "--prompt-len 4096 --gen-len 2", "--prompt-len 2147483647 --gen-len 2147483647"}) {
    const RunResult r = run_dak(std::string("bench --model llama-2-7b --random-weights --batch 1,8 ") + lens, kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << lens << "\n" << r.output;
    EXPECT_NE(r.output.find("dak: error: prompt "), std::string::npos) << lens << "\n" << r.output;
    EXPECT_NE(r.output.find("positions exceed the context of llama-2-7b (4096 tokens)"), std::string::npos)
        << lens << "\n" << r.output;
    EXPECT_NE(r.output.find("where: --prompt-len / --gen-len"), std::string::npos) << lens << "\n" << r.output;
    EXPECT_NE(r.output.find("fix:   pass a --prompt-len + --gen-len of at most 4096"), std::string::npos)
        << lens << "\n" << r.output;
    EXPECT_EQ(r.output.find("Hopper"), std::string::npos) << lens << "\n" << r.output;
  }
  const RunResult over = run_dak("bench --model llama-2-7b --random-weights --prompt-len 4000 --gen-len 97", kNoGpu);
  EXPECT_NE(over.output.find("prompt 4000 + gen 97 = 4097 positions"), std::string::npos) << over.output;
  // dak plan says the same overflow (its own words) without a GPU.
  const RunResult plan = run_dak("plan --model llama-2-7b --prompt-len 4000 --gen-len 97");
  EXPECT_EQ(plan.exit_code, 1) << plan.output;
  EXPECT_NE(plan.output.find("4097"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("context of 4096"), std::string::npos) << plan.output;
  const RunResult fits = run_dak("bench --model llama-2-7b --random-weights --prompt-len 8,4000 --gen-len 96", kNoGpu);
  EXPECT_EQ(fits.exit_code, 1) << fits.output;
  EXPECT_NE(fits.output.find("needs a Hopper GPU"), std::string::npos) << fits.output;

  // A --plan fixes one batch and context: a sweep point it was not made for is refused before the GPU too.
  const std::string plan_file = ::testing::TempDir() + "dak_bench_batch8_plan.json";
  ASSERT_EQ(dak::testing::run_shell(std::string(DAK_BINARY) + " plan --model llama-2-7b --batch 8 --prompt-len 32 "
                                    "--gen-len 32 --output json > " + plan_file)
                .exit_code,
            0);
  RunResult r = run_dak("bench --model llama-2-7b --random-weights --batch 8,1 --plan " + plan_file, kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // A plan serves one shape: a sweep is refused up front (session 25, second trial: a fix per batch went round in circles).
  EXPECT_NE(r.output.find("a plan serves one shape (batch 8, prompt 32, gen 32 for " + plan_file +
                          "), but this bench sweeps 2 shapes"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("Hopper"), std::string::npos) << r.output;
  r = run_dak("bench --model llama-2-7b --random-weights --batch 8 --plan " + plan_file, kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("needs a Hopper GPU"), std::string::npos) << r.output;
  std::remove(plan_file.c_str());
}

TEST(CliBench, APlanForAnotherModelSuggestsThePlanOfTheRunsOwnShape) {
  // New-user trial: bench / generate --plan with a plan made for another model said "fix: make a plan
  // for this model: dak plan ... --batch 8 --prompt-len 32 --gen-len 32", the plan's shape, not the
  // run's. The fix now makes the plan the run asks for: its model, batch and lengths.
  const std::string dir = ::testing::TempDir();
  const std::string plan_file = dir + "dak_bench_other_model_plan.json";
  const std::string direct_plan = dir + "dak_bench_other_model_direct_plan.json";
  ASSERT_EQ(dak::testing::run_shell(std::string(DAK_BINARY) + " plan --model llama-2-7b --batch 8 --prompt-len 32 "
                                    "--gen-len 32 --output json > " + plan_file)
                .exit_code,
            0);
  ASSERT_EQ(dak::testing::run_shell(std::string(DAK_BINARY) + " plan --model llama-2-7b --batch 8 --prompt-len 32 "
                                    "--gen-len 32 --offload direct --offload-ratio 0.1 --output json > " + direct_plan)
                .exit_code,
            0);
  const std::string llama3 = std::string(DAK_TEST_DATA_DIR) + "/../../configs/llama-3-8b.json";
  // The suggested file is a new one beside the user's plan, which following the fix must not overwrite.
  const std::string fresh_plan = dir + "dak_bench_other_model_plan-llama-3-8b.json";
  const struct {
    std::string args, plan, command;
  } cases[] = {
      {"bench --random-weights --model llama-3-8b --batch 2 --prompt-len 16 --gen-len 8", plan_file,
       "dak plan --model llama-3-8b --batch 2 --prompt-len 16 --gen-len 8 --profile h200-default --output json > " +
           fresh_plan},
      // (A sweep with --plan is refused before the model check: a plan serves one shape; CliTrial25b.)
      // The plan's mode, which the run shares.
      {"bench --random-weights --model llama-3-8b --batch 1 --offload direct", direct_plan,
       "dak plan --model llama-3-8b --batch 1 --prompt-len 32 --gen-len 32 --offload direct --offload-ratio 0.1 "
       "--profile h200-default --output json > " + dir +
           "dak_bench_other_model_direct_plan-llama-3-8b.json"},
      // generate: its prompts are the batch, the longest the prompt length, -n the generation.
      {"generate --random-weights --model " + llama3 + " --prompt-ids 1,2,3 --prompt-ids 4 -n 5", plan_file,
       "dak plan --model " + llama3 + " --batch 2 --prompt-len 3 --gen-len 5 --profile h200-default --output json > " +
           fresh_plan},
      // The default model on the CPU path: refused all the same, with its own shape.
      {"generate --prompt-ids 1,2,3,4 -n 6", plan_file,
       "--batch 1 --prompt-len 4 --gen-len 6 --profile h200-default --output json > " + dir +
           "dak_bench_other_model_plan-SmolLM2-135M-Instruct.Q4_1.json"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(c.args + " --plan " + c.plan, kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("dak: error: the plan was made for the model 'llama-2-7b'"), std::string::npos)
        << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("where: " + c.plan), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("fix:   make a plan for this model: "), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.command), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("--batch 8 --prompt-len 32"), std::string::npos) << c.args << "\n" << r.output;
  }
  std::remove(plan_file.c_str());
  std::remove(direct_plan.c_str());
}

TEST(CliBench, ABudgetTheRatioOverfillsIsRefusedAsDakPlanRefusesItBeforeLookingForAGpu) {
  // New-user trial: dak bench --offload-ratio 0.3 --gpu-memory 4GiB said "needs a Hopper GPU" on a
  // machine without one, while dak plan with the same arguments refuses the budget: 0.3 leaves more in
  // HBM than 4 GiB. The budget is the user's, so the plan is made (and refused) before the GPU, in dak
  // plan's words; any point of a sweep counts, and generate --random-weights does the same.
  const RunResult plan = run_dak("plan --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 --offload-ratio 0.3 "
                                 "--gpu-memory 4GiB");
  ASSERT_EQ(plan.exit_code, 1) << plan.output;
  ASSERT_NE(plan.output.find("dak: error: this offload ratio leaves "), std::string::npos) << plan.output;
  ASSERT_NE(plan.output.find("more than the HBM budget of 4.00 GiB"), std::string::npos) << plan.output;
  ASSERT_NE(plan.output.find("where: --offload-ratio"), std::string::npos) << plan.output;
  // The first point the sweep would run refuses: at batch 1, dak plan's message for batch 1.
  const RunResult plan_b1 = run_dak("plan --model llama-2-7b --batch 1 --offload-ratio 0.3 --gpu-memory 4GiB");
  ASSERT_EQ(plan_b1.exit_code, 1) << plan_b1.output;
  // A budget too small for what must stay on the GPU (no ratio): refused the same way.
  const RunResult tiny_plan = run_dak("plan --model llama-2-7b --batch 1 --gpu-memory 2MiB");
  ASSERT_EQ(tiny_plan.exit_code, 1) << tiny_plan.output;
  ASSERT_NE(tiny_plan.output.find("cannot hold what must stay on the GPU"), std::string::npos) << tiny_plan.output;
  // A sweep names the point that refuses at the end of dak plan's first line (session 23).
  const struct {
    std::string args;
    const RunResult& plan;
    std::string point = "";
  } cases[] = {
      {"bench --model llama-2-7b --random-weights --batch 8 --offload-ratio 0.3 --gpu-memory 4GiB", plan},
      {"bench --model llama-2-7b --random-weights --batch 8 --offload-ratio 0.9,0.3 --gpu-memory 4GiB", plan,
       " (the sweep's point at --offload-ratio 0.3: batch 8, prompt 32, gen 32)"},
      {"bench --model llama-2-7b --random-weights --batch 1,8 --offload-ratio 0.3 --gpu-memory 4GiB", plan_b1,
       " (the sweep's point at --offload-ratio 0.3: batch 1, prompt 32, gen 32)"},
      {"bench --model llama-2-7b --random-weights --batch 1 --gpu-memory 2MiB", tiny_plan},
      // 8 prompts of at most 32 ids, 32 new tokens: dak plan's batch 8, prompt 32, gen 32.
      {"generate --model llama-2-7b --random-weights --prompt-ids "
       "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32 --prompt-ids 1 "
       "--prompt-ids 1 --prompt-ids 1 --prompt-ids 1 --prompt-ids 1 --prompt-ids 1 --prompt-ids 1 -n 32 "
       "--offload-ratio 0.3 --gpu-memory 4GiB",
       plan},
  };
  for (const auto& c : cases) {
    const RunResult r = run_dak(c.args, kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("Hopper"), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.find("GPU layer"), std::string::npos) << c.args << "\n" << r.output;
    // dak plan's message, its where and its fix, word for word; dak generate's fix names its own
    // options for dak plan's --batch / --prompt-len / --gen-len.
    std::string expected = c.plan.output;
    expected.insert(expected.find('\n'), c.point);
    const std::string plan_terms = "lower --batch, --prompt-len or --gen-len";
    if (c.args.rfind("generate", 0) == 0 && expected.find(plan_terms) != std::string::npos) {
      expected.replace(expected.find(plan_terms), plan_terms.size(),
                       "give fewer prompts at once (--max-batch), a shorter prompt or fewer new tokens (--max-new-tokens / -n)");
    }
    // The place names the command that ran ("--gpu-memory (dak bench)"), the rest is dak plan's.
    const std::string command = c.args.substr(0, c.args.find(' '));
    for (size_t at = expected.find(" (dak plan)"); at != std::string::npos; at = expected.find(" (dak plan)", at)) {
      expected.replace(at, 11, " (dak " + command + ")");
    }
    EXPECT_EQ(r.output, expected) << c.args;
  }
  // A budget that holds what the ratio leaves: refused only for the missing GPU.
  const RunResult fits =
      run_dak("bench --model llama-2-7b --random-weights --batch 8 --offload-ratio 0.3 --gpu-memory 20GiB", kNoGpu);
  EXPECT_EQ(fits.exit_code, 1) << fits.output;
  EXPECT_NE(fits.output.find("needs a Hopper GPU"), std::string::npos) << fits.output;
}

TEST(CliBench, CpuOffloadGbSaysItsRange) {
  // New-user trial: --cpu-offload-gb 1e9 said "not a size in GiB" without the limit (1e6 GiB).
  const struct {
    const char* value;
    int exit_code;
    const char* says;
  } cases[] = {
      {"1e9", 1, "dak: error: --cpu-offload-gb 1000000000 is too large: it must be between 0 and 1e6 GiB"},
      {"1000001", 1, "dak: error: --cpu-offload-gb 1000001 is too large: it must be between 0 and 1e6 GiB"},
      {"-1", 1, "dak: error: --cpu-offload-gb -1 is negative: it must be between 0 and 1e6 GiB"},
      {"-0.5", 1, "dak: error: --cpu-offload-gb -0.5 is negative: it must be between 0 and 1e6 GiB"},
      // A value check's advice is the fix (trial 26), after "--cpu-offload-gb: 'nan' is not a number".
      {"nan", 2, "fix:   use a number of GiB from 0 to 1e6 (e.g. 4 or 0.5), or run"},
  };
  const std::string gen =
      std::string("generate --device auto --model ") + DAK_TEST_DATA_DIR + "/hf_parity/llama_gqa --prompt-ids 1,2 ";
  for (const std::string cmd : {std::string("bench --model llama-2-7b --random-weights"), gen}) {
    for (const auto& c : cases) {
      const RunResult r = run_dak(cmd + " --cpu-offload-gb " + c.value, kNoGpu);
      EXPECT_EQ(r.exit_code, c.exit_code) << cmd << " " << c.value << "\n" << r.output;
      EXPECT_NE(r.output.find(c.says), std::string::npos) << cmd << " " << c.value << "\n" << r.output;
      if (c.exit_code == 1) {
        EXPECT_NE(r.output.find("where: --cpu-offload-gb"), std::string::npos) << r.output;
        EXPECT_NE(r.output.find("fix:   give the GiB of weights + KV cache to keep in host memory"), std::string::npos)
            << r.output;
      }
    }
  }
  // Beyond double's range, an infinity written out included: the fix gives the range too (session 24's
  // trial: "run --help"; a new-user trial: 'inf' was "not a number", exit 2, while 1e400 exited 1).
  for (const std::string cmd : {std::string("bench --model llama-2-7b --random-weights"), gen}) {
    for (const std::string value : {"1e400", "inf", "-Infinity"}) {
      const RunResult r = run_dak(cmd + " --cpu-offload-gb " + value, kNoGpu);
      EXPECT_EQ(r.exit_code, 1) << cmd << " " << value << "\n" << r.output;
      EXPECT_NE(r.output.find("--cpu-offload-gb: '" + value + "' is too " + (value[0] == '-' ? "small" : "large") + "\n"),
                std::string::npos)
          << r.output;
      EXPECT_NE(r.output.find("\n  fix:   use a number of GiB from 0 to 1e6 (e.g. 4 or 0.5)"), std::string::npos)
          << r.output;
    }
  }
  // The limit itself passes the range check; the plan, made before any GPU is looked for, refuses
  // more host bytes than the model has (session 23: it reached the GPU check first).
  const RunResult r = run_dak("bench --model llama-2-7b --random-weights --cpu-offload-gb 1e6", kNoGpu);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find("it must be between"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("asks for 976.56 TiB in host memory"), std::string::npos) << r.output;
}

TEST(CliBench, AForcedRatioBeyondThePinnableMemoryIsRefusedBeforeLookingForAGpu) {
  // Session-23 trial: without --gpu-memory this reached "needs a Hopper GPU", and dak plan's fix said
  // "raise --gpu-memory", which a forced ratio ignores.
  for (const char* cmd : {"bench --model opt-30b --random-weights --batch 512 --prompt-len 128 --gen-len 32",
                          "plan --model opt-30b --batch 512 --prompt-len 128 --gen-len 32"}) {
    const RunResult r = run_dak(std::string(cmd) + " --offload-ratio 0.8", kNoGpu);
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("can pin only 120.00 GiB"), std::string::npos) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("where: --offload-ratio"), std::string::npos) << cmd << ": " << r.output;
    EXPECT_NE(r.output.find("or the offload ratio (at most 0.7461 fits)"), std::string::npos) << cmd << ": " << r.output;
    EXPECT_EQ(r.output.find("raise --gpu-memory"), std::string::npos) << cmd << ": " << r.output;
    EXPECT_EQ(r.output.find("Hopper"), std::string::npos) << cmd << ": " << r.output;
  }
}

TEST(CliBench, HelpDescribesTheEnginesStagingRing) {
  // The prefetch mode's staging ring has kStagingRingSlots = 3 slots (core/plan.h): the help of
  // dak bench and dak generate said "one linear ahead" (the old two-slot ring).
  for (const char* cmd : {"bench --help", "generate --help", "plan --help"}) {
    const RunResult r = run_dak(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
    for (const char* stale : {"one linear ahead", "two-slot", "two slots", "2-slot"}) {
      EXPECT_EQ(r.output.find(stale), std::string::npos) << cmd << ": " << stale << "\n" << r.output;
    }
    if (std::string(cmd) != "plan --help") {
      EXPECT_NE(r.output.find("into a 3-slot HBM ring, the copy of staged linear k waiting for the GEMM of linear "
                              "k-3"),
                std::string::npos)
          << cmd << "\n" << r.output;
    }
  }
}

TEST(CliRandomWeights, GenerateRefusesTheCpuTextPromptsAndAMissingGpu) {
  const RunResult cpu = run_dak("generate --model llama-2-7b --random-weights --prompt-ids 1,2,3 --device cpu");
  EXPECT_EQ(cpu.exit_code, 1) << cpu.output;
  EXPECT_NE(cpu.output.find("GPU only"), std::string::npos) << cpu.output;

  const RunResult text = run_dak("generate --model llama-2-7b --random-weights --prompt hello --device cuda");
  EXPECT_EQ(text.exit_code, 1) << text.output;
  EXPECT_NE(text.output.find("--prompt-ids"), std::string::npos) << text.output;

  const RunResult no_gpu =
      run_dak("generate --model " + std::string(DAK_TEST_DATA_DIR) +
                  "/../../configs/llama-2-7b.json --random-weights --prompt-ids 1,2,3 --device auto",
              kNoGpu);
  EXPECT_EQ(no_gpu.exit_code, 1) << no_gpu.output;
  EXPECT_NE(no_gpu.output.find("cannot run --random-weights"), std::string::npos) << no_gpu.output;
}

}  // namespace
