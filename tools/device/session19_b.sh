#!/usr/bin/env bash
# Device call 2 of session 19: why the 128 x 256 tile's tensor pipe idles ~37 % of its active
# cycles (call 1: 53.6 % of elapsed, cuBLASLt's nvjet 168 x 128 kernel 93 %). Nsight Compute's
# per-instruction stall samples on Llama-2-7B gate_up (22016 x 4096, N = 512), and the main loop with
# W resident in L2 (4224 x 4096, N = 1024: one wave of 128 x 256 units, 43 MB with x) against W
# streamed from HBM (8 copies). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
for c in 8 1; do
  DAK_PROBE_COPIES=$c timeout 60 build-gpu/gemm_probe tiles 4224 4096 1024 > "$OUT/l2-$c.txt" 2>&1
  echo "copies $c rc=$?"; grep -vE "^us per|^ +M " "$OUT/l2-$c.txt"
done
sec="--section SpeedOfLight --section WarpStateStats --section SchedulerStats"
timeout 90 ncu --clock-control none $sec -k regex:tiered_gemm_kernel --launch-skip 10 --launch-count 1 \
  build-gpu/gemm_probe tiles 22016 4096 512 256 1 > "$OUT/ncu-256.txt" 2>&1
echo "ncu rc=$?"
timeout 150 ncu --clock-control none --section SourceCounters --page source --print-source sass --csv \
  -k regex:tiered_gemm_kernel --launch-skip 10 --launch-count 1 build-gpu/gemm_probe tiles 22016 4096 512 256 1 \
  > "$OUT/ncu-src.csv" 2> /dev/null
echo "ncu src rc=$?"
echo "--- summary"
grep -E "Stall|Issued Warp|No Eligible|Active Warps|Eligible Warps|Warp Cycles Per|One or More" "$OUT/ncu-256.txt" | head -30
python3 tools/device/ncu_top_stalls.py "$OUT/ncu-src.csv" 30
echo "total $(( $(date +%s) - t0 )) s"
