#!/usr/bin/env bash
# Device call 3 of session 18: k-splits on the compute tiles. The GPU build, every gpu test (new:
# TieredGemm.ComputeTilesSplitK), and `gemm_probe tiles` (each compute tile at k_splits 1-4 with the
# cost model's estimate beside it, cuBLASLt, and the planned choice): the calibration of
# tiered_gemm_compute_cost. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 60 4
timeout 240 build-gpu/gemm_probe tiles > "$OUT/tiles.txt" 2>&1
echo "probe tiles rc=$? ($(( $(date +%s) - t0 )) s)"
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
cat "$OUT/tiles.txt"
echo "total $(( $(date +%s) - t0 )) s"
