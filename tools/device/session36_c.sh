#!/usr/bin/env bash
# Session 36, call 3 (not run in session 36: no device time left; run it first next session):
# call 2's chunks with the host CTA rule that keeps the HBM side's rounds (Llama-2-70B's down lost a
# round there). Build; every gpu test; `dak bench gemm` at N = 8 for Llama-2-70B and OPT-30B; then
# `gemm_probe host` on Llama-2-70B's down with 128 host rows at 2 / 4 / 8 host CTAs (the rule's
# choice against its neighbours), and OPT-30B's qkv at N = 8 (0.77 of ideal) with k_splits 1-4.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 120 2
timeout 200 build-gpu/dak bench gemm --models llama-2-70b,opt-30b --tokens 8 --json "$OUT/gemm8.json" --csv "$OUT/gemm8.csv" > "$OUT/gemm8.txt" 2> "$OUT/gemm8.log"
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/gemm8.log" | head -3
for hc in "0 0" "2 5" "4 5" "8 3"; do
  timeout 60 build-gpu/gemm_probe host 8192 8 28672 128 1 $hc | cut -c1-220
done | tee "$OUT/probe.txt"
for sp in 1 2 3 4; do timeout 60 build-gpu/gemm_probe 21504 8 7168 $sp 0; done | tee -a "$OUT/probe.txt"
grep -E "^(B_g|B_h)|targets" "$OUT/gemm8.txt" | cut -c1-140
python3 tools/device/summarize_gemm.py "n8=$OUT/gemm8.json" | grep -E "gemm \| (down|qkv|gate_up) \| 8 \| (0|0.5|1|2|5) \|" | cut -c1-150
grep -E "stack8 \| layer" "$OUT/gemm8.txt" | awk -F'|' '{print $2,$7,$8,$11,$14,$15,$19}' | head -10
echo "total $(( $(date +%s) - t0 )) s"
