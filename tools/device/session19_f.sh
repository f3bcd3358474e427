#!/usr/bin/env bash
# Device call 6 of session 19: issue 7's batch-512 points on the landing tree (the whole-tile
# epilogue, the refitted compute-tile rule): Llama-2-7B batch 512 at 10 % in modes auto / prefetch /
# direct, and at 30 % (auto); OPT-6.7B batch 512 at 10 % (auto). Prompt 32, gen 8. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for m in auto prefetch direct; do
  dak_offload_bench l7b512-$m 100 --model llama-2-7b --batch 512 --offload-ratio 0.1 --offload $m
done
dak_offload_bench l7b512-30 100 --model llama-2-7b --batch 512 --offload-ratio 0.3
dak_offload_bench o67b512 100 --model opt-6.7b --batch 512 --offload-ratio 0.1
echo "--- summary"
grep -E "^=== |^\| 512 \| 0\.[13]" "$OUT/offload.txt" | cut -c1-160
echo "total $(( $(date +%s) - t0 )) s"
