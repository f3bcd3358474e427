#!/usr/bin/env bash
# Device call for one kernel iteration: build everything, run the gpu tests (60 s limit each),
# `dak bench gemm --quick`, and decode TPOT with the linears on cuBLASLt and on the tiered GEMM
# (Llama-2-7B random weights, prompt 32, gen 32, batch 1/8/64). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60
d=build-gpu/dak
timeout 200 $d bench gemm --quick > "$OUT/gemm.txt" 2> "$OUT/gemm.log"; echo "bench gemm rc=$?"
grep -E "^\| llama" "$OUT/gemm.txt" | cut -d'|' -f 6,8,11,15,17,18 ; tail -n 4 "$OUT/gemm.txt"
DAK_NO_PDL=1 timeout 200 build-gpu/dak bench --model llama-2-7b --random-weights --batch 1,8 --prompt-len 32 --gen-len 32 \
  --repeats 5 --gemm tiered > "$OUT/bench-nopdl.txt" 2>&1; echo "bench --gemm tiered, DAK_NO_PDL=1 rc=$?"
grep -E "^\| (1|8|64) \|" "$OUT/bench-nopdl.txt" | head -3
for g in cublas tiered; do
  timeout 200 $d bench --model llama-2-7b --random-weights --batch 1,8,64 --prompt-len 32 --gen-len 32 \
    --repeats 5 --gemm $g > "$OUT/bench-$g.txt" 2> "$OUT/bench-$g.log"
  echo "bench --gemm $g rc=$?"; grep -E "^\| (1|8|64) \|" "$OUT/bench-$g.txt" | head -3
done
echo "total $(( $(date +%s) - t0 )) s"
