#!/usr/bin/env bash
# Device call 3 of session 31 (little device time left): build the gpu tests and run those of the
# engines (generate's continuous batching and full decode steps on the GPU engine: the two new
# GpuEngineMeasuring cases; the engine and offload-engine suites beside them).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu_tests
DAK_REQUIRE_GPU=1 timeout 150 build-gpu/tests/dak_gpu_tests --gtest_filter='GpuEngine*:OffloadEngine*' > "$OUT/tests.txt" 2>&1
echo "gpu tests rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "^\[  (PASSED|FAILED) |Failure|^\[==========\]" "$OUT/tests.txt" | head -20
grep -E "^\[       OK \] GpuEngineMeasuring" "$OUT/tests.txt"
