#!/usr/bin/env bash
# Device call 2 of session 26 (right after session26.sh, on the same warm machine and build): the
# quick issue-4 / issue-5 benchmarks (`dak bench gemm --quick`, `dak bench attention --quick`) and
# the README's offload example. Carries the second model part. Carry: models/.p2.
set -uo pipefail
source tools/device/common.sh
[[ -x build-gpu/dak ]] || dak_build dak
timeout 200 build-gpu/dak bench gemm --quick --json "$OUT/gemm.json" > "$OUT/gemm.txt" 2> "$OUT/gemm.log"; echo "bench gemm rc=$?"
timeout 200 build-gpu/dak bench attention --quick --json "$OUT/attention.json" > "$OUT/attention.txt" 2> "$OUT/attention.log"
echo "bench attention rc=$?"
timeout 60 build-gpu/dak generate --model llama-2-7b --random-weights --prompt-ids 1,2,3 -n 8 --cpu-offload-gb 4 \
  > "$OUT/gen-offload.txt" 2> "$OUT/gen-offload.err"; echo "generate --cpu-offload-gb 4 rc=$?"; tail -n 3 "$OUT/gen-offload.err"
tail -n 25 "$OUT/gemm.txt"; tail -n 25 "$OUT/attention.txt"
echo "total $(( $(date +%s) - t0 )) s"
