#!/usr/bin/env bash
# Device call: build dak and the gpu tests, run the bench/measurement tests, a small
# `dak bench attention` and `dak profile --quick --skip-gemm` (the shared B_h measurement, stream
# and graph helpers of gpu/bench_util.h). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
DAK_REQUIRE_GPU=1 timeout 60 build-gpu/tests/dak_gpu_tests --gtest_filter='BenchGemm.*:HbmStream.*:HostArena.*' > t.log 2>&1
echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |Failure" t.log | head -8
timeout 60 build-gpu/dak bench attention --models llama-2-7b --batch 8 --ctx 512 --ratios 0,1 --repeats 5 \
  --json "$OUT/att.json" > "$OUT/att.txt" 2> "$OUT/att.log"
echo "bench attention rc=$?"; head -4 "$OUT/att.txt"; grep -E "^\| llama" "$OUT/att.txt" | head -6; tail -2 "$OUT/att.log"
timeout 80 build-gpu/dak profile --quick --skip-gemm --output "$OUT/profile.json" > "$OUT/profile.txt" 2> "$OUT/profile.log"
echo "profile rc=$?"; grep -iE "launch|B_h|B_g" "$OUT/profile.txt" | head -8; tail -2 "$OUT/profile.log"
echo "total $(( $(date +%s) - t0 )) s"
