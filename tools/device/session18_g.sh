#!/usr/bin/env bash
# Device call 7 of session 18, the landing tree's rule: the compute tile chosen with the constants
# refitted to random inputs and stacks. The GPU build (dak, gpu tests), the TieredGemm gpu tests, and
# `dak bench gemm` at x = 0, N = 256 / 512 (single GEMMs >= 256 MiB and 8-layer stacks of
# Llama-2-7B, Llama-2-70B, OPT-30B). Compare with call 5 (--compute-tile auto / 128 / 256).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
DAK_REQUIRE_GPU=1 timeout 60 build-gpu/tests/dak_gpu_tests --gtest_filter="TieredGemm.*" > "$OUT/tests.txt" 2>&1
echo "TieredGemm tests rc=$? ($(( $(date +%s) - t0 )) s)"
timeout 60 build-gpu/dak bench gemm --tokens 256,512 --ratios 0 > "$OUT/gemm-auto.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
echo "--- summary"
grep -E "^\[  (PASSED|FAILED) " "$OUT/tests.txt"
grep -E "^\| [a-z0-9-]+ \| (stack8|gemm) " "$OUT/gemm-auto.txt" | awk -F'|' '{print $2 "|" $3 "|" $4 "|" $7 "|" $11 "|" $16}'
echo "total $(( $(date +%s) - t0 )) s"
