#!/usr/bin/env bash
# Device call (session 6, last minutes): the bandwidth path's ring 16 -> 22 stages for bn 8 (20 for
# bn 16), so an HBM CTA keeps ~200 KiB of W in flight as hbm_stream's best configuration does.
# Build, the TieredGemm gpu tests, the probe's decode linears, `dak bench gemm --quick` at N = 8
# only, decode TPOT of Llama-2-7B batch 1 and 8 with --gemm tiered and cublas. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gtest 'TieredGemm*' 60
timeout 40 build-gpu/gemm_probe 2>&1 | grep -E "splits= 1|splits= 2" | head -20
d=build-gpu/dak
timeout 50 $d bench gemm --quick --tokens 8 --json "$OUT/gemm-quick-n8.json" > /dev/null 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$?"; grep -iE "error" "$OUT/quick.log" | head -3
for g in tiered cublas; do
  timeout 40 $d bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32 \
    --gemm $g > "$OUT/l7-$g.txt" 2> /dev/null; echo "--gemm $g rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/l7-$g.txt"
done
rm -f "$OUT"/*.log
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick-n8.json"
echo "total $(( $(date +%s) - t0 )) s"
