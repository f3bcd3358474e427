#!/usr/bin/env bash
# Device call 5 of session 19, the landing tree: every gpu test (GpuEngine's refused-KV check now
# tolerant of the other tests' allocations), the issue-4 sweep (`dak bench gemm`, every model, N and
# ratio, JSON + CSV), Llama-2-7B batch 8 at 10 % offload, and for the next session Nsight Compute's
# stall samples of the 128 x 128 tile on Llama-2-7B's qkv (12288 x 4096, N = 512). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 60 4
timeout 200 build-gpu/dak bench gemm --json "$OUT/gemm.json" --csv "$OUT/gemm.csv" > "$OUT/gemm.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
timeout 120 ncu --clock-control none --section SpeedOfLight --section SourceCounters --page source --print-source sass --csv \
  -k regex:tiered_gemm_kernel --launch-skip 10 --launch-count 1 build-gpu/gemm_probe tiles 12288 4096 512 128 1 \
  > /tmp/ncu-src.csv 2> /dev/null
echo "ncu rc=$?"
python3 tools/device/ncu_top_stalls.py /tmp/ncu-src.csv 20 > "$OUT/ncu-narrow-stalls.txt"
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
grep -E "^targets:|^B_g|^B_h" "$OUT/gemm.txt" | head -4
grep -E "\| 512 \| 0 \|" "$OUT/gemm.txt" | cut -c1-200
grep -E "^=== |^\| 8 \| 0.1" "$OUT/offload.txt" | cut -c1-160
head -12 "$OUT/ncu-narrow-stalls.txt"
echo "total $(( $(date +%s) - t0 )) s"
