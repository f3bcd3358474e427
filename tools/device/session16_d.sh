#!/usr/bin/env bash
# Device calls 4-5 of session 16: where the tiered attention's all-HBM time goes (call 4: base, tma, tma+nomath;
# call 5: tma, and with each item's steps rotated by a per-item offset so that the warps do not stream in lock step at
# a fixed stride: tma+rotate, base+rotate, tma+rotate+nomath).
# %globaltimer stamps (start, first step landed, last step done, end) for the base (cp.async), tma
# (TMA row copies) and tma+nomath variants at Llama-2-7B batch 8, contexts 512 / 4096 / 32768.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu
build_variant() {
  nvcc -std=c++20 -O3 --expt-relaxed-constexpr -lineinfo -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
    $2 bench/tiered_attention_probe.cu src/gpu/kernels/tiered_attention.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a \
    -lcuda -lfmt -o "build-gpu/ap-$1" > "/tmp/ap-$1.log" 2>&1 || { echo "variant $1 failed"; head -20 "/tmp/ap-$1.log"; }
}
build_variant tma "-DDAK_ATT_TMA_ROWS -DDAK_ATT_TRACE" & build_variant tmarot "-DDAK_ATT_TMA_ROWS -DDAK_ATT_ROTATE -DDAK_ATT_TRACE" & build_variant baserot "-DDAK_ATT_ROTATE -DDAK_ATT_TRACE" &
build_variant tmarotnomath "-DDAK_ATT_TMA_ROWS -DDAK_ATT_ROTATE -DDAK_ATT_NOMATH -DDAK_ATT_TRACE" & wait
echo "variants built $(( $(date +%s) - t0 )) s"
for v in tma tmarot baserot tmarotnomath; do
  echo "=== $v"; timeout 60 build-gpu/ap-$v | tee -a "$OUT/probe.txt"
done
echo "total $(( $(date +%s) - t0 )) s"
