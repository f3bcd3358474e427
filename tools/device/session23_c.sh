#!/usr/bin/env bash
# Device call 3 of session 23 (the landing tree): every gpu test, then more points for the direct
# compute-path model and auto's choice between the staged and the all-direct plan, each pair in
# this call: Llama-3-8B batch 512 at 10 % (auto staged, predicted 17.688 ms; direct 20.928), and
# under binding budgets with prompt 128 where auto now takes the direct plan: Qwen2-7B at 12 GiB
# (132.439 against the staged plan's 137.202) and Llama-3-8B at 12 GiB (243.090 against 249.173).
# `dak bench`, random weights, gen 8. Usage from the repo root: bash tools/device/session23_c.sh.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
dak_bench_point l3-b512-10-auto X=1 60 --model llama-3-8b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_bench_point l3-b512-10-direct X=1 60 --model llama-3-8b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload direct
dak_bench_point qwen2-b512-12g-auto X=1 90 --model qwen2-7b --batch 512 --prompt-len 128 --gen-len 8 --gpu-memory 12GiB
dak_bench_point qwen2-b512-12g-staged DAK_PLAN_DIRECT_FALLBACK_ONLY=1 90 --model qwen2-7b --batch 512 --prompt-len 128 --gen-len 8 --gpu-memory 12GiB
dak_bench_point l3-b512-12g-auto X=1 90 --model llama-3-8b --batch 512 --prompt-len 128 --gen-len 8 --gpu-memory 12GiB
dak_bench_point l3-b512-12g-staged DAK_PLAN_DIRECT_FALLBACK_ONLY=1 90 --model llama-3-8b --batch 512 --prompt-len 128 --gen-len 8 --gpu-memory 12GiB
dak_merge_points
dak_point_table
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
