#!/usr/bin/env bash
# Session 38, call 2: issue 3's batch 64 with o_proj (and down) on cuBLASLt while qkv / gate_up stay
# on the tiered GEMM with their fused norms (DAK_GEMM_CUBLAS_LINEARS, an A/B switch). Session 35's
# timeline at batch 64 (H100): tiered o_proj + norm-out 25.34 us a layer against cuBLASLt 15.74 +
# norm 4.29; down 38.66 against 36.55 + split-K reduce 2.62 (+ norm). Prediction: `--gemm tiered`
# with o_proj on cuBLASLt 5 us a layer faster, -0.17 ms a step (-2.5 %); with down too, no better.
# Llama-2-7B, prompt 32, gen 32, batch 40 / 64, two rounds alternating; then one timeline each.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
for round in 1 2; do
  dak_tpot X=1 tiered-r$round --model llama-2-7b --batch 40,64 --gen-len 32 --gemm tiered
  dak_tpot DAK_GEMM_CUBLAS_LINEARS=o_proj tiered-o-r$round --model llama-2-7b --batch 40,64 --gen-len 32 --gemm tiered
  dak_tpot DAK_GEMM_CUBLAS_LINEARS=o_proj,down tiered-od-r$round --model llama-2-7b --batch 40,64 --gen-len 32 --gemm tiered
  dak_tpot X=1 auto-r$round --model llama-2-7b --batch 40,64 --gen-len 32
done 2>&1 | tee "$OUT/tpot.txt"
echo "($(( $(date +%s) - t0 )) s)"
dak_timeline b64-tiered X=1 --batch 64 --gemm tiered
dak_timeline b64-tiered-o DAK_GEMM_CUBLAS_LINEARS=o_proj --batch 64 --gemm tiered
grep -E "qkv|attention|o_proj|gate_up|act|down|norm|layer|kernel" "$OUT/timelines.txt" | head -60
echo "total $(( $(date +%s) - t0 )) s"
