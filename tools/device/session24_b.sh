#!/usr/bin/env bash
# Device call 2 of session 24: the norm-in 1 / rms computed by the producer warpgroup's idle warp
# (off the consumers' path), the norm-out residual and weight loaded before the main loop,
# rms_norm_out for host rows that are not a multiple of 64, membar.sys after host-tier KV appends.
# The new tests, the KV-append race test 200 times next to another GPU test process, every gpu
# test, Llama-2-7B / Qwen2-7B decode fused vs DAK_NO_FUSED_NORM=1, a timeline. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests dak_timeline
dak_gtest 'TieredGemm.Norm*' 120
( DAK_REQUIRE_GPU=1 timeout 100 build-gpu/tests/dak_gpu_tests --gtest_filter='TieredAttentionKernel.*' --gtest_repeat=20 > /tmp/stress.txt 2>&1 ) &
DAK_REQUIRE_GPU=1 timeout 100 build-gpu/tests/dak_gpu_tests --gtest_filter='TieredAttentionKernel.ReadsTheKey*' --gtest_repeat=200 > "$OUT/race.txt" 2>&1
echo "race test rc=$? passes $(grep -c '^\[       OK \]' "$OUT/race.txt") failures $(grep -c '^\[  FAILED  \] TieredAtt' "$OUT/race.txt")"
wait
dak_gpu_tests 60 4
dak_l7_decode fused X=1 auto
dak_l7_decode unfused DAK_NO_FUSED_NORM=1 auto
dak_l7_decode fused2 X=1 auto
dak_l7_decode unfused2 DAK_NO_FUSED_NORM=1 auto
for e in fused:X=1 unfused:DAK_NO_FUSED_NORM=1; do
  env ${e#*:} timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model qwen2-7b --batch 1,8,32 --prompt-len 32 \
    --gen-len 32 > "$OUT/l7-qwen-${e%%:*}.txt" 2>/dev/null; echo "qwen ${e%%:*} rc=$?"
done
dak_bundle_decode
dak_timeline b1-fused X=1 --batch 1
dak_timeline b8-fused X=1 --batch 8
echo "--- decode, prompt 32, gen 32 (TPOT ms, floor, ratio)"
grep -hE "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | awk '/^===/{n=$2} /^\|/{split($0,c,"|"); print n, "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}'
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
