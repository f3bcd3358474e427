#!/usr/bin/env bash
# Session 41, call 3, for an H200 (issue 7's points not re-run there with the current code): Llama-2-7B
# batch 512 at 10 / 30 % (auto, direct; prompt 32, gen 8), then Llama-2-70B bf16 batch 8 with
# --gpu-memory 100GiB (auto) and without offload, then issue 3's Llama-2-7B batch 1 / 8 / 64 decode
# (prompt 32, gen 32) while time is left. On an H100 only issue 3's decode rows run (70B needs the
# H200's HBM for its baseline). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_build dak
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for m in auto direct; do
    left 200 && dak_bench_point h200-llama-2-7b-b512-$m X=1 70 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 \
      --offload-ratio 0.1,0.3 --offload $m
  done
  left 150 && dak_bench_point h200-llama-2-70b-b8-100GiB X=1 150 --model llama-2-70b --batch 8 --prompt-len 32 --gen-len 4 \
    --gpu-memory 100GiB
  left 120 && dak_bench_point h200-llama-2-70b-b8-none X=1 110 --model llama-2-70b --batch 8 --prompt-len 32 --gen-len 4 \
    --offload none
fi
left 45 && dak_tpot X=1 l7 --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32 | tee "$OUT/decode.txt"
grep -h "notice" /tmp/s-*.log 2>/dev/null | sort | uniq -c | cut -c1-240
dak_merge_points > /dev/null
dak_point_table
cat "$OUT/decode.txt"
echo "total $(( $(date +%s) - t0 )) s"
