#!/usr/bin/env bash
# Session 51, first call: every gpu test on the tree of session 50 (its changes are CPU-side, but they
# touch loading, plans and the CLI that the gpu tests drive), then the A/B session 49 left: the tiered
# o_proj at 64 tokens with the MLP RMSNorm in its epilogue (TieredGemmNormOut) took 25.2 us against
# cuBLASLt's 15.4 + 4.3. Llama-2-7B TPOT, --gemm tiered, with and without DAK_NO_FUSED_NORM=1, batch
# 40 / 64, auto beside them; then the timeline of the unfused tiered step at 64. Prediction: if the
# epilogue is the cost, the unfused o_proj reads ~15-16 us and the step is 1-2 % faster at 64 tokens
# despite two more norm kernels a layer. DAK_NORM_OUT_KERNEL=1 keeps the norm-in epilogues (qkv,
# gate_up) and runs rms_norm_out after a plain o_proj / down: prediction ~1 % faster than fused at 64. On an H200 (none since session 43) the owed session48_c.sh
# rows follow instead. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_configure "" ""
dak_build dak dak_gpu_tests dak_timeline
dak_gpu_tests 90 4
if echo "$gpu" | grep -q H200; then
  DAK_CALL_LIMIT=$(( limit - ($(date +%s) - t0) )) exec bash tools/device/session48_c.sh
fi
{
  dak_tpot X=1 tiered --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered
  dak_tpot DAK_NO_FUSED_NORM=1 tiered-nofuse --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered
  dak_tpot DAK_NORM_OUT_KERNEL=1 tiered-normkernel --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 \
    --gemm tiered
  dak_tpot X=1 auto --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32
} | tee "$OUT/decode.txt"
grep -E "B_g|floor" /tmp/r-auto.txt | head -2
left 60 && dak_timeline tiered64-nofuse DAK_NO_FUSED_NORM=1 --batch 64 --gemm tiered
left 60 && dak_timeline tiered64-normkernel DAK_NORM_OUT_KERNEL=1 --batch 64 --gemm tiered
grep -E "^===|layer period|^ +[0-9]+ " "$OUT/timelines.txt" | head -40
echo "total $(( $(date +%s) - t0 )) s"
