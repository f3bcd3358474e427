#!/usr/bin/env bash
# Device call 1 of session 13: where a decode step's time goes inside the CUDA graph. Builds dak and
# the CUPTI timeline library (tools/timeline/), runs Llama-2-7B decode (batch 1 and 8, tiered GEMM
# via --gemm auto, then cuBLASLt) under it and summarizes each graph: per-kernel increments of the
# critical path (end - previous end) and one steady-state layer. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
tl() {  # tl NAME DAK-BENCH-ARGS...: one traced run, its summary into $OUT/timeline-NAME.txt
  local name=$1; shift
  CUDA_INJECTION64_PATH=$PWD/build-gpu/libdak_timeline.so DAK_TIMELINE_OUT=/tmp/tl-$name.csv \
    timeout 120 build-gpu/dak bench --random-weights --model llama-2-7b --prompt-len 32 --gen-len 16 --repeats 5 "$@" \
    > "$OUT/bench-$name.txt" 2>&1
  echo "traced $name rc=$? ($(( $(date +%s) - t0 )) s)"
  python3 tools/timeline/summarize.py /tmp/tl-$name.csv --min-replays 20 > "$OUT/timeline-$name.txt" 2>&1
  grep -E "^\| [0-9]+ \| 32 \| 16" "$OUT/bench-$name.txt"
}
tl b1-auto --batch 1 --gemm auto
tl b8-auto --batch 8 --gemm auto
tl b1-cublas --batch 1 --gemm cublas
dak_l7_decode auto X=1 auto
for f in "$OUT"/timeline-*.txt; do echo "=== $f"; head -60 "$f"; done
echo "total $(( $(date +%s) - t0 )) s"
