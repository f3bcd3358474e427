#!/usr/bin/env bash
# Device call 9 of session 14: (1) small kernels that trigger the next launch at their exit
# instead of their start (DAK_LATE_TRIGGER: the next GEMM's early W loads then cannot queue in
# front of their loads), Llama-2-7B decode TPOT at batch 1 and 8 per kernel kind; (2) batch 16,
# 32, 64 on the tiered GEMM vs cuBLASLt (`--gemm auto` switches above 16 tokens since session 9).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_l7_decode base X=1 auto
for v in attention rope combine norm activation rope,attention; do dak_l7_decode late-$v DAK_LATE_TRIGGER=$v auto; done
dak_l7_decode base2 X=1 auto
for g in tiered cublas; do
  timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 16,32,64 --prompt-len 32 \
    --gen-len 32 --gemm $g --json "$OUT/bench-l7-wide-$g.json" > "$OUT/l7-wide-$g.txt" 2> /dev/null
  echo "$g rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/l7-wide-$g.txt" | cut -c1-110
done
dak_bundle_decode
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
