#!/usr/bin/env bash
# Device call (session 7, fourth): the issue sweeps on the landing state. Build; `dak bench
# attention` (the issue-5 sweep: Llama-2-7B / Llama-3-8B / OPT-30B, batch 8 / 64 / 512, contexts
# 512 / 4K / 32K) and `dak bench gemm` (the issue-4 default: Llama-2-7B, Llama-2-70B and OPT-30B
# linears at N = 8 and 512, every ratio), JSON + CSV; prints the target lines and tables last.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
d=build-gpu/dak
timeout 280 $d bench attention --json "$OUT/attention.json" --csv "$OUT/attention.csv" > "$OUT/attention.txt" \
  2> "$OUT/attention.log"
echo "bench attention rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/attention.log" | head -3
timeout 240 $d bench gemm --json "$OUT/gemm.json" --csv "$OUT/gemm.csv" > "$OUT/gemm.txt" 2> "$OUT/gemm.log"
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/gemm.log" | head -3
rm -f "$OUT"/*.log
grep -E "B_g|B_h|targets|met|MISSED|bits" "$OUT/attention.txt" | grep -vE "^\|" | head -12
grep -E "B_g|B_h|targets|met|MISSED|differ" "$OUT/gemm.txt" | grep -vE "^\|" | head -12
echo "total $(( $(date +%s) - t0 )) s"
