#!/usr/bin/env bash
# Session 34, call 9 (the last of four back-to-back calls; carry: models/.p3, after call 6's build
# and calls 7 and 8's models/.p1 and .p2): the default model on the GPU and the CPU (tools/device/model_check.sh:
# README's first command, with offload, perplexity on both, the SmolLM2 tests), then issue 7's
# Llama-2-7B batch-8 points (prompt 32, gen 8: auto at 10 / 30 %, each mode at 10 %) and issue 3's
# decode points (batch 1 / 8 / 64, prompt 32, gen 32); a short table last.
set -uo pipefail
source tools/device/common.sh
bash tools/device/model_check.sh > "$OUT/model-check.txt" 2>&1
tail -n 8 "$OUT/model-check.txt"
dak_bench_point l7-b8-auto X=1 120 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3
for m in direct prefetch zero-copy; do
  dak_bench_point l7-b8-10-$m X=1 90 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload $m
done
dak_merge_points
dak_point_table
timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 2> /dev/null > "$OUT/bench.txt"
echo; echo "| issue 3 point | TPOT ms | TPOT / floor |"; echo "|---|---:|---:|"
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/bench.txt" | awk -F'|' '{print "| batch" $2 "|" $7 "|" $10 "|"}'
echo "total $(( $(date +%s) - t0 )) s"
