#!/usr/bin/env bash
# Device call 2 of session 23: auto takes the all-direct plan where predicted faster (Qwen2-7B
# batch 512, prompt 128 at 8 GiB; Llama-2-70B batch 512 at 10 %, predicted 271.091 ms direct against
# 302.333 for the staged plan, DAK_PLAN_DIRECT_FALLBACK_ONLY=1), --plan takes the plan's mode
# (session 22's --offload direct placement of Llama-2-7B batch 512 at 10 % against this session's,
# same call), then every gpu test. `dak bench`, random weights, gen 8.
# Usage from the repo root: bash tools/device/session23_b.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
plans=docs/results/2026-12-04/session23/plans
dak_build dak dak_gpu_tests
dak_bench_point l7-b512-10-direct X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload direct
dak_bench_point l7-b512-10-direct-s22 X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --plan $plans/l7-b512-10-direct-session22.json
grep -h "running in that mode" /tmp/s-l7-b512-10-direct-s22.log
dak_bench_point qwen2-b512-8g-auto X=1 120 --model qwen2-7b --batch 512 --prompt-len 128 --gen-len 8 --gpu-memory 8GiB
dak_bench_point l70-b512-10-auto X=1 150 --model llama-2-70b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_bench_point l70-b512-10-staged DAK_PLAN_DIRECT_FALLBACK_ONLY=1 150 --model llama-2-70b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_merge_points
dak_gpu_tests 60 4
dak_point_table
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
