#!/usr/bin/env bash
# Device calls of session 21: the planner prices auto plans with staged linears by the engine's copy
# pipeline and counts their ring as the engine allocates it (docs/planner.md §2), so the issue-7
# offload points are re-measured against the new predictions, every mode at Llama-2-7B batch 512 /
# 10 %, and the matrix of global ratios {0, 10, 30, 60} % at batch 8 and 512 (`dak bench`, random
# weights, prompt 32, gen 8, 5 repeats). PARTS picks: tests l7 opt67 (call 1), opt30 capacity
# (call 2). JSON of every run merged into $OUT/offload.json, text into $OUT/offload.txt.
# Usage from the repo root: PARTS="tests l7 opt67" bash tools/device/session21.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
parts=${PARTS:-tests l7 opt67}
dak_build dak dak_gpu_tests
run() {  # label, seconds, flags (each run gives --gen-len)...
  local label=$1 limit=$2; shift 2
  timeout "$limit" build-gpu/dak bench --random-weights --repeats 5 --json "/tmp/s21-$label.json" "$@" > "/tmp/s21-$label.txt" 2> "/tmp/s21-$label.log"
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "error|fix" "/tmp/s21-$label.log" | head -3
  { echo "=== $label: $*"; cat "/tmp/s21-$label.txt"; } >> "$OUT/offload.txt"
}
[[ $parts == *tests* ]] && dak_gpu_tests 60 4
if [[ $parts == *l7* ]]; then
  run l7-b512-auto 120 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
  for m in prefetch direct zero-copy; do run l7-b512-$m 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload $m; done
  run l7-b8-auto 90 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
fi
if [[ $parts == *opt67* ]]; then
  run opt67-b8-auto 90 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
  run opt67-flexgen 60 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 1
  run opt67-b512-auto 120 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
fi
if [[ $parts == *opt30* ]]; then
  run opt30-b8-auto 170 --model opt-30b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
  run opt30-flexgen 90 --model opt-30b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 4.6
  run opt30-b512-auto 200 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3
fi
if [[ $parts == *capacity* ]]; then
  run opt30-capacity 150 --model opt-30b --batch 96 --prompt-len 512 --gen-len 8 --gpu-memory 100GiB
fi
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
echo "--- summary (TPOT ms, predicted, TPOT/pred, floor, TPOT/floor)"
[[ $parts == *tests* ]] && grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
awk '/^=== /{label=$2} /^\| [0-9]+ \| [0-9.]+ \| [0-9.]+ \|/{n=split($0,c,"|"); print label, "ratio", c[3], "host%", c[4], "TPOT", c[8], "pred", c[9], "t/p", c[10], "floor", c[11], "t/f", c[12]}' "$OUT/offload.txt"
echo "total $(( $(date +%s) - t0 )) s"
