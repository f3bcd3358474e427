#!/usr/bin/env bash
# Device call 3 of session 15: the 128 x 64 tile for 33-64 tokens (two consumer warpgroups share each
# x tile). Every gpu test; `gemm_probe xshare N`: 64 x 64 vs 128 x 64 vs 128 x 128 on the Llama-2-7B
# linears at N = 64 and 48; Llama-2-7B decode at batch 48 / 64 on the tiered GEMM and on cuBLASLt,
# and batch 1 / 8 on auto. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_build_probe
echo "probe built $(( $(date +%s) - t0 )) s"
dak_gpu_tests 60 4
for n in 64 48; do timeout 120 build-gpu/gemm_probe xshare $n | tee -a "$OUT/xshare.txt"; done
for g in tiered cublas; do
  timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 48,64 --prompt-len 32 \
    --gen-len 32 --gemm $g --json "$OUT/bench-b64-$g.json" > "$OUT/b64-$g.txt" 2> /dev/null
  echo "b48/64 $g rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/b64-$g.txt" | cut -c1-110
done
dak_l7_decode auto X=1 auto
dak_timeline b64-tiered X=1 --batch 64 --gemm tiered
grep -E "^===|layer period|^ +[0-9]+ " "$OUT/timelines.txt" | head -20
dak_bundle_decode
echo "total $(( $(date +%s) - t0 )) s"
