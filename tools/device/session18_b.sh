#!/usr/bin/env bash
# Device call 2 of session 18: the compute tile chosen by padding and waves. The GPU build, every gpu
# test (the 128 x 256 tile forced in the TieredGemm cases), `gemm_probe tiles` (128 x 128, 128 x 256,
# 128 x 256 in clusters of 2, cuBLASLt, and the rule's pick), `dak bench gemm` (the issue-4 sweep),
# and Llama-2-7B batch 512 at 10 % offload with the rule and with DAK_GEMM_COMPUTE_BN=128.
# A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 60 4
timeout 150 build-gpu/gemm_probe tiles > "$OUT/tiles.txt" 2>&1
echo "probe tiles rc=$? ($(( $(date +%s) - t0 )) s)"
timeout 150 build-gpu/dak bench gemm --json "$OUT/gemm.json" --csv "$OUT/gemm.csv" > "$OUT/gemm.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
dak_offload_bench l7b512-auto 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
export DAK_GEMM_COMPUTE_BN=128
dak_offload_bench l7b512-128 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
unset DAK_GEMM_COMPUTE_BN
dak_offload_bench l7b512-auto2 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
cat "$OUT/tiles.txt"
grep -E "targets met|^B_g|^B_h" "$OUT/gemm.txt" | head -4
grep -E "\| 512 \| 0 \|" "$OUT/gemm.txt" | cut -c1-200
grep -E "^=== |^\| 512 \| 0.1" "$OUT/offload.txt" | cut -c1-160
echo "total $(( $(date +%s) - t0 )) s"
