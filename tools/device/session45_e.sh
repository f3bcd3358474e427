#!/usr/bin/env bash
# Prepared in session 45 for the next H200 (on an H100 it runs only the first part): the host CTAs
# of 2 or 1 warps (session 45, default; measured only on an H100: Llama-3-8B's balance points 83 ->
# 93 % at 4096 keys, 86 -> 97 % at 32768) against DAK_ATTN_HOST_SPREAD=0, two interleaved rounds.
# Prediction for the H200 (B_g 4.7 TB/s makes x* = 1.08 %, so b_h = 1 of 64 is past the balance
# point and the host side binds harder): the same or larger gains. Then, on an H200, issue 7's
# batch-512 matrix (tools/device/session44_b.sh's points; OPT-30B at 60 % read 1.006 of its floor
# on an H100 in session 45). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gtest 'TieredAttention*' 200
for round in 1 2; do
  for sp in 1 0; do
    left 300 || break 2
    DAK_ATTN_HOST_SPREAD=$sp timeout 60 build-gpu/dak bench attention --models llama-3-8b --batch 64 \
      --ctx 512,4096,32768 --ratios 0 2>/dev/null | grep -E "^\| llama.*tiered" | cut -d'|' -f2-4,7,9,13 |
      sed "s/^/spread $sp r$round /"
  done
done | tee "$OUT/spread.txt"
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: issue 7 not run"; exit 0; }
pt() {  # pt MODEL RATIOS MODE SECONDS
  left "$4" && dak_bench_point "h200-$1-b512-$3-${2//,/_}" X=1 "$4" --model "$1" --batch 512 --prompt-len 32 \
    --gen-len 8 --offload-ratio "$2" --offload "$3"
}
pt opt-30b 0.6 auto 150
pt opt-6.7b 0,0.1,0.3,0.6 auto 90
pt llama-2-7b 0,0.6 auto 60
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
