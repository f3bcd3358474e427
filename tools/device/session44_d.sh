#!/usr/bin/env bash
# Session 44, last call: the HBM side of the tiered attention takes every CTA slot the host CTAs
# leave (DAK_ATTN_HBM_FILL, default on). Its gpu tests, then the balance points with one host
# sequence of 64 (x = 1/64; on an H100 that is x*), filled against the rule before, two rounds.
# Prediction (H100): Llama-2-7B 64 x 4096 80.5 -> ~93 %, 64 x 512 76 -> ~88 %; Llama-3-8B cells
# (one round either way) unchanged. Run with DAK_CALL_LIMIT=200. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_build dak dak_gpu_tests
dak_gtest 'TieredAttention*' 60
for round in 1 2; do
  for fill in 1 0; do
    left 25 || break 2
    DAK_ATTN_HBM_FILL=$fill timeout 40 build-gpu/dak bench attention --models llama-2-7b,llama-3-8b --batch 64 \
      --ctx 512,4096 --ratios 1/64 --no-balance-point --max-host-gib 4 2>/dev/null |
      grep -E "^\| (llama|opt).*tiered" | cut -d'|' -f2-4,7,9,13,15 | sed "s/^/fill $fill round $round /"
  done
done | tee "$OUT/fill.txt"
echo "total $(( $(date +%s) - t0 )) s"
