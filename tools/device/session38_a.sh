#!/usr/bin/env bash
# Session 38, call 1 (prepared in session 37): the A/B of DAK_PLAN_REFINE_ALL=1 (every auto variant
# refined on the copy pipeline before the comparison). On an H100 with the default profile and with
# --profile h100-fast-link, on an H200 with its default: Llama-2-7B and OPT-6.7B at batch 8, 10 / 30 %,
# OPT-30B at 10 %, auto, with and without the switch (plans that do not change are measured anyway:
# they are the same-call baseline). Then session37_d's alternating --warmup-ms A/B if time is left.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
prof=(); nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100 && prof=(--profile h100-fast-link)
for p in default alt; do
  [ $p = alt ] && [ ${#prof[@]} -eq 0 ] && continue
  extra=(); [ $p = alt ] && extra=("${prof[@]}")
  for model in llama-2-7b opt-6.7b opt-30b; do
    r=0.1,0.3; [ $model = opt-30b ] && r=0.1
    for sw in X=1 DAK_PLAN_REFINE_ALL=1; do
      left 60 || continue
      dak_bench_point $model-$p-${sw%%=*} $sw 90 --model $model --batch 8 --prompt-len 32 --gen-len 8 \
        --offload-ratio $r "${extra[@]}"
    done
  done
done
dak_merge_points > /dev/null
dak_point_table
left 120 && bash tools/device/session37_d.sh 2>&1 | tail -20
echo "total $(( $(date +%s) - t0 )) s"
