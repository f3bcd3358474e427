#!/usr/bin/env bash
# Device calls 4-5 of session 16: where the tiered attention's all-HBM time goes (call 4: base, tma, tma+nomath;
# call 5: tma, and with each item's steps rotated by a per-item offset so that the warps do not stream in lock step at
# a fixed stride: tma+rotate, base+rotate, tma+rotate+nomath).
# %globaltimer stamps (start, first step landed, last step done, end) for the base (cp.async), tma
# (TMA row copies) and tma+nomath variants at Llama-2-7B batch 8, contexts 512 / 4096 / 32768.
# Carry: third_party.
# As run, the kernel had compile-time switches DAK_ATT_TMA_ROWS (now the runtime path hbm_bulk_rows:
# DAK_PROBE_HBM_COPY=bulk), DAK_ATT_NOMATH and DAK_ATT_ROTATE (in docs/attempts/session16-attention-hbm-variants.patch,
# which applies to the landed tree); DAK_ATT_TRACE stayed.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu
dak_attention_probe tma "-DDAK_ATT_TMA_ROWS -DDAK_ATT_TRACE" & dak_attention_probe tmarot "-DDAK_ATT_TMA_ROWS -DDAK_ATT_ROTATE -DDAK_ATT_TRACE" & dak_attention_probe baserot "-DDAK_ATT_ROTATE -DDAK_ATT_TRACE" &
dak_attention_probe tmarotnomath "-DDAK_ATT_TMA_ROWS -DDAK_ATT_ROTATE -DDAK_ATT_NOMATH -DDAK_ATT_TRACE" & wait
echo "variants built $(( $(date +%s) - t0 )) s"
for v in tma tmarot baserot tmarotnomath; do
  echo "=== $v"; timeout 60 build-gpu/ap-$v | tee -a "$OUT/probe.txt"
done
echo "total $(( $(date +%s) - t0 )) s"
