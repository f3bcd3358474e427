#!/usr/bin/env bash
# Session 46 (issue 5): does the HBM side's tail come from the fixed stride of items per persistent
# warp? Session 45's trace (H100) had the HBM warps of one round of equal items end 33 / 45 / 53 us
# (min / p50 / max, Llama-3-8B 64 x 512 at x*) and OPT-30B 64 x 512's 6.8 rounds 176 / 294 / 319.
# A/B switches (planner only, the kernel is unchanged):
#   DAK_ATTN_HBM_WAVES=1  one HBM CTA per 4 items: the block scheduler hands items to SM slots as
#                         they free up (dynamic balance, no counters) at the cost of a CTA start each;
#   DAK_ATTN_SPLITS=4     4 splits (finer items, more of them to balance, one more merge level).
# Prediction (H100): x = 0 and x* of the 64 x 512 cells +3 to +8 points with waves (the tail is
# ~1.1-1.2 x the median end), more with 4 splits where one round is all there is (Llama-3-8B);
# long-context cells (1 or 2 rounds of long items) within +-2. First the tiered attention's gpu
# tests under DAK_ATTN_HBM_WAVES=1 (bits and reference with CTAs in waves). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
DAK_ATTN_HBM_WAVES=1 dak_gtest 'TieredAttention*' 150
att() {  # att LABEL ENV ARGS...: the tiered rows (model, batch, ctx, b_h, time, of ideal)
  local label=$1 envs=$2; shift 2
  env $envs timeout 90 build-gpu/dak bench attention --hbm-runs 5 "$@" 2>/dev/null |
    grep -E "^\| (llama|opt).*tiered" | cut -d'|' -f2-4,7,9,13,15 | sed "s/^/$label /"
}
for round in 1 2; do
  for cfg in "base X=1" "waves DAK_ATTN_HBM_WAVES=1" "split4 DAK_ATTN_SPLITS=4" \
             "waves+split4 DAK_ATTN_HBM_WAVES=1 DAK_ATTN_SPLITS=4"; do
    set -- $cfg; label=$1; shift; envs="$*"
    left 120 || break 2
    att "$label r$round" "$envs" --models llama-3-8b,opt-30b --batch 64 --ctx 512 --ratios 0,1/8
    att "$label r$round" "$envs" --models llama-3-8b,llama-2-7b --batch 64 --ctx 4096 --ratios 0 --no-balance-point
    att "$label r$round" "$envs" --models llama-3-8b --batch 8 --ctx 512,4096 --ratios 0 --no-balance-point
    att "$label r$round" "$envs" --models llama-2-7b --batch 512 --ctx 512 --ratios 0,1/8 --no-balance-point
  done
done | tee "$OUT/waves.txt"
echo "total $(( $(date +%s) - t0 )) s"
