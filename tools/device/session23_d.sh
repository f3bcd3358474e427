#!/usr/bin/env bash
# Device call 4 of session 23: auto also weighs the prefetch mode's placement (the all-direct
# allocation with every host linear staged, refined on the copy pipeline). A/B in this call, new
# against DAK_PLAN_NO_PREFETCH_CANDIDATE=1 (predicted ms, new / old): Llama-2-7B batch 8 at 10 %
# 20.446 / 20.511 (session 22 measured a placement of the same split, 410 MiB direct + 892 MiB
# staged, at 21.962), OPT-6.7B batch 512 at 10 % 44.063 / 44.839, Llama-2-7B batch 512 at 60 %
# 259.306 / 261.848, and the trial's cases with prompt 128: OPT-6.7B batch 1 at 2 % 4.9 / 5.9,
# Llama-2-7B batch 64 at 5 % 12.5 / 13.9. `dak bench`, random weights, gen 8.
# Usage from the repo root: bash tools/device/session23_d.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
old=DAK_PLAN_NO_PREFETCH_CANDIDATE=1
for pair in "l7-b8-10|--model llama-2-7b --batch 8 --prompt-len 32 --offload-ratio 0.1" \
            "opt67-b512-10|--model opt-6.7b --batch 512 --prompt-len 32 --offload-ratio 0.1" \
            "opt67-b1-p128-2|--model opt-6.7b --batch 1 --prompt-len 128 --offload-ratio 0.02" \
            "l7-b64-p128-5|--model llama-2-7b --batch 64 --prompt-len 128 --offload-ratio 0.05" \
            "l7-b512-60|--model llama-2-7b --batch 512 --prompt-len 32 --offload-ratio 0.6"; do
  label=${pair%%|*}; args=${pair#*|}
  dak_bench_point "$label-new" X=1 90 $args --gen-len 8
  dak_bench_point "$label-old" $old 90 $args --gen-len 8
done
dak_merge_points
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
