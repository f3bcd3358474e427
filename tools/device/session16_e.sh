#!/usr/bin/env bash
# Device call 6 of session 16: is the tiered attention's ~6-9 us before the first step lands a cold
# start of the benchmark (the 256 MiB L2 flush also evicts the kernel's code and the KV page-table
# entries)? The traced probe, base (cp.async) and tma (TMA row copies), with and without the flush.
# Carry: third_party.
# The variant switches other than -DDAK_ATT_TRACE (DAK_ATT_TMA_ROWS, DAK_ATT_NOMATH, DAK_ATT_ROTATE) live in
# docs/attempts/session16-attention-hbm-variants.patch (apply it to 1cf4377 to run this again).
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu
dak_attention_probe base "-DDAK_ATT_TRACE" & dak_attention_probe tma "-DDAK_ATT_TMA_ROWS -DDAK_ATT_TRACE" & wait
echo "variants built $(( $(date +%s) - t0 )) s"
for v in base tma; do
  echo "=== $v, flush"; timeout 60 build-gpu/ap-$v | grep -v B_g | tee -a "$OUT/probe.txt"
  echo "=== $v, no flush"; DAK_PROBE_NOFLUSH=1 timeout 60 build-gpu/ap-$v | grep -v B_g | tee -a "$OUT/probe.txt"
done
echo "total $(( $(date +%s) - t0 )) s"
