#!/usr/bin/env bash
# Session 34, last call: the landing tree. Build; every gpu test; the GELU activation test on 20 fresh
# seeds (the tolerance of its fp32 tail); `dak generate` with random Llama-2-7B weights on the GPU, and
# its refusal of a prompt that fills --max-context before the load. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
DAK_REQUIRE_GPU=1 timeout 120 build-gpu/tests/dak_gpu_tests --gtest_filter='ActivationKernel.*' --gtest_repeat=20 \
  > "$OUT/activation.txt" 2>&1
echo "activation x20 rc=$? passed=$(grep -c '^\[  PASSED  \]' "$OUT/activation.txt") failed=$(grep -c '^\[  FAILED  \] [0-9]* test' "$OUT/activation.txt")"
timeout 60 build-gpu/dak generate --random-weights --model llama-2-7b --prompt-ids 1,2,3,4 --max-new-tokens 8 \
  > "$OUT/generate.txt" 2> "$OUT/generate.log"
echo "generate rc=$?"; tail -n 1 "$OUT/generate.log" | cut -c1-200
timeout 60 build-gpu/dak generate --random-weights --model llama-2-7b --prompt-ids 1,2,3,4,5,6,7,8,9,10 --max-context 8 \
  > /dev/null 2> "$OUT/refuse.log"
echo "refusal rc=$?"; head -n 3 "$OUT/refuse.log" | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
