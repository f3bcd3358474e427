#!/usr/bin/env bash
# Device call: build dak_gpu, the gpu tests and bench/tiered_gemm_probe.cu; run the tiered GEMM
# tests (60 s limit each), then the probe. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu dak_gpu_tests
dak_build_probe
echo "build $(( $(date +%s) - t0 )) s"
DAK_REQUIRE_GPU=1 timeout 120 build-gpu/tests/dak_gpu_tests --gtest_filter="TieredGemm.*" > t.log 2>&1
echo "TieredGemm tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |Failure|outside|differ" t.log | head -12
timeout 120 build-gpu/gemm_probe
