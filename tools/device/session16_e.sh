#!/usr/bin/env bash
# Device call 6 of session 16: is the tiered attention's ~6-9 us before the first step lands a cold
# start of the benchmark (the 256 MiB L2 flush also evicts the kernel's code and the KV page-table
# entries)? The traced probe, base (cp.async) and tma (TMA row copies), with and without the flush.
# Carry: third_party.
# As run, the kernel had compile-time switches DAK_ATT_TMA_ROWS (now the runtime path hbm_bulk_rows:
# DAK_PROBE_HBM_COPY=bulk), DAK_ATT_NOMATH and DAK_ATT_ROTATE (in docs/attempts/session16-attention-hbm-variants.patch,
# which applies to the landed tree); DAK_ATT_TRACE stayed.
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
