#!/usr/bin/env bash
# Session 34, call 11: the tiered attention's HBM ring trimmed to the steps a warp walks (one step at
# batch 1 at 64 keys: 1 stage, 35 KB instead of 104 KB, so o_proj's early CTAs fit beside it);
# DAK_ATTN_TRIM_RING=0 keeps the full ring. Build; every gpu test; two interleaved rounds of
# Llama-2-7B batch 1 / 8 and Llama-3-8B batch 1 / 8 decode (prompt 32, gen 32). Carry: third_party.
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
  for v in X=1 DAK_ATTN_TRIM_RING=0; do
    run $v l7-$R-${v%%=*} --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
    run $v l3-$R-${v%%=*} --model llama-3-8b --batch 1,8 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/trim.txt"
echo "total $(( $(date +%s) - t0 )) s"
