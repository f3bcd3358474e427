#!/usr/bin/env bash
# Session 46, second call (same warm machine after session46_a.sh): the full `dak bench attention`
# sweep with the default plan and with DAK_ATTN_HBM_WAVES=1 (one HBM CTA per 4 items, in waves),
# then the points whose share of ideal differs by more than 1 point, and both target lines.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak
for v in base waves; do
  left 200 || break
  [ $v = waves ] && e=DAK_ATTN_HBM_WAVES=1 || e=X=1
  env $e timeout 230 build-gpu/dak bench attention > "$OUT/attention-$v.txt" 2>&1
  echo "attention $v rc=$?"; grep -E "^targets|^B_" "$OUT/attention-$v.txt"
done
python3 - "$OUT/attention-base.txt" "$OUT/attention-waves.txt" <<'PY'
import sys
def rows(path):
    r = {}
    try:
        for line in open(path):
            f = [x.strip() for x in line.split('|')]
            if len(f) > 13 and f[5] == 'tiered':
                r[(f[1], f[2], f[3], f[6])] = (float(f[12].rstrip(' %')), f[8].split(' ')[0])
    except OSError:
        pass
    return r
a, b = rows(sys.argv[1]), rows(sys.argv[2])
print("| model | B | ctx | b_h | base % | waves % | base ms | waves ms |")
for k in a:
    if k in b and abs(a[k][0] - b[k][0]) > 1.0:
        print("| %s | %s | %s | %s | %.1f | %.1f | %s | %s |" % (k + (a[k][0], b[k][0], a[k][1], b[k][1])))
PY
echo "total $(( $(date +%s) - t0 )) s"
