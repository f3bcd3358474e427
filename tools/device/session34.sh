#!/usr/bin/env bash
# Session 34, call 1: does the tiered attention at short contexts run faster with fewer splits
# (fewer CTAs, no CTA merge, SMs left to o_proj's early CTAs)? DAK_ATTN_SPLITS=n (experiment)
# forces n splits (plan: 4 splits of 16 keys at max_ctx 64). Llama-2-7B decode batch 1 / 8 / 64,
# prompt 32, gen 32, two interleaved rounds; and batch 64 with every linear on the tiered GEMM
# (--gemm tiered, the norm-in epilogues) against auto (cuBLASLt above 32 tokens). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
run() {
  env $1 timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch ${3:-1,8,64} \
    --prompt-len 32 --gen-len 32 ${4:-} 2> /dev/null > "/tmp/c-$2.txt"
  grep -E "^\| [0-9]+ \| 32 \| 32" "/tmp/c-$2.txt" | awk -F'|' -v l="$1 ${4:-}" '{print l, "batch", $2, "TPOT", $7, "ratio", $10}'
}
for R in 1 2; do
  for v in X=1 DAK_ATTN_SPLITS=1 DAK_ATTN_SPLITS=2; do run $v "$R-${v#*=}"; done
  run X=1 "$R-tiered" 64 "--gemm tiered"
done | tee "$OUT/splits.txt"
cp /tmp/c-1-1.txt "$OUT/bench-default.txt"
cp /tmp/c-1-tiered.txt "$OUT/bench-tiered64.txt"
echo "total $(( $(date +%s) - t0 )) s"
