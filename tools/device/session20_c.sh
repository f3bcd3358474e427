#!/usr/bin/env bash
# Device call 3 of session 20: the compute path's schedule at small host ratios. Call 2 found the
# host side bound by its bytes in flight (one cluster per host m-tile; host stages 4 / 2 / 1: 515 /
# 806 / 911 us per Llama-2-7B layer at 0.5 %) and slowed by the HBM side's (HBM stages 6 / 4: 583 /
# 516 us); clusters of 2 (all 132 SMs) beat clusters of 4 (120 SMs) there. Grid: max cluster 2 / 4
# x HBM stages 6 / 5 / 4, every model, N = 512, x = 0.5 / 2 / 10 %. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for c in 2 4; do
  for hs in 6 5 4; do
    DAK_GEMM_HBM_STAGES=$hs timeout 120 build-gpu/dak bench gemm --tokens 512 --ratios 0.5,2,10 --runs 5 --max-cluster $c \
      --json "$OUT/c$c-h$hs.json" > /tmp/g.txt 2>&1
    echo "c$c h$hs rc=$? ($(( $(date +%s) - t0 )) s)"
    grep -E "\| 512 \| [0-9.]+ \|" /tmp/g.txt | awk -F'|' -v l="c$c h$hs" '{print l " |" $2 "|" $3 "|" $4 "|" $8 "|" $11 "|" $15}' >> "$OUT/grid.txt"
  done
done
echo "--- summary"
python3 - "$OUT/grid.txt" <<'PY'
import sys, collections
t = collections.OrderedDict()
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split('|')]
    key = (f[1], f[2], f[3], f[4]); t.setdefault(key, {})[f[0]] = f[5].split()[0]
cols = ["c2 h6", "c2 h5", "c2 h4", "c4 h6", "c4 h5", "c4 h4"]
print("model method op x | " + " | ".join(cols))
for k, v in t.items(): print(" ".join(k) + " | " + " | ".join(v.get(c, "-") for c in cols))
PY
echo "total $(( $(date +%s) - t0 )) s"
