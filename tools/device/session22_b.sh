#!/usr/bin/env bash
# Device call 3 of session 22: every gpu test on the landing tree (the generate / tokenizer checks of
# the trial fixes), and the planner's pipeline refinement (DAK_PLAN_REFINE, a local search that moves
# host bytes between operators while the copy-pipeline replay predicts a shorter step) measured as
# plans (`--plan`) against today's auto plans, alternating, in one call: Llama-2-7B batch 512 at 10 %
# (predicted 41.259 -> 39.765 ms), OPT-6.7B batch 512 at 10 % (45.511 -> 44.839).
# Usage from the repo root: bash tools/device/session22_b.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
plans=docs/results/2026-12-04/session22/plans
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
for rep in 1 2; do
  dak_bench_point l7-b512-auto-$rep X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  dak_bench_point l7-b512-refined-$rep X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --plan $plans/l7-b512-10-refined.json
done
dak_bench_point opt67-b512-auto X=1 60 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_bench_point opt67-b512-refined X=1 60 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --plan $plans/opt67-b512-10-refined.json
dak_merge_points
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
