#!/usr/bin/env bash
# Device call 1 of session 10: build; every gpu test (4 at a time); `dak generate --gemm` on the
# GPU (random-weight Llama-2-7B); the probe's decode shapes with k-splits that now get their CTAs
# (with_k_splits); the two-layer trace with per-op forced k-splits; then a second build with a
# 220 KiB ring (6 stages at bn 8) for the probe and the engine. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 200 4
for g in tiered cublas auto; do
  timeout 60 build-gpu/dak generate --random-weights --model llama-2-7b --prompt-ids 1,2,3 --prompt-ids 4,5 \
    --max-new-tokens 4 --gemm $g > /tmp/gen-$g.txt 2>&1
  echo "generate --gemm $g rc=$? $(tail -n 2 /tmp/gen-$g.txt | tr '\n' ' ' | cut -c1-200)"
  { echo "=== --gemm $g"; cat /tmp/gen-$g.txt; } >> "$OUT/gen.txt"
done
dak_l7_decode base X=1 auto
timeout 90 build-gpu/gemm_probe > "$OUT/probe.txt" 2>&1; echo "probe rc=$?"
grep -E "^M=" "$OUT/probe.txt" | head -36
{
  for v in "0 0 0 0" "1 1 1 1" "0 2 0 2" "2 2 0 2" "0 4 0 4" "0 2 0 3" "2 2 2 2"; do
    echo "=== trace splits $v"
    timeout 30 build-gpu/gemm_probe trace 2 $v 2>&1 | cut -c1-130
  done
} > "$OUT/trace.txt"
grep -E "===|per layer" "$OUT/trace.txt"
# Ring of 220 KiB (bn 8: 6 stages).
cmake -S . -B build-r6 -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF \
  -DCMAKE_CXX_FLAGS=-DDAK_TIERED_GEMM_RING_BYTES=225280 -DCMAKE_CUDA_FLAGS=-DDAK_TIERED_GEMM_RING_BYTES=225280 > cfg6.log 2>&1 &&
  cmake --build build-r6 -j16 --target dak > build6.log 2>&1 || { grep error build6.log | head; }
echo "build r6 $(( $(date +%s) - t0 )) s"
nvcc -std=c++20 -O3 -DDAK_TIERED_GEMM_RING_BYTES=225280 -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
  bench/tiered_gemm_probe.cu build-r6/libdak_gpu.a build-r6/libdak_core.a -lcuda -lcublasLt -lcublas -lfmt -o build-r6/gemm_probe
for c in "4096 8 4096 1 0" "4096 8 4096 2 0" "4096 8 11008 1 0" "4096 8 11008 2 0" "12288 8 4096 1 0" "22016 8 4096 1 0" "64 8 16384 1 0"; do
  timeout 20 build-r6/gemm_probe $c 2>&1 | tail -n 1
done | sed 's/^/r6 /'
timeout 30 build-r6/gemm_probe trace 2 2>&1 | grep "per layer" | sed 's/^/r6 /'
timeout 30 build-r6/gemm_probe trace 2 0 2 0 2 2>&1 | grep "per layer" | sed 's/^/r6 0 2 0 2 /'
timeout 45 build-r6/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
  --gen-len 32 --json /tmp/bench-l7-r6.json > "$OUT/l7-r6.txt" 2> /dev/null
echo "r6 rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/l7-r6.txt"
echo "total $(( $(date +%s) - t0 )) s"
