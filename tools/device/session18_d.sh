#!/usr/bin/env bash
# Device call 4 of session 18, the tree to land: compute tiles and k-splits chosen by the fitted
# cost model. The GPU build (all targets, cpu tests too), every gpu and cpu test, `gemm_probe tiles`
# (planned choice vs each tile x split), `dak bench gemm` (the issue-4 sweep), Llama-2-7B batch 512
# at 10 % offload (the plan's tiles, twice, and DAK_GEMM_COMPUTE_BN=128), decode at batch 1 / 8 / 64.
# A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_build_probe
dak_gpu_tests 60 4
dak_cpu_tests_and_generate
timeout 240 build-gpu/gemm_probe tiles > "$OUT/tiles.txt" 2>&1
echo "probe tiles rc=$? ($(( $(date +%s) - t0 )) s)"
timeout 150 build-gpu/dak bench gemm --json "$OUT/gemm.json" --csv "$OUT/gemm.csv" > "$OUT/gemm.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
dak_offload_bench l7b512-auto 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
export DAK_GEMM_COMPUTE_BN=128
dak_offload_bench l7b512-128 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
unset DAK_GEMM_COMPUTE_BN
dak_offload_bench l7b512-auto2 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 > "$OUT/decode.txt" 2> /dev/null
echo "decode rc=$? ($(( $(date +%s) - t0 )) s)"
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
cat "$OUT/tiles.txt"
grep -E "targets met|^B_g|^B_h" "$OUT/gemm.txt" | head -4
grep -E "\| 512 \| 0 \|" "$OUT/gemm.txt" | cut -c1-200
grep -E "^=== |^\| 512 \| 0.1" "$OUT/offload.txt" | cut -c1-160
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
