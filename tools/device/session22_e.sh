#!/usr/bin/env bash
# Device call 6 of session 22: auto now also weighs the all-direct plan (--offload direct's) and
# takes it where it is predicted faster; at batch 512 that switches Llama-2-7B and OPT-30B at 30 %
# to direct (predicted 128.603 vs 130.088 ms and 481.406 vs 490.812). Each is measured against the
# staged plan auto made before (`--plan`, same call). `dak bench`, random weights, prompt 32, gen 8.
# Usage from the repo root: bash tools/device/session22_e.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
plans=docs/results/2026-12-04/session22/plans
dak_build dak
dak_bench_point l7-b512-30-auto X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.3
dak_bench_point l7-b512-30-staged X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --plan $plans/l7-b512-30-staged.json
dak_bench_point opt30-b512-30-auto X=1 100 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.3
dak_bench_point opt30-b512-30-staged X=1 100 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --plan $plans/opt30-b512-30-staged.json
dak_merge_points
echo "total $(( $(date +%s) - t0 )) s"
