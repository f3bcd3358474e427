#!/usr/bin/env bash
# Session 34, call 10: a deeper HBM ring for the tiered attention where its HBM CTAs fit one per SM
# (DAK_ATTN_DEEP_RING=0 keeps the 2-per-SM ring). Build; every gpu test; then two interleaved rounds,
# Llama-2-7B decode batch 1 / 8 / 16 (prompt 32, gen 32: 4 stages at batch 8 and 16, unchanged at 1)
# and Llama-3-8B batch 8. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
for R in 1 2; do
  for v in X=1 DAK_ATTN_DEEP_RING=0; do
    dak_tpot $v l7-$R-${v%%=*} --model llama-2-7b --batch 1,8,16 --prompt-len 32 --gen-len 32
    dak_tpot $v l3-$R-${v%%=*} --model llama-3-8b --batch 8 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/ring.txt"
echo "total $(( $(date +%s) - t0 )) s"
