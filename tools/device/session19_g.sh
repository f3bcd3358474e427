#!/usr/bin/env bash
# Device call 7 of session 19: is the 128 x 128 tile bound by its L2 -> SMEM traffic? (call 5's
# stall samples: its consumers wait on full stages, the 128 x 256 tile's on wgmma.) Llama-2-7B's
# linears at N = 512, each tile at one k-split, all rows in HBM, in multicast clusters of 1 / 2 / 4
# CTAs sharing each W tile (DAK_PROBE_CLUSTER; one L2 read per cluster). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
for c in 1 2 4; do
  for mk in "12288 4096" "4096 4096" "22016 4096" "4096 11008"; do
    for bn in 128 256; do
      DAK_PROBE_CLUSTER=$c timeout 30 build-gpu/gemm_probe tiles $mk 512 $bn 1 2>&1 | grep -vE "^us per|^ +M " \
        | sed "s/^/cluster $c /" >> "$OUT/clusters.txt"
    done
  done
  echo "cluster $c ($(( $(date +%s) - t0 )) s)"
done
echo "--- summary"
cat "$OUT/clusters.txt"
echo "total $(( $(date +%s) - t0 )) s"
