#!/usr/bin/env bash
# Device call 1 of session 8: where a tiered GEMM launch's fixed ~7 us goes, and the offload points
# under the calibrated planner. Build; every gpu test (4 at a time; the JSON reader and planner
# calibration commits of session 7 had not run on the device); `gemm_probe trace` (per-CTA
# timestamps of the Llama-2-7B decode linears, 2 layers in one graph) with and without PDL; decode
# TPOT of Llama-2-7B (cuBLASLt and tiered); Llama-2-7B at 10 / 30 % offload, batch 8 and 512
# (auto), with the planner's new predictions. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 200 4
timeout 30 build-gpu/gemm_probe trace 2 > "$OUT/trace.txt" 2>&1; echo "trace rc=$?"
DAK_NO_PDL=1 timeout 30 build-gpu/gemm_probe trace 2 > "$OUT/trace-nopdl.txt" 2>&1; echo "trace (no PDL) rc=$?"
dak_l7_decode tiered X=1 tiered
dak_l7_decode cublas X=1 cublas
for b in 8 512; do
  timeout 120 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch $b --prompt-len 32 \
    --gen-len 8 --offload-ratio 0.1,0.3 --offload auto --json "$OUT/bench-l7-b$b-auto.json" > "$OUT/l7-b$b.txt" 2> /dev/null
  echo "l7 b$b rc=$?"; sed -n '/^offload (mode/,/^$/p' "$OUT/l7-b$b.txt" | grep -E "^\|"
done
cat "$OUT/trace.txt"; echo "--- no PDL"; cat "$OUT/trace-nopdl.txt"
echo "total $(( $(date +%s) - t0 )) s"
