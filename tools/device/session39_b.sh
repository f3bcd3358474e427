#!/usr/bin/env bash
# Session 39, call 2 (chained on the warm machine of call 1, build-gpu kept): session 38's
# integration run of the H100 profile selection (tools/device/session38_d.sh: issue 7's batch-8
# points at 10 / 30 % in every mode without --profile, h100-default's auto as the same-call
# baseline, one `dak generate` with a budget), now on the tail-split tree; then, if time is left,
# the CUPTI timeline of a batch-64 layer with the tail split on and off (qkv's increment).
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash tools/device/session38_d.sh  # its H200 branch
  exit 0
fi
for model in llama-2-7b opt-6.7b; do
  for m in auto direct h100-default zero-copy prefetch; do
    left 100 || { echo "skip $model $m (time)"; continue; }
    if [ $m = h100-default ]; then
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
for sw in X=1 DAK_GEMM_TAIL_SPLIT=0; do
  left 70 && dak_timeline "b64-${sw%%=*}" $sw --batch 64 --gemm tiered
done
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
