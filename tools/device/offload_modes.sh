#!/usr/bin/env bash
# Device call: build, every gpu test, then the offload modes side by side (MODES, default
# "direct zero-copy prefetch auto"): `dak bench` Llama-2-7B batch 8 at offload ratios 0.1 / 0.3, and
# OPT-6.7B batch 8 with 1 GiB and 6 GiB on the host. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 120
d=build-gpu/dak
bench() {  # label, flags...
  local label=$1; shift
  timeout 300 $d bench --random-weights --prompt-len 32 --gen-len 32 --repeats 5 --json "$OUT/$label.json" "$@" \
    > "$OUT/$label.txt" 2> "$OUT/$label.log"; echo "bench $label rc=$?"
  sed -n '/^offload (mode/,/^$/p' "$OUT/$label.txt" | grep -E "^\| [0-9]"; grep -E "B_h =" "$OUT/$label.txt" | cut -c1-60
  grep -E "error|fix" "$OUT/$label.log" | head -4
}
modes=${MODES:-direct zero-copy prefetch auto}
for m in $modes; do
  bench l7-$m --model llama-2-7b --batch 8 --offload-ratio 0.1,0.3 --offload $m
  bench opt1-$m --model opt-6.7b --batch 8 --cpu-offload-gb 1 --offload $m
  bench opt6-$m --model opt-6.7b --batch 8 --cpu-offload-gb 6 --offload $m
done
echo "total $(( $(date +%s) - t0 )) s"
