#!/usr/bin/env bash
# Session 33, call 10: does leaving SMs free of attention CTAs help the next kernel (o_proj, launched
# early under PDL) more than the attention loses? DAK_ATTN_HBM_CTAS_CAP (experiment) caps the HBM
# CTAs of the tiered attention at 64 / 128 / 192 (plan: 32 at batch 1, 256 at batch 8, 264 at 64).
# Llama-2-7B decode batch 1 / 8 / 64, prompt 32, gen 32, two interleaved rounds. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
run() {
  env $1 timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
    --gen-len 32 2> /dev/null > "/tmp/c-$2.txt"
  grep -E "^\| [0-9]+ \| 32 \| 32" "/tmp/c-$2.txt" | awk -F'|' -v l="$1" '{print l, "batch", $2, "TPOT", $7, "ratio", $10}'
}
for R in 1 2; do
  for v in X=1 DAK_ATTN_HBM_CTAS_CAP=64 DAK_ATTN_HBM_CTAS_CAP=128 DAK_ATTN_HBM_CTAS_CAP=192; do run $v "$R-${v#*=}"; done
done | tee "$OUT/cap.txt"
echo "total $(( $(date +%s) - t0 )) s"
