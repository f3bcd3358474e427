#!/usr/bin/env bash
# Device call 4 of session 14: around 3 early W stages (call 3's best), per operator, repeated;
# timelines at 3; the offload points under it. No code change since call 2. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
E="qkv_proj=%d,o_proj=%d,mlp_up=%d,mlp_down=%d"
dak_timeline b1-all3 DAK_EARLY_W=$(printf $E 3 3 3 3) --batch 1
dak_timeline b8-all3 DAK_EARLY_W=$(printf $E 3 3 3 3) --batch 8
dak_l7_decode base X=1 auto
dak_l7_decode all3 DAK_EARLY_W=$(printf $E 3 3 3 3) auto
dak_l7_decode q3o5u3d3 DAK_EARLY_W=$(printf $E 3 5 3 3) auto
dak_l7_decode q3o3u3d5 DAK_EARLY_W=$(printf $E 3 3 3 5) auto
dak_l7_decode q5o3u5d3 DAK_EARLY_W=$(printf $E 5 3 5 3) auto
dak_l7_decode q2o3u3d3 DAK_EARLY_W=$(printf $E 2 3 3 3) auto
dak_l7_decode q3o3u2d3 DAK_EARLY_W=$(printf $E 3 3 2 3) auto
dak_l7_decode all3b DAK_EARLY_W=$(printf $E 3 3 3 3) auto
dak_l7_decode base2 X=1 auto
dak_offload_bench l7b8-base 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
DAK_EARLY_W=$(printf $E 3 3 3 3) dak_offload_bench l7b8-all3 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
