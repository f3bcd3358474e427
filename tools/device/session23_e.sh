#!/usr/bin/env bash
# Device call 5 of session 23 (the final tree: the prefetch candidate, the trial's fixes): every gpu
# test, and Llama-2-7B batch 512 at 60 % under the default planner (the prefetch candidate's plan,
# 257.667 ms in call 4). Usage from the repo root: bash tools/device/session23_e.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
dak_bench_point l7-b512-60 X=1 90 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.6
dak_merge_points
dak_point_table
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
