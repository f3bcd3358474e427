#!/usr/bin/env bash
# Device call 6 of session 20: does the compute path starve on W's HBM latency? Each W load also
# prefetches the W tile D k-blocks further into L2 (DAK_GEMM_W_PREFETCH=D; 0 = none), so the ring's
# TMA loads (6 x 64 k-columns on 128 x 128, ~1.8 us of wgmma) find W in L2. Llama-2-7B's linears
# at N = 512 one at a time (`gemm_probe tiles`, both tiles, random inputs) and in the 8-layer stack
# (`dak bench gemm`, x = 0). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
for d in 0 8 12 16 24; do
  for mk in "12288 4096" "4096 4096" "22016 4096" "4096 11008"; do
    DAK_GEMM_W_PREFETCH=$d timeout 60 build-gpu/gemm_probe tiles $mk 512 2>&1 | grep -vE "^us per|^ +M " | sed "s/^/D=$d /" >> "$OUT/tiles.txt"
  done
  DAK_GEMM_W_PREFETCH=$d timeout 60 build-gpu/dak bench gemm --models llama-2-7b,opt-30b --tokens 512 --ratios 0 --runs 7 \
    > /tmp/g.txt 2>&1
  grep -E "\| 512 \| 0 \|" /tmp/g.txt | awk -F'|' -v l="D=$d" '{print l " |" $2 "|" $3 "|" $4 "|" $11 "|" $15}' >> "$OUT/stack.txt"
  echo "D=$d ($(( $(date +%s) - t0 )) s)"
done
echo "--- summary"
cat "$OUT/tiles.txt" | cut -c1-160
cat "$OUT/stack.txt"
echo "total $(( $(date +%s) - t0 )) s"
