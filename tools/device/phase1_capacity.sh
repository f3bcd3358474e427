#!/usr/bin/env bash
# Device call (session 6): (1) what phase 1 of the planner's greedy (memory-bound linears at their
# balance point even without capacity pressure) costs: Llama-2-7B batch 8, prompt 32, gen 32 with
# --offload none, --offload-ratio 0 (now exactly nothing on the host) and auto without a ratio or
# budget (phase 1's host rows); (2) issue 7's capacity-driven run: OPT-30B, --gpu-memory 100GiB,
# prompt 512, batch 48 and 96 (KV grows with batch x prompt; the ratio comes from capacity).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
d=build-gpu/dak
bench() {  # label, seconds, flags...
  local label=$1 limit=$2; shift 2
  timeout "$limit" $d bench --random-weights --repeats 5 --json "$OUT/bench-$label.json" "$@" > "$OUT/$label.txt" \
    2> "$OUT/$label.log"
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/$label.log" | head -3
  grep -E "^\| [0-9]+ \| [0-9]+ \| [0-9]+ \|" "$OUT/$label.txt" | head -4
  sed -n '/^offload (mode/,/^$/p' "$OUT/$label.txt" | grep -E "^\| [0-9]"
  grep -E "^\| (qkv_proj|o_proj|mlp_up|mlp_down) " "$OUT/$label.txt" | head -4
}
l7="--model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32"
bench l7-b8-none 100 $l7 --offload none
bench l7-b8-ratio0 100 $l7 --offload-ratio 0
bench l7-b8-auto 100 $l7
bench opt30-capacity 330 --model opt-30b --batch 48,96 --prompt-len 512 --gen-len 8 --gpu-memory 100GiB
rm -f "$OUT"/*.log
echo "total $(( $(date +%s) - t0 )) s"
