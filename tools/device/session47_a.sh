#!/usr/bin/env bash
# Session 47: the landing check cut to what a short device budget allows (after nine refused starts):
# every gpu test on the tree with session 46's 2 -> 4 split step (never run on a GPU), then the
# split rule against DAK_ATTN_SPLIT_RULE=two at x = 0 on the cells it changes (Llama-3-8B 64 x 512,
# OPT-30B 8 / 64 x 512), two interleaved rounds, then the full sweep if time is left. Prediction
# (H100, session 46's split4 column): every gpu test passes; Llama-3-8B 64 x 512 76 -> 80 %, OPT-30B
# 8 x 512 77 -> 84 %, OPT-30B 64 x 512 87 -> 89 %. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gpu_tests 90 2
for round in 1 2; do
  for cfg in "two DAK_ATTN_SPLIT_RULE=two" "rule X=1"; do
    set -- $cfg; label=$1; shift
    left 25 || break 2
    dak_att_rows "$label r$round" "$*" --models llama-3-8b,opt-30b --batch 8,64 --ctx 512 --ratios 0 --max-kv-gib 60
  done
done | tee "$OUT/split-rule.txt"
left 170 && { timeout 200 build-gpu/dak bench attention > "$OUT/attention.txt" 2>&1; echo "attention rc=$?";
  grep -E "^targets|^B_" "$OUT/attention.txt"; }
echo "total $(( $(date +%s) - t0 )) s"
