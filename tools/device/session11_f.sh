#!/usr/bin/env bash
# Device call 7 of session 11: FlexGen's own OPT points on this GPU (dummy weights, batch 8, prompt
# 32, gen 32: OPT-6.7B at 0 / 1 / 6 GiB on the host, OPT-30B at 0 / 4.6 GiB; FlexGen measured 28.6 /
# 37.1 / 125.7 and 38.0 / 124.8 ms TPOT) with --offload auto, and Llama-2-7B batch 8 at 30 %.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
fx() {  # LABEL SECONDS FLAGS...: like dak_offload_bench, gen 32 (FlexGen's setting)
  local label=$1 limit=$2; shift 2
  timeout "$limit" build-gpu/dak bench --random-weights --repeats 5 --batch 8 --prompt-len 32 --gen-len 32 \
    --json "/tmp/bench-$label.json" "$@" > "/tmp/$label.txt" 2> /dev/null
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "^\| 8 \| 32 \| 32 \|" "/tmp/$label.txt" | cut -d'|' -f2-8
  sed -n '/^offload (mode/,/^$/p' "/tmp/$label.txt" | grep -E "^\| [0-9]"
  { echo "=== $label: $*"; cat "/tmp/$label.txt"; } >> "$OUT/offload.txt"
}
fx opt67-0 60 --model opt-6.7b --offload none
fx opt67-1g 60 --model opt-6.7b --cpu-offload-gb 1
fx opt67-6g 90 --model opt-6.7b --cpu-offload-gb 6
fx opt30-0 120 --model opt-30b --offload none
fx opt30-4.6g 150 --model opt-30b --cpu-offload-gb 4.6
fx l7-30 90 --model llama-2-7b --offload-ratio 0.3
python3 - "$OUT/offload.json" /tmp/bench-*.json <<'PY'
import json, sys
json.dump({f.split('bench-')[1][:-5]: json.load(open(f)) for f in sys.argv[2:]}, open(sys.argv[1], 'w'), indent=1)
PY
echo "total $(( $(date +%s) - t0 )) s"
