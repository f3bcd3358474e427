#!/usr/bin/env bash
# Session 41, the short form of call 2 (little device time left after refused starts): a normal
# build of dak and dak_gpu_tests, every gpu test on the tree with the SMEM merge on by default and the
# L2 prefetch removed, then one interleaved round of the merge A/B on Llama-2-7B batch 1 / 8
# (prompt 32, gen 32); then, time permitting, the new DAK_GEMM_TRACE=o_proj. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gpu_tests 90
for e in X=1 DAK_ATTN_SMEM_MERGE=0 X=1 DAK_ATTN_SMEM_MERGE=0; do
  left 20 || break
  dak_tpot $e "l7-$e" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
done | tee "$OUT/ab.txt"
# New diagnostic (no kernel change): the last layer's per-CTA trace of one GEMM in the decode graph,
# o_proj first (the window after the attention), then the others while time is left.
for op in o_proj qkv_proj mlp_up mlp_down; do
  left 25 || break
  DAK_GEMM_TRACE=$op timeout 40 build-gpu/dak bench --random-weights --repeats 3 --model llama-2-7b \
    --batch 1,8 --prompt-len 32 --gen-len 32 2>&1 >/dev/null | grep -E "gemm trace|error"
done | tee "$OUT/gemm-trace.txt"
echo "total $(( $(date +%s) - t0 )) s"
