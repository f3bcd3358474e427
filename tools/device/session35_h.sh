#!/usr/bin/env bash
# Session 35, last call: the landing tree's issue-3 decode points (auto, batch 1 / 8 / 64, prompt 32,
# gen 32) and issue 7's Llama-2-7B batch-8 points at 10 / 30 % (gen 8) on whichever GPU comes (asked
# for as nvidia-h200: the issue-3 targets are the H200's). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench.json" > "$OUT/bench.txt" 2> /dev/null
echo "bench rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/bench.txt"
dak_offload_bench l7-b8 200 --model llama-2-7b --batch 8 --offload-ratio 0.1,0.3
echo "total $(( $(date +%s) - t0 )) s"
