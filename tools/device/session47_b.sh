#!/usr/bin/env bash
# Session 47, the second call on a warm machine (build-gpu left by session46_c.sh, so dak_build only
# checks it): issue 3's Llama-2-7B TPOT (prompt 32, gen 32, batch 1 / 8 / 64; the H200's last reading,
# session 43: 1.247 / 1.274 / 1.675 of the floor; the H100's, session 44: 1.137 / 1.160 / 1.475), then,
# on an H200 only, session45_e.sh's host-spread A/B at Llama-3-8B batch 64 and issue 7's batch-512
# points. Prediction: issue 3 within 1 % of those readings on the same GPU model (the attention's
# split rule does not change 32-64 keys); the H200's host-spread A/B as the H100's (+10 points at
# 4096 / 32768 keys); issue 7's batch-512 points within 1.05 of their floors. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_build dak dak_gpu_tests
for round in 1 2; do
  left 60 && dak_tpot X=1 "l7-r$round" --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32
done | tee "$OUT/decode.txt"
grep -E "B_g|floor" /tmp/r-l7-r1.txt | head -3
echo "$gpu" | grep -q H200 || { echo "not an H200: the rest is session45_e.sh's H200 part"; exit 0; }
for round in 1 2; do
  for sp in 1 0; do
    left 300 || break 2
    DAK_ATTN_HOST_SPREAD=$sp timeout 60 build-gpu/dak bench attention --models llama-3-8b --batch 64 \
      --ctx 512,4096,32768 --ratios 0 2>/dev/null | grep -E "^\| llama.*tiered" | cut -d'|' -f2-4,7,9,13 |
      sed "s/^/spread $sp r$round /"
  done
done | tee "$OUT/spread.txt"
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
