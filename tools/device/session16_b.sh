#!/usr/bin/env bash
# Device call 2 of session 16: why the tiered attention's all-HBM side reaches only ~78 % of B_g at
# Llama-2-7B batch 8, context 4096 (issue 5). `dak bench attention` at that cell for HBM ring depths
# 2 / 3 (default) / 4 / 6, Nsight Compute (speed of light, memory, warp states, scheduler) on one
# launch of the default schedule, and its top SASS stall locations. Also the two cpu tests that failed
# on this machine in call 1, verbose (they need the default model, which is not here). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_cpu_tests
build-gpu/tests/dak_cpu_tests --gtest_filter='Cli.JsonOutputSurvivesTextThatIsNotUtf8:Cli.MessagesNameWhatTheUserGave' \
  > "$OUT/cli-tests.txt" 2>&1; echo "cli tests rc=$?"; grep -E "Failure|missing|FAILED|OK" "$OUT/cli-tests.txt" | head -12
cell="--models llama-2-7b -b 8 --ctx 512,4096,32768 --ratios 0 --no-balance-point --hbm-buffer-gib 1 --hbm-runs 3"
for st in 0 2 4 6; do
  timeout 100 build-gpu/dak bench attention $cell --hbm-stages $st > "/tmp/att-$st.txt" 2>&1
  echo "hbm-stages $st rc=$?"; grep -E "^\| llama" "/tmp/att-$st.txt" | cut -c1-150
  cat "/tmp/att-$st.txt" >> "$OUT/att-stages.txt"
done
sec="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy"
one="--models llama-2-7b -b 8 --ctx 4096 --ratios 0 --no-balance-point --hbm-buffer-gib 0.25 --hbm-runs 1 -r 5"
timeout 150 ncu --clock-control none $sec -k regex:tiered_attention_kernel --launch-skip 3 --launch-count 1 \
  build-gpu/dak bench attention $one > "$OUT/ncu-att.txt" 2>&1
echo "ncu rc=$?"
grep -E "DRAM Throughput|Memory Throughput|Duration|Stall|Issued Warp|No Eligible|Active Warps|Eligible Warps|L2 Hit|L1/TEX Hit|Mem Busy|Max Bandwidth|Warp Cycles Per|Registers Per|Achieved Occupancy|Theoretical Occ|Block Limit" "$OUT/ncu-att.txt" | head -40
timeout 150 ncu --clock-control none --section SourceCounters --page source --print-source sass --csv \
  -k regex:tiered_attention_kernel --launch-skip 3 --launch-count 1 build-gpu/dak bench attention $one > "$OUT/ncu-src.csv" 2> /dev/null
python3 tools/device/ncu_top_stalls.py "$OUT/ncu-src.csv" 25
echo "total $(( $(date +%s) - t0 )) s"
