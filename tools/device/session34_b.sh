#!/usr/bin/env bash
# Session 34, call 2: the occupancy-priced attention split rule (default) against the makespan rule
# (DAK_ATTN_SPLIT_RULE=makespan), one binary, two interleaved rounds: Llama-2-7B decode at 64 keys
# (batch 1 / 8 / 16) and 48 keys (batch 1 / 8), Llama-3-8B at 64 keys (batch 1 / 8 / 64), and two
# offload points at batch 8 (prompt 32, gen 8: 10 % auto, and 30 % uniform, which puts 2-3 of the
# 8 sequences' KV on the host in every layer). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
run() {  # run ENV LABEL ARGS...
  local envs=$1 label=$2; shift 2
  env $envs timeout 90 build-gpu/dak bench --random-weights --repeats 5 "$@" 2> /dev/null > "/tmp/r-$label.txt"
  grep -E "^\| [0-9]+ \| " "/tmp/r-$label.txt" | awk -F'|' -v l="$label" '{print l, "batch", $2, "ctx", $3 "+" $4, "off", $5, "TPOT", $7, "floor-ratio", $10}'
}
for R in 1 2; do
  for v in X=1 DAK_ATTN_SPLIT_RULE=makespan; do
    tag=$R-${v%%=*}
    run $v l7-64-$tag --model llama-2-7b --batch 1,8,16 --prompt-len 32 --gen-len 32
    run $v l7-48-$tag --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 16
    run $v l3-64-$tag --model llama-3-8b --batch 1,8,64 --prompt-len 32 --gen-len 32
    run $v off10-$tag --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
    run $v off30u-$tag --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.3 --allocator uniform
  done
done | tee "$OUT/rule.txt"
cp /tmp/r-off30u-1-X.txt "$OUT/off30u.txt"
echo "total $(( $(date +%s) - t0 )) s"
