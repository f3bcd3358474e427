#!/usr/bin/env bash
# Fails if ptxas serializes the wgmma of the tiered GEMM kernels (diagnostic C7520, "wgmma.mma_async
# instructions are serialized ..."): a branch or a runtime trip count around wgmma makes ptxas wait
# for every wgmma before the next one, ~45 ns each at 64 x 8 x 16 on the H200, which hid the
# session-8 experiments' gains (docs/perf-notes.md). Compiles the GEMM translation units for sm_90a
# with ptxas verbose output (no GPU needed).
# Usage: check_wgmma_serialization.sh NVCC SOURCE_DIR CUTLASS_INCLUDE_DIR
set -uo pipefail
nvcc=$1 src=$2 cutlass=$3
status=0
for tu in tiered_gemm_bm64.cu tiered_gemm_bm128.cu; do
  out=$("$nvcc" -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -I"$src/src" \
    -isystem "$cutlass" -Xptxas -v -c "$src/src/gpu/kernels/$tu" -o /dev/null 2>&1)
  rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "$tu: nvcc failed (rc $rc)"; echo "$out" | grep -E "error" | head -5; status=1
  elif grep -q "C7520" <<< "$out"; then
    echo "$tu: ptxas serializes wgmma (C7520):"; grep "C7520" <<< "$out" | cut -c1-220; status=1
  else
    echo "$tu: no serialized wgmma"
  fi
done
exit $status
