#!/usr/bin/env bash
# Device call (session 9, after the review): build; every gpu test (4 at a time; uneven K splits
# added); the probe on few-tile shapes with the default k_splits against S = 1 (the split model's
# epilogue price); `dak bench gemm --quick` at N = 8 (the bandwidth path's host CTAs now capped at one
# stage each under the in-flight cap). Carry: third_party and models/.p1 (the default model's first
# part, for tools/device/model_check.sh in the next call).
set -uo pipefail
source tools/device/common.sh
dak_build
dak_build_probe
dak_gpu_tests 200 4
for c in "64 8 16384" "130 8 8200" "64 8 5640" "4096 8 4096" "4096 1 11008"; do
  for sp in 0 1; do timeout 20 build-gpu/gemm_probe $c $sp 0 | tail -n 1; done
done
timeout 90 build-gpu/dak bench gemm --quick --tokens 8 --json "$OUT/gemm-quick-n8.json" > /dev/null 2> /tmp/quick.log
echo "bench gemm --quick rc=$?"; grep -iE "error" /tmp/quick.log | head -3
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick-n8.json" 2> /dev/null | head -12
echo "total $(( $(date +%s) - t0 )) s"
