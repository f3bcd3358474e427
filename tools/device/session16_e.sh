#!/usr/bin/env bash
# Device call 6 of session 16: is the tiered attention's ~6-9 us before the first step lands a cold
# start of the benchmark (the 256 MiB L2 flush also evicts the kernel's code and the KV page-table
# entries)? The traced probe, base (cp.async) and tma (TMA row copies), with and without the flush.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu
build_variant() {
  nvcc -std=c++20 -O3 --expt-relaxed-constexpr -lineinfo -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
    $2 bench/tiered_attention_probe.cu src/gpu/kernels/tiered_attention.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a \
    -lcuda -lfmt -o "build-gpu/ap-$1" > "/tmp/ap-$1.log" 2>&1 || { echo "variant $1 failed"; head -20 "/tmp/ap-$1.log"; }
}
build_variant base "-DDAK_ATT_TRACE" & build_variant tma "-DDAK_ATT_TMA_ROWS -DDAK_ATT_TRACE" & wait
echo "variants built $(( $(date +%s) - t0 )) s"
for v in base tma; do
  echo "=== $v, flush"; timeout 60 build-gpu/ap-$v | grep -v B_g | tee -a "$OUT/probe.txt"
  echo "=== $v, no flush"; DAK_PROBE_NOFLUSH=1 timeout 60 build-gpu/ap-$v | grep -v B_g | tee -a "$OUT/probe.txt"
done
echo "total $(( $(date +%s) - t0 )) s"
