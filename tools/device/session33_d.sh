#!/usr/bin/env bash
# Session 33, call 5: why dak profile (34.7 GB/s) and dak bench (51.4 GB/s) disagree on B_h on the
# H100: bench/host_read_probe.cu measures both ways on the same buffers. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include -DDAK_HAVE_CUDA=1 \
  bench/host_read_probe.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a -lcuda -lcublasLt -lcublas -lfmt -lgomp \
  -o build-gpu/host_read_probe || exit 1
nvidia-smi topo -m 2>&1 | head -8
lscpu | grep -E "NUMA|Model name|Socket"
timeout 200 build-gpu/host_read_probe 2>&1 | tee "$OUT/host-read.txt"
echo "total $(( $(date +%s) - t0 )) s"
