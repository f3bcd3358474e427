#!/usr/bin/env bash
# Device call 2 of session 10: the split model (o_proj / down at S = 2) with the fixed workspace
# layout (one counter region for every schedule). Build; every gpu test (4 at a time); `dak
# generate --gemm` on the GPU; Llama-2-7B decode TPOT (auto, cuBLASLt); the two-layer trace with
# the default splits and with S = 1; one offload point. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 200 4
for g in tiered auto; do
  timeout 60 build-gpu/dak generate --random-weights --model llama-2-7b --prompt-ids 1,2,3 --prompt-ids 4,5 \
    --max-new-tokens 4 --gemm $g > /tmp/gen-$g.txt 2>&1
  echo "generate --gemm $g rc=$? $(tail -n 1 /tmp/gen-$g.txt | cut -c1-160)"
  { echo "=== --gemm $g"; cat /tmp/gen-$g.txt; } >> "$OUT/gen.txt"
done
timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,16 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench-l7-auto.json" > "$OUT/l7-auto.txt" 2> /dev/null
echo "decode auto rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/l7-auto.txt" | cut -d'|' -f2,7,10
dak_l7_decode cublas X=1 cublas
{
  for v in "0 0 0 0" "1 1 1 1" "1 2 1 2"; do
    echo "=== trace splits $v"
    timeout 30 build-gpu/gemm_probe trace 2 $v 2>&1 | cut -c1-130
  done
} > "$OUT/trace.txt"
grep -E "===|per layer" "$OUT/trace.txt"
dak_offload_bench l7b8r10 60 --model llama-2-7b --batch 8 --offload-ratio 0.1
echo "total $(( $(date +%s) - t0 )) s"
