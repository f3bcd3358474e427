#!/usr/bin/env bash
# Device call 3 of session 28: main (the A side of branch small-kernels-b512's call 2, same card):
# Llama-2-7B decode at batch 1 / 8 twice, CUPTI timelines at batch 1 and 512, the batch-512 points at
# 0 and 10 %. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for rep in 1 2; do dak_l7_decode main$rep X=1 auto; done
dak_bundle_decode
dak_timeline b1-main X=1 --batch 1
dak_timeline b512-main X=1 --batch 512
for r in 0 0.1; do
  dak_bench_point l7-b512-$r-main X=1 90 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio $r
done
dak_merge_points
echo "--- decode, prompt 32, gen 32 (TPOT ms, floor, ratio)"
grep -hE "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | awk '/^===/{n=$2} /^\|/{split($0,c,"|"); print n, "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}'
echo "--- timeline kernels of interest (us per step, summed increments)"
grep -E "^=== |activation|rope|tiered_gemm|step span" "$OUT/timelines.txt" | head -40
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
