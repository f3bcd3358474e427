#!/usr/bin/env bash
# Device call (session 8): the tiered GEMM's wide stages (64 x 256 k-blocks, one TMA box per operand
# and stage). Build; every gpu test (4 at a time); the probe (decode linears with k_splits 1-4,
# fixed-cost shapes) and its trace of two decode layers; Llama-2-7B decode TPOT with --gemm tiered
# and cublas; `dak bench gemm --quick` at N = 8. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 200 4
timeout 60 build-gpu/gemm_probe > "$OUT/probe.txt" 2>&1; echo "probe rc=$?"
timeout 30 build-gpu/gemm_probe trace 2 > "$OUT/trace.txt" 2>&1; echo "trace rc=$?"
dak_l7_decode tiered X=1 tiered
dak_l7_decode cublas X=1 cublas
timeout 90 build-gpu/dak bench gemm --quick --tokens 8 --json "$OUT/gemm-quick-n8.json" > "$OUT/quick.txt" 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$?"; grep -iE "error" "$OUT/quick.log" | head -3; rm -f "$OUT/quick.log"
cat "$OUT/probe.txt"; cut -c1-150 "$OUT/trace.txt"
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick-n8.json"
echo "total $(( $(date +%s) - t0 )) s"
