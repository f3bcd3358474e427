#!/usr/bin/env bash
# Session 35, call 4: k-splits of the decode linears where the attention holds SMs (DAK_GEMM_SPLITS,
# an experiment switch: "MxK@BN=S" forces S k-splits on the 64-row tile of bn BN). At batch 8 the
# attention runs 64 CTAs of ~104 KiB SMEM: o_proj's 128 split units find only 68 free SMs for their
# early W loads, one unsplit unit per m-tile (64 CTAs) would all start early. Llama-2-7B decode,
# prompt 32, gen 32, two interleaved rounds: batch 1 / 8 (bn 8) and batch 64 `--gemm tiered` (bn 64).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
V8=("X=1" "DAK_GEMM_SPLITS=4096x4096@8=1" "DAK_GEMM_SPLITS=4096x11008@8=1"
    "DAK_GEMM_SPLITS=4096x4096@8=1,4096x11008@8=1" "DAK_GEMM_SPLITS=4096x4096@8=4")
V64=("X=1" "DAK_GEMM_SPLITS=12288x4096@64=2" "DAK_GEMM_SPLITS=4096x4096@64=1" "DAK_GEMM_SPLITS=4096x4096@64=4"
     "DAK_GEMM_SPLITS=4096x11008@64=1" "DAK_GEMM_SPLITS=4096x11008@64=4")
for r in 1 2; do
  for v in "${V8[@]}"; do dak_tpot "$v" "r$r:$v" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32; done
  for v in "${V64[@]}"; do dak_tpot "$v" "r$r:$v" --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32 --gemm tiered; done
done | tee "$OUT/splits.txt"
DAK_GEMM_SPLITS="4096x4096@8=1,oops" timeout 30 build-gpu/dak plan --model llama-2-7b --random-weights --batch 8 2>&1 | grep -i notice | head -2
echo "total $(( $(date +%s) - t0 )) s"
