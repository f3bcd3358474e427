#!/usr/bin/env bash
# Session 43's prepared A/B (issue 5): does a KV block stride off the power of two help the tiered
# attention's HBM side? On the H200 (session 43, calls 5-7) the x = 0 cells at power-of-two contexts
# read 2-4 points of ideal below their neighbours (Llama-3-8B batch 64 at 4096 keys 86.5 % against
# 88.4 / 89.6 % at 4000 / 4160). DAK_BENCH_KV_PAD_ROWS=N gives every (sequence, kv head) block N more
# positions (the sequences keep their keys). Prediction on an H200: pad 8 or 64 lifts those cells by
# 2-3 points (to ~89 %); no change on Llama-2-7B batch 64 at 4096 (95 %). Two interleaved rounds.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_build dak
for round in 1 2; do
  for pad in 0 8 64; do
    left 40 || break 2
    for c in "llama-3-8b --batch 64 --ctx 4096" "llama-3-8b --batch 512 --ctx 512" "llama-2-7b --batch 64 --ctx 4096" \
             "llama-2-7b --batch 16 --ctx 4096"; do
      DAK_BENCH_KV_PAD_ROWS=$pad timeout 40 build-gpu/dak bench attention --models $c --ratios 0 --no-balance-point \
        2>/dev/null | grep -E "^\| (llama|opt).*tiered" | cut -d'|' -f2-4,9,13,15 | sed "s/^/pad $pad round $round /"
    done
  done
done | tee "$OUT/pad.txt"
echo "total $(( $(date +%s) - t0 )) s"
