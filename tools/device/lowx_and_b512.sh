#!/usr/bin/env bash
# Device call (session 6): tools/device/gemm_lowx_probe.sh (why the direct path's host rows crawl
# at N = 512 with few host rows), then the issue-7 check of the planner's staged compute-path
# linears: Llama-2-7B batch 512 at offload 0 / 10 % under --offload auto (predicted 42-44 ms at
# 10 %, was 47.30 ms with direct linears). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu
bash tools/device/gemm_lowx_probe.sh
timeout 170 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 512 --prompt-len 32 \
  --gen-len 8 --offload-ratio 0,0.1 --json "$OUT/bench-l7-b512-staged.json" > "$OUT/l7.txt" 2> "$OUT/l7.log"
echo "bench l7-b512 rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "^B_h =|^B_g|floor" "$OUT/l7.txt" | head -5 | cut -c1-120
grep -E "^\|" "$OUT/l7.txt" | head -12
grep -iE "error|fix" "$OUT/l7.log" | head -4
rm -f "$OUT/l7.log"
echo "total $(( $(date +%s) - t0 )) s"
