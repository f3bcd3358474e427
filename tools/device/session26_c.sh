#!/usr/bin/env bash
# Device call 4 of session 26: is the 64-row tile at N = 32 / 64 bound by the x tiles' L2 -> SMEM
# traffic (at N = 64 as many x bytes as W bytes cross the L2 -> SM fabric)? The probe built twice
# (the 64-row tiles' translation unit with and without -DDAK_PROBE_NO_X: x never loaded), the four
# Llama-2-7B decode linears at N = 8 / 32 / 64, default splits and stages; then Llama-2-7B batch
# 512 offload points with their per-operator breakdown (the host KV appends). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
[[ -f build-gpu/libdak_gpu.a ]] || dak_build
dak_probe_variants base: nox:-DDAK_PROBE_NO_X
for n in 8 32 64; do
  for mk in "12288 4096" "4096 4096" "22016 4096" "4096 11008"; do
    set -- $mk
    for v in base nox; do
      printf "%-5s " $v; timeout 30 build-gpu/probe-$v $1 $n $2 0 0 2>&1 | tail -n 1
    done
  done
done | tee "$OUT/probe-nox.txt"
for r in 0 0.1 0.3; do
  dak_bench_point l7-b512-$r X=1 90 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio $r
done
dak_merge_points
grep -A16 "per-operator" "$OUT/offload.txt" | grep -E "per-operator|rope|attention|activation|qkv|mlp" | head -40
echo "total $(( $(date +%s) - t0 )) s"
