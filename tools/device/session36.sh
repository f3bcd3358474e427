#!/usr/bin/env bash
# Session 36, call 1: the landed tree (session 35's last review commit had not run on a GPU).
# Build; every gpu test; issue 4's `dak bench gemm` and issue 5's `dak bench attention` sweeps with
# their defaults (neither rerun since sessions 20 / 17 while the decode kernels changed); issue 3's
# Llama-2-7B decode at batch 1 / 8 / 64. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
timeout 240 build-gpu/dak bench gemm --json "$OUT/gemm.json" --csv "$OUT/gemm.csv" > "$OUT/gemm.txt" 2> "$OUT/gemm.log"
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/gemm.log" | head -3
timeout 280 build-gpu/dak bench attention --json "$OUT/attention.json" --csv "$OUT/attention.csv" > "$OUT/attention.txt" 2> "$OUT/attention.log"
echo "bench attention rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/attention.log" | head -3
dak_tpot X=1 auto --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32 | tee "$OUT/decode.txt"
grep -E "^(B_g|B_h)|targets|points" "$OUT/gemm.txt" | cut -c1-140
grep -E "^(B_g|B_h)|targets|points|of ideal" "$OUT/attention.txt" | cut -c1-140 | head -8
echo "total $(( $(date +%s) - t0 )) s"
