#!/usr/bin/env bash
# Device call 1 of session 18: the 128 x 256 compute tile. The GPU build, every gpu test, the tile
# A/B per GEMM (`gemm_probe tiles`: 128 x 128 vs 128 x 256 vs cuBLASLt, all-HBM), `dak bench gemm`
# (the issue-4 sweep), Llama-2-7B batch 512 at 10 % offload with each tile (DAK_GEMM_COMPUTE_BN),
# and decode at batch 1 / 8 / 64 (the bandwidth tiles are unchanged: a regression check).
# A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 60 4
timeout 120 build-gpu/gemm_probe tiles > "$OUT/tiles.txt" 2>&1
echo "probe tiles rc=$? ($(( $(date +%s) - t0 )) s)"
timeout 150 build-gpu/dak bench gemm --json "$OUT/gemm.json" --csv "$OUT/gemm.csv" > "$OUT/gemm.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
dak_offload_bench l7b512-256 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
export DAK_GEMM_COMPUTE_BN=128
dak_offload_bench l7b512-128 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
unset DAK_GEMM_COMPUTE_BN
timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 > "$OUT/decode.txt" 2> /dev/null
echo "decode rc=$? ($(( $(date +%s) - t0 )) s)"
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED" "$OUT/gpu-tests.log" | head -5
cat "$OUT/tiles.txt"
grep -E "targets met|B_g|B_h" "$OUT/gemm.txt" | head -4
grep -E "\| 512 \| 0 \|" "$OUT/gemm.txt" | cut -c1-200
grep -E "^=== |^\| [0-9]" "$OUT/offload.txt" | cut -c1-160
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
