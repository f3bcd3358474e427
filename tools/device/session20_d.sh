#!/usr/bin/env bash
# Device call 4 of session 20: the compute path's new host-side schedule (clusters of 2 while few
# host m-tiles leave the link idle; host CTAs for 512 KiB in flight under the compute load):
# the TieredGemm gpu tests, then `dak bench gemm --tokens 512` (every model, every ratio) against
# session 19's sweep (call 5) and this session's call 3. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gtest 'TieredGemm*' 200
timeout 200 build-gpu/dak bench gemm --tokens 512 --json "$OUT/gemm512.json" > "$OUT/gemm512.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
echo "--- summary"
grep -E "^\[  (PASSED|FAILED) " "$OUT/tests.txt"
grep -E "^targets:|^B_g|^B_h" "$OUT/gemm512.txt" | cut -c1-120
grep -E "\| 512 \| [0-9.]+ \|" "$OUT/gemm512.txt" | awk -F'|' '{print $2 "|" $3 "|" $4 "|" $8 "|" $9 "|" $11 "|" $15 "|" $19}'
echo "total $(( $(date +%s) - t0 )) s"
