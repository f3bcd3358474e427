#!/usr/bin/env bash
# Session 39, call 5 (about 200 s of device time left): on an H100, session 38's integration run of
# the H100 profile selection, shortened (Llama-2-7B batch 8 at 10 / 30 %: auto and direct without
# --profile, h100-default's auto as the same-call baseline, one `dak generate` with a budget and its
# notice); on an H200, issue 7's Llama-2-7B batch-512 points at 10 / 30 % (auto, direct).
# Run with DAK_CALL_LIMIT=190. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for m in auto direct; do
    left 40 && dak_bench_point h200-llama-2-7b-b512-$m X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 \
      --offload-ratio 0.1,0.3 --offload $m
  done
else
  left 40 && dak_bench_point llama-2-7b-sel-auto X=1 45 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3
  left 40 && dak_bench_point llama-2-7b-h100default-auto X=1 45 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 \
    --offload-ratio 0.1,0.3 --profile h100-default
  left 40 && dak_bench_point llama-2-7b-sel-direct X=1 45 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 \
    --offload-ratio 0.1,0.3 --offload direct
  left 25 && timeout 40 build-gpu/dak generate --model llama-2-7b --random-weights --gpu-memory 11GiB \
    --prompt-ids 1,450,7483,310,3444,338 --max-new-tokens 8 > /tmp/gen.txt 2> /tmp/gen.log; echo "generate rc=$?"
  grep -E "notice|error|TPOT|tok/s" /tmp/gen.log | cut -c1-240
fi
grep -h "notice" /tmp/s-*.log | sort | uniq -c | cut -c1-240
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
