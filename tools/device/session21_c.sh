#!/usr/bin/env bash
# Device call 4 of session 21: the staging ring at 3 slots (default) against 4 (DAK_STAGING_SLOTS=4,
# same binary) at Llama-2-7B / OPT-6.7B batch 512, 10 %; Llama-2-70B bf16 on one H200 with the rest
# in host memory (batch 8, gen 4, --gpu-memory 100GiB, auto); decode without offload (batch 1 / 8, issue
# 3's points). `dak bench`, random weights, prompt 32. Usage: bash tools/device/session21_c.sh.
# (Call 4 ran it with its own copies of dak_bench_point / dak_merge_points, since moved to common.sh.)
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for pass in 1 2; do
  for slots in 3 4; do
    dak_bench_point l7-b512-s$slots-p$pass DAK_STAGING_SLOTS=$slots 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  done
done
for slots in 3 4; do
  dak_bench_point opt67-b512-s$slots DAK_STAGING_SLOTS=$slots 60 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
done
dak_l7_decode base X=1 auto
dak_bundle_decode
dak_bench_point l70-b8 X=1 200 --model llama-2-70b --batch 8 --prompt-len 32 --gen-len 4 --gpu-memory 100GiB
dak_merge_points
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt"
grep -E "^\| 8 \| 32 \| 4" /tmp/s-l70-b8.txt
echo "total $(( $(date +%s) - t0 )) s"
