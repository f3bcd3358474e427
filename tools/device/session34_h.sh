#!/usr/bin/env bash
# Session 34, call 10: a deeper HBM ring for the tiered attention where its HBM CTAs fit one per SM
# (DAK_ATTN_DEEP_RING=0 keeps the 2-per-SM ring). Build; every gpu test; then two interleaved rounds,
# Llama-2-7B decode batch 1 / 8 / 16 (prompt 32, gen 32: 4 stages at batch 8 and 16, unchanged at 1)
# and Llama-3-8B batch 8. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
run() {  # run ENV LABEL ARGS...
  local envs=$1 label=$2; shift 2
  env $envs timeout 90 build-gpu/dak bench --random-weights --repeats 5 "$@" 2> /dev/null > "/tmp/r-$label.txt"
  grep -E "^\| [0-9]+ \| 32 \| " "/tmp/r-$label.txt" | awk -F'|' -v l="$label" '{print l, "batch", $2, "TPOT", $7, "ratio", $10}'
}
for R in 1 2; do
  for v in X=1 DAK_ATTN_DEEP_RING=0; do
    run $v l7-$R-${v%%=*} --model llama-2-7b --batch 1,8,16 --prompt-len 32 --gen-len 32
    run $v l3-$R-${v%%=*} --model llama-3-8b --batch 8 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/ring.txt"
echo "total $(( $(date +%s) - t0 )) s"
