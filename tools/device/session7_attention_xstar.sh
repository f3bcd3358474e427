#!/usr/bin/env bash
# Device call (session 7, fifth): the tiered attention's balance point x* (1 of 64, 6 of 512
# sequences on the host: 80-83 % of ideal in the full sweep) against the host bytes in flight:
# host CTAs x stages (steps per warp) in {4 x 2 (default, 256 KiB), 8 x 2, 4 x 4, 8 x 4, 16 x 2},
# Llama-2-7B, batch 64 and 512, context 4096. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
d=build-gpu/dak
for cfg in 4x2 8x2 4x4 8x4 16x2; do
  c=${cfg%x*}; s=${cfg#*x}
  timeout 80 $d bench attention --models llama-2-7b --batch 64,512 --ctx 4096 --ratios 0,1/8 --max-host-gib 6 \
    --host-ctas $c --host-stages $s --json "$OUT/att-$cfg.json" > "$OUT/att-$cfg.txt" 2> /dev/null
  echo "== $cfg rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "^\| llama-2-7b .* tiered" "$OUT/att-$cfg.txt" | cut -d'|' -f3,7,8,9,10,11,12
done
echo "total $(( $(date +%s) - t0 )) s"
