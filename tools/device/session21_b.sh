#!/usr/bin/env bash
# Device call 3 of session 21: the staging ring with three slots (the copy of staged linear k waits
# for the GEMM of k - 3, not k - 2) against two (DAK_STAGING_SLOTS=2, same binary), at the batch-512
# 10 % points where call 1 measured 1.06-1.08 x the floor (Llama-2-7B, OPT-6.7B, OPT-30B) and the
# Llama-2-7B batch-8 point; FlexGen's OPT points with --cpu-offload-gb now planned as a host amount;
# every gpu test. `dak bench`, random weights, prompt 32, gen 8 (FlexGen: gen 32), auto.
# Usage from the repo root: bash tools/device/session21_b.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
run() {  # label, env, seconds, flags...
  local label=$1 envs=$2 limit=$3; shift 3
  env $envs timeout "$limit" build-gpu/dak bench --random-weights --repeats 5 --json "/tmp/s21-$label.json" "$@" \
    > "/tmp/s21-$label.txt" 2> "/tmp/s21-$label.log"
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "error|fix" "/tmp/s21-$label.log" | head -3
  { echo "=== $label: $envs $*"; cat "/tmp/s21-$label.txt"; } >> "$OUT/offload.txt"
}
for pass in 1 2; do
  for slots in 3 2; do
    run l7-b512-s$slots-p$pass DAK_STAGING_SLOTS=$slots 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  done
done
for slots in 3 2; do
  run opt67-b512-s$slots DAK_STAGING_SLOTS=$slots 60 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  run l7-b8-s$slots DAK_STAGING_SLOTS=$slots 40 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
done
run opt67-flexgen X=1 60 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 1
run opt30-flexgen X=1 90 --model opt-30b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 4.6
for slots in 3 2; do
  run opt30-b512-s$slots DAK_STAGING_SLOTS=$slots 90 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
done
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
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
awk '/^=== /{label=$2} /^\| [0-9]+ \| ([0-9.]+|-) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \|/{n=split($0,c,"|"); print label, "host", c[6], "staged", c[7], "TPOT", c[8], "pred", c[9], "t/p", c[10], "floor", c[11], "t/f", c[12]}' "$OUT/offload.txt"
echo "total $(( $(date +%s) - t0 )) s"
