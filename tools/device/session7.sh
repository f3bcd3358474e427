#!/usr/bin/env bash
# Device call (session 7): the split reduction with a fixed reducer and PDL for the decode step's
# small kernels. Build; every gpu test (4 at a time); the probe (k_splits per decode linear, and the
# fixed-cost shapes) with and without PDL; `dak bench gemm --quick --tokens 8`; decode TPOT of
# Llama-2-7B at batch 1 and 8 with --gemm tiered / cublas, and cublas with DAK_NO_PDL=1.
# (Calls 1 and 3 of docs/results/2026-12-02/session7.) Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 200 4
timeout 60 build-gpu/gemm_probe > "$OUT/probe.txt" 2>&1; echo "probe rc=$?"
DAK_NO_PDL=1 timeout 60 build-gpu/gemm_probe > "$OUT/probe-nopdl.txt" 2>&1; echo "probe (no PDL) rc=$?"
timeout 60 build-gpu/dak bench gemm --quick --tokens 8 --json "$OUT/gemm-quick-n8.json" > /dev/null 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$?"; grep -iE "error" "$OUT/quick.log" | head -3; rm -f "$OUT/quick.log"
dak_l7_decode tiered X=1 tiered
dak_l7_decode cublas X=1 cublas
dak_l7_decode cublas-nopdl DAK_NO_PDL=1 cublas
paste -d'|' "$OUT/probe.txt" <(cut -d'|' -f2 "$OUT/probe-nopdl.txt")
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick-n8.json"
echo "total $(( $(date +%s) - t0 )) s"
