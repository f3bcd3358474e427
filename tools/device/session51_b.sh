#!/usr/bin/env bash
# Session 51, second call (on the warm machine of the first: build-gpu kept). Wave quantization of
# the tiered GEMM's decode launches at 40 / 64 tokens (64 x 64 tiles, 3-stage rings): qkv has 192
# tiles on 132 CTAs (rounds of 132 and 60 units), gate_up 344 (132, 132, 80); o_proj and down 128
# units (k_splits 2) in one round. Llama-2-7B TPOT under --gemm tiered with DAK_GEMM_GRID forcing
# whole rounds: qkv_proj=2:128 (384 units, 3 full rounds), mlp_up=3:129 (1032 units, 8 full rounds),
# and o_proj / mlp_down at other splits (1:64, 4:128). Prediction: qkv 2:128 saves ~5 us a layer
# (0.16 ms, ~2.5 % at 64 tokens) if the 60-unit round runs at half the bandwidth, as the timeline's
# 49 us (31 us of floor) suggests; mlp_up 3:129 ~3 us; the o_proj / down variants within 1 %.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_build dak dak_timeline
row() {  # row LABEL GRID
  dak_tpot "DAK_GEMM_GRID=$2" "$1" --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered
}
{
  dak_tpot X=1 tiered --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered
  row qkv2x128 qkv_proj=2:128
  row up3x129 mlp_up=3:129
  row both qkv_proj=2:128,mlp_up=3:129
  row o1x64 o_proj=1:64
  row o4x128 o_proj=4:128
  row down4x128 mlp_down=4:128
  dak_tpot X=1 tiered-r2 --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered
} | tee "$OUT/grid.txt"
grep -E "B_g|floor" /tmp/r-tiered.txt | head -2
left 60 && dak_timeline tiered64-both DAK_GEMM_GRID=qkv_proj=2:128,mlp_up=3:129 --batch 64 --gemm tiered
grep -E "^===|layer period|^ +[0-9]+ " "$OUT/timelines.txt" | head -20
echo "total $(( $(date +%s) - t0 )) s"
