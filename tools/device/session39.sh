#!/usr/bin/env bash
# Session 39, call 1 (ran on commit c6159ef; the tail split was then rejected and removed, its code in
# docs/attempts/session39-hbm-tail-split.patch, so DAK_GEMM_TAIL_SPLIT no longer exists): the HBM tail split (TieredGemmSchedule::hbm_tail_split, k_chunks 2 by the tail
# rule). The tiered GEMM tests first (the kernel changed: chunked accumulation on every 64-row tile,
# per-unit split counts), then Llama-2-7B decode at batch 1 / 8 / 64 on the tiered GEMM with the
# tail split on and off (DAK_GEMM_TAIL_SPLIT=0), two interleaved rounds, then every gpu test.
# Prediction: qkv (192 m-tiles on 132 SMs) ends its 60-unit second round as 120 half units: batch 64
# -2 to -4 % (its tail was ~15 us a layer), batch 1 / 8 -1 to -2 %. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gtest 'TieredGemm.*' 200
for round in 1 2; do
  for sw in X=1 DAK_GEMM_TAIL_SPLIT=0; do
    left 100 && dak_tpot $sw "r$round-${sw%%=*}" --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32 --gemm tiered
  done
done | tee "$OUT/decode.txt"
left 150 && dak_gpu_tests 100 2
echo "total $(( $(date +%s) - t0 )) s"
