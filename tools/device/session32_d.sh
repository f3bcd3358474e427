#!/usr/bin/env bash
# Device call of session 32: the staged HBM ring depth. The plan takes 2 stages at head_dim 128 (2
# CTAs per SM); 3-5 stages fit one CTA per SM (4 warps). `dak bench attention --hbm-stages N` at
# x = 0 and 1/8, Llama-2-7B and Llama-3-8B, batch 8 / 64, 4096 / 32768 keys (staged splits).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for st in 0 3 5 0; do
  [ $(( $(date +%s) - t0 )) -lt 330 ] || { echo "skip stages $st (time)"; continue; }
  timeout 90 build-gpu/dak bench attention --models llama-2-7b,llama-3-8b --batch 8,64 --ctx 4096,32768 \
    --ratios 0,1/8 --no-balance-point --max-host-gib 24 --hbm-stages $st --output csv > "$OUT/att-$st-$SECONDS.csv" 2> /dev/null
  echo "hbm stages $st rc=$?"
done
for f in "$OUT"/att-*.csv; do
  python3 - "$f" <<'PY'
import csv, sys, os
name = os.path.basename(sys.argv[1])[4:-4]
for r in csv.DictReader(open(sys.argv[1])):
    if r["kernel"] != "tiered" or r["skipped"] == "true": continue
    print(f"stages={name:8s} {r['model']:11s} B={r['batch']:>3s} ctx={r['context']:>5s} x={float(r['ratio']):.3f} "
          f"{1000 * float(r['time_ms']):9.1f} us of_ideal={float(r['of_ideal']):.3f} {r['schedule'][-34:]}")
PY
done | sort -k2,2 -k3,3 -k4,4 -k5,5 -s
echo "total $(( $(date +%s) - t0 )) s"
