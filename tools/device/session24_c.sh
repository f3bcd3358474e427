#!/usr/bin/env bash
# Device call 3 of session 24: early W stages with the fused norm (the GEMM after o_proj / down now
# follows a GEMM, not a norm kernel), and offload points fused vs DAK_NO_FUSED_NORM=1 in one call.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_l7_decode fused X=1 auto
dak_l7_decode early4 DAK_EARLY_W=qkv_proj=4,mlp_up=4 auto
dak_l7_decode early5 DAK_EARLY_W=qkv_proj=5,mlp_up=5 auto
dak_l7_decode early2 DAK_EARLY_W=qkv_proj=2,mlp_up=2 auto
dak_l7_decode unfused DAK_NO_FUSED_NORM=1 auto
dak_l7_decode fused-b X=1 auto
dak_bundle_decode
dak_bench_point l7-b8-10 X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_bench_point l7-b8-10-unfused DAK_NO_FUSED_NORM=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_bench_point l7-b8-30-prefetch X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.3 --offload prefetch
dak_bench_point l7-b8-30-prefetch-unfused DAK_NO_FUSED_NORM=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.3 --offload prefetch
dak_bench_point l3-b1-30 X=1 60 --model llama-3-8b --batch 1 --prompt-len 32 --gen-len 8 --offload-ratio 0.3
dak_bench_point l3-b1-30-unfused DAK_NO_FUSED_NORM=1 60 --model llama-3-8b --batch 1 --prompt-len 32 --gen-len 8 --offload-ratio 0.3
dak_merge_points
echo "--- decode, prompt 32, gen 32 (TPOT ms, floor, ratio)"
grep -hE "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | awk '/^===/{n=$2} /^\|/{split($0,c,"|"); print n, "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}'
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
