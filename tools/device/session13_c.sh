#!/usr/bin/env bash
# Device call 3 of session 13: the attention's fused combine (the last split merges) and RMSNorm
# fused into the tiered GEMMs (o_proj / down residual
# epilogue, qkv / gate_up 1 / rms prologue, norm weights folded into W). Every gpu test, the
# decode timelines and TPOT with and without the fusion (DAK_NO_FUSED_NORM=1), and three offload
# points (the W eviction hint and the fusion run there too). Outputs bundled into few files.
# Carry: third_party.
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
dak_offload_bench l7b8-auto 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench opt1g-auto 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
dak_offload_bench l7b512-auto 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
echo "total $(( $(date +%s) - t0 )) s"
