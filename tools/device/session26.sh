#!/usr/bin/env bash
# Device call 1 of session 26 (main as landed by session 25): build, every gpu test, Llama-2-7B
# decode at batch 1 / 8 / 64 (the issue-3 targets) and the issue-7 points Llama-2-7B batch 8 at
# 10 / 30 % (auto). Carries the first model part for tools/device/model_check.sh (call 3).
# Carry: third_party, models/.p1.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench-l7-main.json" > "$OUT/l7-main.txt" 2>/dev/null; echo "decode rc=$?"
dak_bundle_decode
for r in 0.1 0.3; do
  dak_bench_point l7-b8-$r X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio $r
done
dak_merge_points
echo "--- decode, prompt 32, gen 32 (TPOT ms, floor, ratio)"
grep -hE "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | awk '/^===/{n=$2} /^\|/{split($0,c,"|"); print n, "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}'
dak_point_table
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
