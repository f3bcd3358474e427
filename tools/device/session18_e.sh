#!/usr/bin/env bash
# Device call 5 of session 18: the compute tile in the 8-layer stacks. `dak bench gemm` at x = 0 and
# N = 256 / 512 for Llama-2-7B, Llama-2-70B and OPT-30B with --compute-tile auto, 128 and 256 (same
# binary, same machine; auto twice). A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for t in auto 128 256 auto; do
  timeout 150 build-gpu/dak bench gemm --tokens 256,512 --ratios 0 --compute-tile $t > "$OUT/gemm-$t.txt" 2>&1
  echo "bench gemm $t rc=$? ($(( $(date +%s) - t0 )) s)"
  cat "$OUT/gemm-$t.txt" >> "$OUT/gemm-all.txt"
done
echo "--- summary"
for t in auto 128 256; do
  echo "=== --compute-tile $t"
  grep -E "^\| [a-z0-9-]+ \| (stack8|gemm) " "$OUT/gemm-$t.txt" | awk -F'|' '{print $2 "|" $3 "|" $4 "|" $7 "|" $11 "|" $16}'
done
echo "total $(( $(date +%s) - t0 )) s"
