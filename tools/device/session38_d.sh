#!/usr/bin/env bash
# Session 38, call 4: GPU runs without --profile measure the host link at start and plan with the
# nearest compiled-in H100 profile again (auto now refines every variant, so h100-fast-link's auto
# plans measured as fast as h100-default's on a fast host in call 1). Issue 7's batch-8 points at
# 10 / 30 % in every mode, no --profile (the selection), for Llama-2-7B and OPT-6.7B; h100-default's
# auto as the same-call baseline; one `dak generate` with a budget (its notice). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  # An H200 (none lent since session 29): the refine-all A/B there (session 23 measured the plan it
  # changes to 0.5 % slower), then issue 3's decode at batch 1 / 8 / 64.
  for model in llama-2-7b opt-6.7b; do
    for sw in X=1 DAK_PLAN_REFINE_ALL=0; do
      left 60 && dak_bench_point $model-h200-${sw%%=*} $sw 90 --model $model --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3
    done
  done
  left 60 && dak_tpot X=1 decode --model llama-2-7b --batch 1,8,64 --gen-len 32 | tee "$OUT/decode.txt"
  dak_merge_points > /dev/null
  dak_point_table
  echo "total $(( $(date +%s) - t0 )) s"
  exit 0
fi
for model in llama-2-7b opt-6.7b; do
  for m in auto direct h100-default zero-copy prefetch; do  # most needed first (the call may be short)
    left 60 || { echo "skip $model $m (time)"; continue; }
    if [ $m = h100-default ]; then  # the same-call baseline: the profile used before the selection
      dak_bench_point $model-h100default-auto X=1 90 --model $model --batch 8 --prompt-len 32 --gen-len 8 \
        --offload-ratio 0.1,0.3 --profile h100-default
    else
      dak_bench_point $model-sel-$m X=1 90 --model $model --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3 --offload $m
    fi
  done
done
left 40 && timeout 60 build-gpu/dak generate --model llama-2-7b --random-weights --gpu-memory 11GiB --prompt "The capital of France is" \
  --max-new-tokens 8 > /tmp/gen.txt 2> /tmp/gen.log; echo "generate rc=$?"; grep -E "notice|error|TPOT|tok/s" /tmp/gen.log | cut -c1-240
grep -h "notice" /tmp/s-*.log | sort | uniq -c | cut -c1-240
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
