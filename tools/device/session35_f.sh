#!/usr/bin/env bash
# Session 35, last call (after session35_e.sh and the model parts, on the same warm machine, whose
# build-gpu it reuses): issue 3's decode points (auto, batch 1 / 8 / 64, with the per-operator
# breakdown) and issue 7's Llama-2-7B batch-8 points at 10 / 30 % offload (auto, gen 8).
set -uo pipefail
source tools/device/common.sh
timeout 150 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench.json" > "$OUT/bench.txt" 2> /dev/null
echo "bench rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/bench.txt"
dak_offload_bench l7-b8 200 --model llama-2-7b --batch 8 --offload-ratio 0.1,0.3
echo "total $(( $(date +%s) - t0 )) s"
