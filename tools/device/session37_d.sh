#!/usr/bin/env bash
# Session 37, call 4: is the 20 ms warm-up or run-to-run noise behind call 3's slower host-bound and
# N = 512 figures? `dak bench gemm` on OPT-30B at N = 512 (x = 0 and 100 %),
# alternating --warmup-ms 0 / 20 / 0 / 20. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for w in 0 20 0 20; do
  timeout 40 build-gpu/dak bench gemm --models opt-30b --tokens 512 --ratios 0,100 --layers 2 --warmup-ms $w 2> /dev/null |
    grep -E "^\| opt-30b \| gemm" | awk -F'|' -v w=$w '{printf "w%-2s N=%-4s %-8s x=%-4s %9s ratio %s cuBLAS %s\n", w, $7, $4, $8, $11, $15, $16}'
  echo "($(( $(date +%s) - t0 )) s)"
done | tee "$OUT/alternate.txt"
