#!/usr/bin/env bash
# Device call 6 of session 21 (the refit was then reverted: docs/perf-notes.md session 21): the
# planner's step-overhead term refitted (4.3 -> 2.5 us per kernel
# of a decode step) changes the Llama-2-7B batch-8 10 % placement (410 MiB direct + 892 MiB staged
# instead of 679 + 623; same predicted TPOT, a tie at the link floor); measure it, and the all-HBM
# predictions against the decode (`dak bench`, random weights, prompt 32). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_bench_point l7-b8 X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1
dak_bench_point opt67-b8 X=1 40 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_l7_decode base X=1 auto
dak_bundle_decode
dak_merge_points
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt"
echo "total $(( $(date +%s) - t0 )) s"
