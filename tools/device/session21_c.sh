#!/usr/bin/env bash
# Device call 4 of session 21: the staging ring at 3 slots (default) against 4 (DAK_STAGING_SLOTS=4,
# same binary) at Llama-2-7B / OPT-6.7B batch 512, 10 %; Llama-2-70B bf16 on one H200 with the rest
# in host memory (batch 8, gen 4, --gpu-memory 100GiB, auto); decode without offload (batch 1 / 8, issue
# 3's points). `dak bench`, random weights, prompt 32. Usage: bash tools/device/session21_c.sh.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
run() {  # label, env, seconds, flags...
  local label=$1 envs=$2 limit=$3; shift 3
  env $envs timeout "$limit" build-gpu/dak bench --random-weights --repeats 5 --json "/tmp/s21-$label.json" "$@" \
    > "/tmp/s21-$label.txt" 2> "/tmp/s21-$label.log"
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "error|fix" "/tmp/s21-$label.log" | head -3
  { echo "=== $label: $envs $*"; cat "/tmp/s21-$label.txt"; } >> "$OUT/offload.txt"
}
for pass in 1 2; do
  for slots in 3 4; do
    run l7-b512-s$slots-p$pass DAK_STAGING_SLOTS=$slots 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  done
done
for slots in 3 4; do
  run opt67-b512-s$slots DAK_STAGING_SLOTS=$slots 60 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
done
dak_l7_decode base X=1 auto
dak_bundle_decode
run l70-b8 X=1 200 --model llama-2-70b --batch 8 --prompt-len 32 --gen-len 4 --gpu-memory 100GiB
python3 - "$OUT/offload.json" /tmp/s21-*.json <<'PY'
import json, os, sys
out = {}
for f in sys.argv[2:]:
    try:
        out[os.path.basename(f)[4:-5]] = json.load(open(f))
    except Exception as e:
        out[os.path.basename(f)] = {"error": str(e)}
json.dump(out, open(sys.argv[1], "w"), indent=1)
PY
echo "--- summary (host GB/step, staged GB/step, TPOT ms, predicted, TPOT/pred, floor, TPOT/floor)"
awk '/^=== /{label=$2} /^\| [0-9]+ \| ([0-9.]+|-) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|/{n=split($0,c,"|"); print label, "host", c[6], "staged", c[7], "TPOT", c[8], "pred", c[9], "t/p", c[10], "floor", c[11], "t/f", c[12]}' "$OUT/offload.txt"
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt"
grep -E "^\| 8 \| 32 \| 4" /tmp/s21-l70-b8.txt
echo "total $(( $(date +%s) - t0 )) s"
