#!/usr/bin/env bash
# Device call 3 of session 19: the compute path's epilogue without per-element branches (whole
# tiles). A/B in one call: build-gpu/gemm_probe (new) against build-gpu/probe-old (the per-element
# epilogue, -DDAK_GEMM_ELEMENTWISE_EPILOGUE on the 128-row tiles' translation units), `gemm_probe
# tiles` on Llama-2-7B's linears at N = 512 and two large weights; every gpu test; `dak bench gemm`
# at x = 0, N = 256 / 512; the SASS size of the kernels. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
nvcc -std=c++20 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
  -DDAK_GEMM_ELEMENTWISE_EPILOGUE bench/tiered_gemm_probe.cu src/gpu/kernels/tiered_gemm_bm128.cu \
  src/gpu/kernels/tiered_gemm_bm128x256.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a \
  -lcuda -lcublasLt -lcublas -lfmt -o build-gpu/probe-old > /dev/null 2>&1 || echo "probe-old build failed"
echo "probes $(( $(date +%s) - t0 )) s"
for o in $(find build-gpu -name "tiered_gemm_bm128*.o"); do
  echo "$o: $(cuobjdump -sass "$o" | grep -cE '^\s+/\*[0-9a-f]{4}\*/') SASS lines"
done
dak_gpu_tests 60 4
for v in gemm_probe probe-old; do
  for mk in "12288 4096" "4096 4096" "22016 4096" "4096 11008" "57344 8192" "8192 28672"; do
    timeout 60 build-gpu/$v tiles $mk 512 >> "$OUT/tiles-$v.txt" 2>&1
  done
  echo "$v rc=$? ($(( $(date +%s) - t0 )) s)"
done
timeout 90 build-gpu/dak bench gemm --tokens 256,512 --ratios 0 > "$OUT/gemm-auto.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
timeout 90 ncu --clock-control none --section SpeedOfLight -k regex:tiered_gemm_kernel --launch-skip 10 --launch-count 1 \
  build-gpu/gemm_probe tiles 22016 4096 512 256 1 > "$OUT/ncu-256.txt" 2>&1
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
for v in gemm_probe probe-old; do echo "== $v"; grep -vE "^us per|^ +M " "$OUT/tiles-$v.txt"; done
grep -E "^\| [a-z0-9-]+ \| (stack8|gemm) " "$OUT/gemm-auto.txt" | awk -F'|' '{print $2 "|" $3 "|" $4 "|" $7 "|" $11 "|" $16}'
grep -E "SM Frequency|Duration|Compute \(SM\)" "$OUT/ncu-256.txt"
echo "total $(( $(date +%s) - t0 )) s"
