#!/usr/bin/env bash
# Session 48, the decode attention at 32-64 keys (issue 3's batch-64 step: the CUPTI timeline of
# session48_a's warm machine had tiered_attention 27.5 us a layer against a KV floor of ~15 us at
# Llama-2-7B batch 64, prompt 32, gen 16). Where does a short launch spend its time, and does any
# existing plan switch move it?
#  1. bench/tiered_attention_probe.cu, one launch (events, L2 flushed), plain and with -DDAK_ATT_TRACE
#     (per-warp %globaltimer stamps): Llama-2-7B 64 x 32 / 64 / 512, 8 x 64; Llama-3-8B 64 x 64.
#  2. `dak bench attention` (8-layer stacks) at batch 64, 64 keys, x = 0, under the plan switches:
#     HBM load path (cp.async / bulk / staged), 2 and 4 splits, waves, HBM ring depth 2 / 4 / 6.
#  3. Llama-2-7B TPOT at batch 64 (prompt 32, gen 32) under the switches that moved (2) by > 3 %.
# Prediction: the trace shows a fixed cost of ~8-10 us per launch (start spread + first step +
# the last round's tail), so no ring or path switch moves 64 x 64 by more than 5 %; 2 splits lose
# (4 rounds of 2 steps). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_build dak
dak_attention_probe trace -DDAK_ATT_TRACE &
dak_attention_probe plain "" &
wait; echo "probes $(( $(date +%s) - t0 )) s"
for sh in "64 32 32 128 32" "64 32 32 128 64" "64 32 32 128 512" "8 32 32 128 64" "64 32 8 128 64"; do
  build-gpu/ap-plain $sh | grep "^B " ; build-gpu/ap-trace $sh | grep trace
done 2>&1 | tee "$OUT/probe.txt"
common=(--models llama-2-7b,llama-3-8b --batch 64 --ctx 32,64 --ratios 0 --no-balance-point)
for cfg in "default X=1" "bulk DAK_ATTN_HBM_COPY=bulk" "staged DAK_ATTN_HBM_COPY=staged" \
           "cpasync DAK_ATTN_HBM_COPY=cp.async" "split2 DAK_ATTN_SPLITS=2" "split4 DAK_ATTN_SPLITS=4" \
           "waves DAK_ATTN_HBM_WAVES=1"; do
  set -- $cfg; left 120 || break
  dak_att_rows "$1" "$2" "${common[@]}" | grep -v "^$1 B_"
done | tee "$OUT/switches.txt"
for st in 2 4 6; do left 120 || break; dak_att_rows "st$st" X=1 "${common[@]}" --hbm-stages $st | grep -v "B_"; done |
  tee -a "$OUT/switches.txt"
for cfg in "default X=1" "split2 DAK_ATTN_SPLITS=2" "bulk DAK_ATTN_HBM_COPY=bulk" "staged DAK_ATTN_HBM_COPY=staged"; do
  set -- $cfg; left 40 || break
  dak_tpot "$2" "b64-$1" --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32
done | tee "$OUT/tpot.txt"
echo "total $(( $(date +%s) - t0 )) s"
