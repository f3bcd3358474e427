#!/usr/bin/env bash
# Device call 1 of session 12: (1) `gemm_probe stream`: the steady-state HBM rate of the tiered
# GEMM's W access pattern (3D boxes) against contiguous bulk copies and the GEMM itself, on one
# 940 MB weight; (2) the tiered attention at short contexts (Llama-2-7B batch 512, the b512 10 %
# offload point runs at context ~36 with 3.6 layers of KV wholly on the host and the rest at the
# balance point), default congestion and more host bytes in flight.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
echo "== probe stream"
build-gpu/gemm_probe stream | tee "$OUT/stream.txt"
d=build-gpu/dak
for cfg in default 16x2 8x4 16x4 32x2; do
  flags=()
  if [ "$cfg" != default ]; then flags=(--host-ctas ${cfg%x*} --host-stages ${cfg#*x}); fi
  timeout 90 $d bench attention --models llama-2-7b --batch 512 --ctx 40,512 --ratios 0,1/8,1 \
    --max-host-gib 8 "${flags[@]}" --json "$OUT/att-$cfg.json" > "$OUT/att-$cfg.txt" 2> "$OUT/att-$cfg.err"
  echo "== attention $cfg rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "^\| llama-2-7b .* tiered" "$OUT/att-$cfg.txt" | cut -d'|' -f2-12
done
head -5 "$OUT/att-default.txt"
echo "total $(( $(date +%s) - t0 )) s"
