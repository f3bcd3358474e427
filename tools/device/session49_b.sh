#!/usr/bin/env bash
# Session 49, second: is the tiered o_proj at 64 tokens slow because of the MLP RMSNorm in its epilogue
# (TieredGemmNormOut)? Call 2's timeline: tiered o_proj 25.2 us at batch 64 against cuBLASLt's 15.4 + a
# 4.3 us norm kernel. Llama-2-7B TPOT, --gemm tiered, with and without DAK_NO_FUSED_NORM=1, batch
# 40 / 64, then the timeline of the unfused one at 64. Prediction: if the epilogue is the cost, the
# unfused o_proj reads ~15-16 us and the step is 1-2 % faster at 64 tokens despite two more norm
# kernels a layer. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_configure "" ""
dak_build dak dak_timeline
{
  dak_tpot X=1 tiered --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered
  dak_tpot DAK_NO_FUSED_NORM=1 tiered-nofuse --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered
  dak_tpot X=1 auto --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32
} | tee "$OUT/decode.txt"
left 60 && dak_timeline tiered64-nofuse DAK_NO_FUSED_NORM=1 --batch 64 --gemm tiered
grep -E "^===|layer period|^ +[0-9]+ " "$OUT/timelines.txt" | head -30
echo "total $(( $(date +%s) - t0 )) s"
