#!/usr/bin/env bash
# Device call 6 of session 18: why the 128 x 256 tile, faster alone, is slower in Llama-2-7B's
# 8-layer stack (call 5: 401 vs 365 us per layer at N = 512). The CUPTI kernel timeline of
# `dak bench gemm` (Llama-2-7B, x = 0, N = 512 and 256) with --compute-tile auto and 128: per
# kernel, duration and increment in one steady-state layer of the stack graph. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
for t in auto 128; do
  CUDA_INJECTION64_PATH=$PWD/build-gpu/libdak_timeline.so DAK_TIMELINE_OUT=/tmp/tl-$t.csv \
    timeout 120 build-gpu/dak bench gemm --models llama-2-7b --tokens 256,512 --ratios 0 --compute-tile $t \
    > "$OUT/gemm-$t.txt" 2>&1
  echo "traced $t rc=$? ($(( $(date +%s) - t0 )) s)"
  { echo "=== --compute-tile $t"; python3 tools/timeline/summarize.py /tmp/tl-$t.csv --min-replays 5; } \
    > "$OUT/timeline-$t.txt" 2>&1
done
echo "--- summary"
for t in auto 128; do
  grep -E "^\| llama-2-7b \| stack8" "$OUT/gemm-$t.txt" | cut -c1-120
  grep -E "tiered_gemm|span|layer|graph" "$OUT/timeline-$t.txt" | head -40
done
echo "total $(( $(date +%s) - t0 )) s"
