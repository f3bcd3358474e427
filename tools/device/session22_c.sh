#!/usr/bin/env bash
# Device call 4 of session 22 (the landing tree): every gpu test, and the auto plans the planner now
# refines on its copy-pipeline replay (planner.cc, refine_pipeline) at the points whose placement
# changed, with `DAK_PLAN_NO_REFINE=1` (the greedy's plan as it was) beside the two largest predicted
# changes; `dak bench`, random weights, prompt 32, gen 8 (the FlexGen point gen 32), 5 repeats.
# Usage from the repo root: bash tools/device/session22_c.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
dak_bench_point l7-b512 X=1 90 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3
dak_bench_point l7-b8 X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_bench_point opt67-b512 X=1 90 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3
dak_bench_point opt67-b512-30-norefine DAK_PLAN_NO_REFINE=1 60 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.3
dak_bench_point opt67-flexgen X=1 60 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 1
dak_bench_point opt30-b512-10 X=1 120 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_bench_point opt30-b512-10-norefine DAK_PLAN_NO_REFINE=1 120 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_merge_points
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
