#!/usr/bin/env bash
# Session 34, call 11: the tiered attention's HBM ring trimmed to the steps a warp walks (one step at
# batch 1 at 64 keys: 1 stage, 35 KB instead of 104 KB, so o_proj's early CTAs fit beside it);
# DAK_ATTN_TRIM_RING=0 keeps the full ring. Build; every gpu test; two interleaved rounds of
# Llama-2-7B batch 1 / 8 and Llama-3-8B batch 1 / 8 decode (prompt 32, gen 32). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
for R in 1 2; do
  for v in X=1 DAK_ATTN_TRIM_RING=0; do
    dak_tpot $v l7-$R-${v%%=*} --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
    dak_tpot $v l3-$R-${v%%=*} --model llama-3-8b --batch 1,8 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/trim.txt"
echo "total $(( $(date +%s) - t0 )) s"
