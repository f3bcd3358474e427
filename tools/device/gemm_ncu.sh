#!/usr/bin/env bash
# Device call: build dak (all targets), the tiered GEMM probe; Nsight Compute on two decode
# shapes of the probe (one kernel launch each) and the top stall locations of a split case; then
# every gpu test (60 s limit each).
# Carry: third_party. Usage from the repo root: bash tools/device/gemm_ncu.sh
set -uo pipefail
source tools/device/common.sh
dak_build
dak_build_probe
echo "build $(( $(date +%s) - t0 )) s"
build-gpu/gemm_probe
sec="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters"
i=0
for c in "22016 1 4096 1 0" "4096 8 11008 0 0"; do
  i=$((i + 1))
  timeout 120 ncu --clock-control none $sec -k regex:tiered_gemm --launch-skip 3 --launch-count 1 \
    build-gpu/gemm_probe $c > "$OUT/ncu$i.txt" 2>&1
  echo "ncu $c rc=$?"
  grep -E "DRAM Throughput|Memory Throughput|Duration|Stall|Issued Warp|No Eligible|Active Warps|Eligible Warps|L2 Hit|Mem Busy|Max Bandwidth|Warp Cycles Per" "$OUT/ncu$i.txt" | head -40
done
# Top SASS stall locations (sampled) of a split case.
timeout 120 ncu --clock-control none --section SourceCounters --page source --print-source sass --csv \
  -k regex:tiered_gemm --launch-skip 3 --launch-count 1 build-gpu/gemm_probe 32000 1 4096 4 0 > "$OUT/ncu-src.csv" 2> /dev/null
python3 tools/device/ncu_top_stalls.py "$OUT/ncu-src.csv" 20
dak_gpu_tests 60
echo "total $(( $(date +%s) - t0 )) s"
