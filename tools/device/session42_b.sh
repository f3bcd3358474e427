#!/usr/bin/env bash
# (Ran in session 43, call 1. DAK_ATTN_SMEM_MERGE_2CTA is gone since: its behaviour is the default,
# so a rerun compares two identical configurations.)
# Session 42's prepared call for the next session: the new gpu test of the 2-CTA SMEM figure, then
# the SMEM merge up to it for GQA at short contexts (DAK_ATTN_SMEM_MERGE_2CTA=1: Llama-3-8B's 64-key
# plans, rings 104,448 + merge 8,320 bytes, take it) against the default, two interleaved rounds of
# Llama-3-8B batch 1 / 8 (prompt 32, gen 32), Llama-2-7B as the control (its plans already merge in
# SMEM: no change expected); then every gpu test. Prediction: Llama-3-8B batch 1 and 8 (4 splits
# merged in the CTA) 0.5-1 % faster, as Llama-2-7B batch 1 gained 0.85-0.9 % (sessions 41-42), unless
# the G = 4 partial writes' bank conflicts eat it. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gtest 'TieredAttentionKernel.TwoCtasFitAnSmAtTheTwoCtaLimit:TieredAttentionKernel.SplitsMergedInTheCta*' 120
# The switch takes Llama-3-8B's 64-key plans (the bench's context: prompt + gen): "(combine in CTA, SMEM)".
DAK_ATTN_SMEM_MERGE_2CTA=1 build-gpu/dak bench attention --dry-run --models llama-3-8b --batch 1,8 --ctx 64 \
  --ratios 0 --no-balance-point 2>&1 | grep -c "SMEM)" | sed 's/^/plans merging in SMEM with the switch: /'
for round in 1 2; do
  left 120 || break  # both variants of a round, or neither
  for e in X=1 DAK_ATTN_SMEM_MERGE_2CTA=1; do
    dak_tpot "$e" "l3-$e-$round" --model llama-3-8b --batch 1,8 --prompt-len 32 --gen-len 32
  done
done > "$OUT/ab.txt"
if left 110; then  # the control pair, as a unit
  for e in X=1 DAK_ATTN_SMEM_MERGE_2CTA=1; do
    dak_tpot "$e" "l7-$e" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
  done >> "$OUT/ab.txt"
fi
left 100 && dak_gpu_tests 90
echo "--- A/B (TPOT ms [min, max], TPOT / floor)"; cat "$OUT/ab.txt"
echo "total $(( $(date +%s) - t0 )) s"
