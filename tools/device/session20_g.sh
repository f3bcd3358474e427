#!/usr/bin/env bash
# Device call 7 of session 20: what do the whole-tile epilogue's stores cost the compute path? Its
# y stores are scalar and strided (a thread's accumulators are adjacent tokens, i.e. rows of y, never
# adjacent W rows: 16-byte pieces of 4 rows per warp store). A probe built with the whole tiles'
# stores predicated off (-DDAK_TIERED_GEMM_DIAG_NO_STORE; the math stays) against the normal one,
# Llama-2-7B's and OPT-30B's linears at N = 512 (`gemm_probe tiles`, random inputs). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
nvcc -std=c++20 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
  -DDAK_TIERED_GEMM_DIAG_NO_STORE bench/tiered_gemm_probe.cu src/gpu/kernels/tiered_gemm_bm128.cu \
  src/gpu/kernels/tiered_gemm_bm128x256.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a -lcuda -lcublasLt -lcublas -lfmt \
  -o build-gpu/probe-nostore > /tmp/nostore.log 2>&1 || { echo "variant failed"; grep -m5 error /tmp/nostore.log; }
echo "variant built ($(( $(date +%s) - t0 )) s)"
for v in gemm_probe probe-nostore gemm_probe probe-nostore; do
  for mk in "12288 4096" "4096 4096" "22016 4096" "4096 11008" "21504 7168" "28672 7168"; do
    timeout 60 build-gpu/$v tiles $mk 512 2>&1 | grep -vE "^us per|^ +M " | sed "s/^/$v /" >> "$OUT/tiles.txt"
  done
done
echo "--- summary"
cut -c1-140 "$OUT/tiles.txt"
echo "total $(( $(date +%s) - t0 )) s"
