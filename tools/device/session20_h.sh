#!/usr/bin/env bash
# Device call 8 of session 20, the landing tree: the 128-row tiles' bf16 epilogue through SMEM in
# 16-byte vectors (call 7: the direct stores cost 2-10 % of the GEMM), the multicast cluster rule,
# the CLI fixes. Every gpu test; `gemm_probe tiles` against a probe built with the direct stores
# (-DDAK_TIERED_GEMM_DIAG_DIRECT_STORE); the issue-4 sweep (`dak bench gemm`, JSON); decode batch
# 1 / 8; Llama-2-7B batch 512 and batch 8 at 10 % offload. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
nvcc -std=c++20 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
  -DDAK_TIERED_GEMM_DIAG_DIRECT_STORE bench/tiered_gemm_probe.cu src/gpu/kernels/tiered_gemm_bm128.cu \
  src/gpu/kernels/tiered_gemm_bm128x256.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a -lcuda -lcublasLt -lcublas -lfmt \
  -o build-gpu/probe-direct > /tmp/direct.log 2>&1 &
dak_gpu_tests 60 4
wait
echo "direct-store probe built ($(( $(date +%s) - t0 )) s)"
for v in gemm_probe probe-direct gemm_probe probe-direct; do
  for mk in "12288 4096" "4096 4096" "22016 4096" "4096 11008" "21504 7168" "28672 7168"; do
    timeout 30 build-gpu/$v tiles $mk 512 2>&1 | grep -vE "^us per|^ +M " | sed "s/^/$v /" >> "$OUT/tiles.txt"
  done
done
echo "tiles ($(( $(date +%s) - t0 )) s)"
timeout 150 build-gpu/dak bench gemm --json "$OUT/gemm.json" > "$OUT/gemm.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
dak_l7_decode base X=1 auto
dak_bundle_decode
dak_offload_bench l7b512 80 --model llama-2-7b --batch 512 --offload-ratio 0.1
dak_offload_bench l7b8 40 --model llama-2-7b --batch 8 --offload-ratio 0.1
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
cut -c1-120 "$OUT/tiles.txt"
grep -E "^targets:|^B_g|^B_h" "$OUT/gemm.txt" | cut -c1-100
grep -E "\| (8|512) \| 0 \|" "$OUT/gemm.txt" | awk -F'|' '{print $2 "|" $3 "|" $4 "|" $7 "|" $11 "|" $14 "|" $15 "|" $19}'
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt"
grep -E "^=== |^\| (8|512) \| 0.1" "$OUT/offload.txt" | cut -c1-170
echo "total $(( $(date +%s) - t0 )) s"
