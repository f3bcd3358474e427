#!/usr/bin/env bash
# Device call 1 of session 19: the landing tree of session 18 (every gpu test: the CTA merge's
# len_of() refactor was not run; `dak bench gemm` at x = 0, N = 256 / 512 with the refitted tile
# rule = session18_g.sh), then why the compute path loses to cuBLASLt on Llama-2-7B's shapes at
# N = 512: `gemm_probe tiles` (random inputs) on the four linears, and Nsight Compute on gate_up
# (22016 x 4096, N = 512) for cuBLASLt's kernel, the 128 x 256 and the 128 x 128 tile.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 60 4
timeout 90 build-gpu/dak bench gemm --tokens 256,512 --ratios 0 > "$OUT/gemm-auto.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
for mk in "12288 4096" "4096 4096" "22016 4096" "4096 11008"; do
  timeout 60 build-gpu/gemm_probe tiles $mk 512 >> "$OUT/tiles.txt" 2>&1
done
echo "tiles rc=$? ($(( $(date +%s) - t0 )) s)"
sec="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy"
timeout 90 ncu --clock-control none $sec --launch-skip 10 --launch-count 2 build-gpu/gemm_probe tiles 22016 4096 512 1 1 \
  > "$OUT/ncu-cublas.txt" 2>&1
echo "ncu cublas rc=$?"
for v in "256 1" "128 1"; do
  timeout 90 ncu --clock-control none $sec -k regex:tiered_gemm_kernel --launch-skip 10 --launch-count 1 \
    build-gpu/gemm_probe tiles 22016 4096 512 $v > "$OUT/ncu-${v// /-}.txt" 2>&1
  echo "ncu $v rc=$?"
done
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
grep -E "^\| [a-z0-9-]+ \| (stack8|gemm) " "$OUT/gemm-auto.txt" | awk -F'|' '{print $2 "|" $3 "|" $4 "|" $7 "|" $11 "|" $16}'
grep -vE "^us per|^ +M " "$OUT/tiles.txt"
for f in "$OUT"/ncu-*.txt; do
  echo "== $(basename $f)"
  grep -E "^  [a-zA-Z_0-9]+.*\(|SM Frequency|Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Issue Slots Busy|Executed Ipc A|No Eligible|Warp Cycles Per Issued|Registers Per|Grid Size|Block Size|Dynamic Shared|Cluster Size|Stall|Tensor|Mem Busy|Max Bandwidth|L1/TEX Hit|L2 Hit" "$f" | head -40
done
echo "total $(( $(date +%s) - t0 )) s"
