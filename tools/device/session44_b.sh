#!/usr/bin/env bash
# Session 44, call 2 (issue 7, H200 only): the batch-512 half of the matrix with the current code.
# Sessions 21 / 38 / 43 ran parts of it on older trees; OPT-30B at 60 % never ran. Auto at 0 / 10 /
# 30 / 60 % for OPT-30B, OPT-6.7B and Llama-2-7B (10 / 30 % of Llama-2-7B ran in session 43), then
# prefetch and direct at 10 % for the two OPT models (the modes' order at batch 512). Prompt 32,
# gen 8, 5 repeats. Predictions: every offloaded auto point within 1.05 x its floor and 10 % of the
# planner; 0 % is compute-bound (judged against the prediction only). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
dak_build dak
pt() {  # pt MODEL RATIOS MODE SECONDS
  left "$4" && dak_bench_point "h200-$1-b512-$3-${2//,/_}" X=1 "$4" --model "$1" --batch 512 --prompt-len 32 --gen-len 8 \
    --offload-ratio "$2" --offload "$3"
}
pt opt-30b 0.6 auto 150
pt opt-30b 0,0.1,0.3 auto 120
pt opt-6.7b 0,0.1,0.3,0.6 auto 90
pt llama-2-7b 0,0.6 auto 60
pt opt-6.7b 0.1 prefetch 40
pt opt-6.7b 0.1 direct 40
pt opt-30b 0.1 prefetch 60
pt opt-30b 0.1 direct 60
grep -h "notice" /tmp/s-*.log 2>/dev/null | sort | uniq -c | cut -c1-240
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
