#!/usr/bin/env bash
# Device call (session 7, last): the tiered attention's default cap 256 -> 512 KiB of host bytes in
# flight (8 host CTAs x 2 steps at D = 128). Build; every gpu test (4 at a time);
# `dak bench attention` at the balance points (Llama-2-7B, batch 64 and 512, context 4096,
# default schedule); Llama-2-7B batch 512 at 10 % offload (auto), whose host bytes are mostly KV
# (session 6: 43.49 ms). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
timeout 60 build-gpu/dak bench attention --models llama-2-7b --batch 64,512 --ctx 4096 --ratios 0,1/8 --max-host-gib 6 \
  --json "$OUT/att-default.json" > "$OUT/att-default.txt" 2> /dev/null
echo "attention rc=$?"; grep -E "^\| llama-2-7b .* tiered" "$OUT/att-default.txt" | cut -d'|' -f3,7,8,9,10,11,12,14
timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 \
  --offload-ratio 0.1 --offload auto --json "$OUT/bench-l7-b512-auto.json" > "$OUT/l7-b512.txt" 2> /dev/null
echo "l7 b512 rc=$?"; sed -n '/^offload (mode/,/^$/p' "$OUT/l7-b512.txt" | grep -E "^\|"
echo "total $(( $(date +%s) - t0 )) s"
