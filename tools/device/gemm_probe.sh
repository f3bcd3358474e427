#!/usr/bin/env bash
# Device call: build dak_gpu, the tiered GEMM tests and bench/tiered_gemm_probe.cu; run the
# tests (60 s limit each) and the probe. Carry: third_party.
set -uo pipefail
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF > cfg.log 2>&1 &&
  cmake --build build-gpu -j16 --target dak_gpu dak_gpu_tests > build.log 2>&1 || { grep -E "error" build.log | head -30; exit 1; }
nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc bench/tiered_gemm_probe.cu build-gpu/libdak_gpu.a \
  build-gpu/libdak_core.a -lcuda -lcublasLt -lcublas -lfmt -o build-gpu/gemm_probe || exit 1
build-gpu/gemm_probe
for t in BandwidthPathAllRatios ComputePathAllRatios KSplitsWithLongK BiasReluF32AndStrides \
         CongestionParametersDoNotChangeBits GraphReplayResetsCounters RejectsBadArguments; do
  DAK_REQUIRE_GPU=1 timeout 60 build-gpu/tests/dak_gpu_tests --gtest_filter="TieredGemm.$t" > t.log 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED) ' t.log | head -1)"; grep -E "Failure|outside|differ" t.log | head -3
done
