#!/usr/bin/env bash
# Device call 8 of session 14: RMSNorm fused into the tiered GEMMs again (session 13's patch:
# norm weight folded into qkv / gate_up, residual add in o_proj / down's epilogue, 1 / rms in qkv /
# gate_up's), the statistic now summed by the producer warpgroup's second warp from the x stages
# in SMEM (off the consumers' path). Every gpu test; decode TPOT fused vs DAK_NO_FUSED_NORM=1 in
# the same call; timelines; offload points. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_timeline b1-fused X=1 --batch 1
dak_timeline b8-fused X=1 --batch 8
dak_timeline b1-unfused DAK_NO_FUSED_NORM=1 --batch 1
dak_l7_decode fused X=1 auto
dak_l7_decode unfused DAK_NO_FUSED_NORM=1 auto
dak_l7_decode fused2 X=1 auto
dak_l7_decode unfused2 DAK_NO_FUSED_NORM=1 auto
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench l7b512 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
