#!/usr/bin/env bash
# Device call of session 32 (little device time left): the attention kernel tests, whose new cases
# check last_merge (DAK_ATTN_COMBINE=last: the last warp merges; the CTA merge's bits, every b_host,
# graph replays with changing lengths, counters back at zero); then, time permitting, decode
# TPOT of Llama-2-7B batch 1 at prompt 32 gen 16 (48 keys: 3 splits, the combine kernel) against last.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu_tests
DAK_REQUIRE_GPU=1 timeout 60 build-gpu/tests/dak_gpu_tests --gtest_filter='TieredAttention*' > "$OUT/tests.txt" 2>&1
echo "attention tests rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "^\[  (PASSED|FAILED) |Failure|^\[       OK" "$OUT/tests.txt" | head -30
if [ $(( $(date +%s) - t0 )) -lt 70 ]; then
  cmake --build build-gpu -j16 --target dak > /dev/null 2>&1
  for v in X=1 DAK_ATTN_COMBINE=last X=1 DAK_ATTN_COMBINE=last; do
    [ $(( $(date +%s) - t0 )) -lt 150 ] || break
    env $v timeout 30 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
      --gen-len 16 2> /dev/null | grep -E "^\| [0-9]+ \| 32 \| 16" | sed "s/^/[$v] /" | cut -c1-100
  done
fi
echo "total $(( $(date +%s) - t0 )) s"
