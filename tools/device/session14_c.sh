#!/usr/bin/env bash
# Device call 3 of session 14: W stages requested before the dependency wait (DAK_EARLY_W), swept
# over every decode GEMM (1-4 of the 5-stage ring) and per operator; timelines at 2. No code change
# since call 2 (tests not rerun). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
E="qkv_proj=%d,o_proj=%d,mlp_up=%d,mlp_down=%d"
dak_timeline b1-all2 DAK_EARLY_W=$(printf $E 2 2 2 2) --batch 1
dak_timeline b8-all2 DAK_EARLY_W=$(printf $E 2 2 2 2) --batch 8
dak_l7_decode base X=1 auto
for n in 1 2 3 4; do dak_l7_decode all$n DAK_EARLY_W=$(printf $E $n $n $n $n) auto; done
dak_l7_decode norm2 DAK_EARLY_W=qkv_proj=2,mlp_up=2 auto
dak_l7_decode q2o2u2d1 DAK_EARLY_W=$(printf $E 2 2 2 1) auto
dak_l7_decode q1o2u1d2 DAK_EARLY_W=$(printf $E 1 2 1 2) auto
dak_l7_decode all2b DAK_EARLY_W=$(printf $E 2 2 2 2) auto
dak_l7_decode base2 X=1 auto
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
