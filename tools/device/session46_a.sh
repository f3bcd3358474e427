#!/usr/bin/env bash
# Session 46 (issue 5): does the HBM side's tail come from the fixed stride of items per persistent
# warp? Session 45's trace (H100) had the HBM warps of one round of equal items end 33 / 45 / 53 us
# (min / p50 / max, Llama-3-8B 64 x 512 at x*) and OPT-30B 64 x 512's 6.8 rounds 176 / 294 / 319.
# A/B switches (planner only, the kernel is unchanged):
#   DAK_ATTN_HBM_WAVES=1  one HBM CTA per 4 items: the block scheduler hands items to SM slots as
#                         they free up (dynamic balance, no counters) at the cost of a CTA start each;
#   DAK_ATTN_SPLITS=4 / 8 4 or 8 splits (4: finer items at batch 64, merged in the CTA; at batch 8,
#                         fewer than the plan's 16, so no combine kernel).
# Prediction (H100): x = 0 and x* of the 64 x 512 cells +3 to +8 points with waves (the tail is
# ~1.1-1.2 x the median end), more with 4 splits where one round is all there is (Llama-3-8B);
# long-context cells (1 or 2 rounds of long items) within +-2. First the tiered attention's gpu
# tests under DAK_ATTN_HBM_WAVES=1 (bits and reference with CTAs in waves). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
DAK_ATTN_HBM_WAVES=1 dak_gtest 'TieredAttention*' 150
# One sweep per configuration: every cell, x = 0, 1/8 and the balance point (where the HBM side
# matters; the host-bound points are left out to save time). Cells whose schedule a switch does not
# change (one round of items) are the noise control.
for cfg in "base X=1" "waves DAK_ATTN_HBM_WAVES=1" "split4 DAK_ATTN_SPLITS=4" \
           "waves+split4 DAK_ATTN_HBM_WAVES=1 DAK_ATTN_SPLITS=4" "split8 DAK_ATTN_SPLITS=8"; do
  set -- $cfg; label=$1; shift; envs="$*"
  left 90 || break
  dak_att_rows "$label r${ROUND:-1}" "$envs" --ratios 0,1/8 --max-kv-gib 60
done | tee "$OUT/waves.txt"
# Summary: % of ideal per cell and configuration, the mean of the rounds.
python3 - "$OUT/waves.txt" <<'PY'
import sys, collections
v = collections.defaultdict(list); cfgs = []
for line in open(sys.argv[1]):
    head, _, rest = line.partition('|')
    f = [x.strip() for x in rest.split('|')]
    h = head.split()
    if len(h) < 3 or len(f) < 5: continue
    cfg = h[0]
    if cfg not in cfgs: cfgs.append(cfg)
    v[(h[2], f[0], f[1], f[2]), cfg].append(float(f[4].rstrip(' %')))
cells = sorted({k[0] for k in v}, key=lambda c: (c[0], int(c[1]), int(c[2]), int(c[3].split()[0])))
print("| model | B | ctx | b_h | " + " | ".join(cfgs) + " |")
for c in cells:
    print("| " + " | ".join(c) + " | " + " | ".join(
        "%.1f" % (sum(v[c, g]) / len(v[c, g])) if v[c, g] else "-" for g in cfgs) + " |")
PY
# On an H200 with time left: issue 3's decode points (the H200's last are session 43's).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && left 80; then
  dak_tpot X=1 l7 --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32
fi
echo "total $(( $(date +%s) - t0 )) s"
