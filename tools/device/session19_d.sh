#!/usr/bin/env bash
# Device call 4 of session 19: the whole-tile epilogue and the refitted compute-tile rule. Every gpu
# test; `dak bench gemm` at x = 0, N = 256 / 512 with --compute-tile auto / 128 / 256 (in-stack A/B);
# Llama-2-7B decode (batch 1, 8, 64) on this tree against build-old (the per-element epilogue,
# -DDAK_GEMM_ELEMENTWISE_EPILOGUE); Llama-2-7B batch 512 at 10 % offload with the rule and with
# DAK_GEMM_COMPUTE_BN=128. A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
cmake -S . -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF \
  -DCMAKE_CUDA_FLAGS=-DDAK_GEMM_ELEMENTWISE_EPILOGUE > cfg-old.log 2>&1 &&
  cmake --build build-old -j16 --target dak > build-old.log 2>&1 || { echo "old build failed"; grep error build-old.log | head; }
echo "old build $(( $(date +%s) - t0 )) s"
dak_gpu_tests 60 4
for t in auto 128 256; do
  timeout 90 build-gpu/dak bench gemm --tokens 256,512 --ratios 0 --compute-tile $t > "$OUT/gemm-$t.txt" 2>&1
  echo "bench gemm $t rc=$? ($(( $(date +%s) - t0 )) s)"
done
for b in build-gpu build-old build-gpu build-old; do
  timeout 60 $b/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32 \
    > /tmp/dec.txt 2> /dev/null
  echo "decode $b rc=$?"; { echo "=== $b"; cat /tmp/dec.txt; } >> "$OUT/decode.txt"
done
dak_offload_bench l7b512-auto 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
DAK_GEMM_COMPUTE_BN=128 dak_offload_bench l7b512-128 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
for t in auto 128 256; do
  echo "== --compute-tile $t"
  grep -E "^\| [a-z0-9-]+ \| (stack8|gemm) " "$OUT/gemm-$t.txt" | awk -F'|' '{print $2 "|" $3 "|" $4 "|" $7 "|" $11 "|" $16}'
done
grep -E "^=== |^\| [0-9]+ \| 32 \| 32|floor" "$OUT/decode.txt" | cut -c1-170
grep -E "^=== |^\| 512 \| 0.1" "$OUT/offload.txt" | cut -c1-160
echo "total $(( $(date +%s) - t0 )) s"
