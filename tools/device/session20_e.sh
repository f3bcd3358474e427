#!/usr/bin/env bash
# Device call 5 of session 20: is the host side of the compute path slow on its own, or only inside
# the 8-layer stack (PDL, cluster placement)? One GEMM at a time (`gemm_probe host`, no graph, no
# PDL overlap) of Llama-2-7B's qkv / o / down at N = 512 with one host m-tile (128 rows), in clusters
# of 1 / 2 / 4, the planned host CTAs and forced stages; m_host = 0 beside. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
P=build-gpu/gemm_probe
for mnk in "12288 512 4096" "4096 512 4096" "4096 512 11008"; do
  $P host $mnk 0 4 0 0
  for c in 1 2 4; do $P host $mnk 128 $c 0 0; done
  for st in 1 2 3 6; do $P host $mnk 128 4 4 $st 4; done
  for st in 3 6; do $P host $mnk 128 4 4 $st 2; done
  $P host $mnk 128 1 4 6
  $P host $mnk 128 1 8 6
  $P host $mnk 512 4 0 0
  $P host $mnk 512 2 0 0
done 2>&1 | tee "$OUT/host.txt" | cut -c1-150
echo "total $(( $(date +%s) - t0 )) s"
