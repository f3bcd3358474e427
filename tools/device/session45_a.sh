#!/usr/bin/env bash
# Session 45, call 1: every gpu test on the newest tree (0648670: the attention override count, the
# shared tiered_attention_hbm_ctas, --models dedupe had not run on a GPU). Then, on an H200, the
# batch-512 half of issue 7's matrix (session44_b.sh's points); on an H100, the full `dak bench
# attention` sweep with the filled HBM side (issue 5; session 44's full sweep predates the fill).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gpu_tests 90 2
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  pt() {  # pt MODEL RATIOS MODE SECONDS
    left "$4" && dak_bench_point "h200-$1-b512-$3-${2//,/_}" X=1 "$4" --model "$1" --batch 512 --prompt-len 32 \
      --gen-len 8 --offload-ratio "$2" --offload "$3"
  }
  pt opt-30b 0.6 auto 150
  pt opt-6.7b 0,0.1,0.3,0.6 auto 90
  pt llama-2-7b 0,0.6 auto 60
  pt opt-30b 0,0.1,0.3 auto 120
  dak_merge_points > /dev/null
  dak_point_table
else
  left 200 && timeout 200 build-gpu/dak bench attention > "$OUT/attention.txt" 2>&1
  echo "attention rc=$?"; grep -E "^\| (llama|opt).*tiered" "$OUT/attention.txt" | cut -d'|' -f2-4,9,13,15 | head -80
  grep -iE "cells|met|summary" "$OUT/attention.txt" | tail -8
fi
echo "total $(( $(date +%s) - t0 )) s"
