#!/usr/bin/env bash
# One device call: build dak on the GPU machine, run the gpu tests (and the cpu tests as a
# cross-check of the toolchain there), print a short table last.
# Carry: third_party (CUTLASS headers, pcre2.h). Usage from the repo root: bash tools/device/gpu_check.sh
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF > build-gpu.log 2>&1 &&
  cmake --build build-gpu -j16 >> build-gpu.log 2>&1
build_rc=$?
t1=$(date +%s)
if [[ $build_rc != 0 ]]; then tail -n 60 build-gpu.log; echo "BUILD FAILED"; exit 1; fi
DAK_REQUIRE_GPU=1 ctest --test-dir build-gpu -L gpu --output-on-failure > gpu-tests.log 2>&1; gpu_rc=$?
ctest --test-dir build-gpu -L cpu -j16 > cpu-tests.log 2>&1; cpu_rc=$?
cat gpu-tests.log | tail -n 30
[[ -n "${OUT:-}" ]] && cp build-gpu.log gpu-tests.log cpu-tests.log "$OUT"/ 2>/dev/null
echo
echo "| step | result |"
echo "|---|---|"
echo "| build (s) | $((t1 - t0)) |"
echo "| gpu tests | rc=$gpu_rc $(grep -E 'tests passed' gpu-tests.log) |"
echo "| cpu tests | rc=$cpu_rc $(grep -E 'tests passed' cpu-tests.log) |"
