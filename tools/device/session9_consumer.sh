#!/usr/bin/env bash
# Device call (session 9): the wide-stage consumer's variants. The library and dak are built with
# the default (independent accumulators: 4 for bn <= 16, 2 above; one stage of wgmma kept in flight);
# the probe is also built with the 64-row tiles' translation unit compiled under the experiment
# switches DAK_TIERED_GEMM_ACCUMULATORS (1 / 2 / 4, 0 = default) and DAK_TIERED_GEMM_BW_HOLD (0 / 1),
# one binary per variant, in parallel. Then every gpu test, the probe trace, Llama-2-7B decode
# (tiered, cublas) and `dak bench gemm --quick` at N = 8. Carry: third_party.
# The two switches were taken out of the kernel after this call (the 0 : 1 variant is the code now):
# rerunning needs them back.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
variants="1:0 1:1 4:0 2:1 4:1 0:1"
dak_probe_variants \
  1-0:"-DDAK_TIERED_GEMM_ACCUMULATORS=1 -DDAK_TIERED_GEMM_BW_HOLD=0" \
  1-1:"-DDAK_TIERED_GEMM_ACCUMULATORS=1 -DDAK_TIERED_GEMM_BW_HOLD=1" \
  4-0:"-DDAK_TIERED_GEMM_ACCUMULATORS=4 -DDAK_TIERED_GEMM_BW_HOLD=0" \
  2-1:"-DDAK_TIERED_GEMM_ACCUMULATORS=2 -DDAK_TIERED_GEMM_BW_HOLD=1" \
  4-1:"-DDAK_TIERED_GEMM_ACCUMULATORS=4 -DDAK_TIERED_GEMM_BW_HOLD=1" \
  0-1:"-DDAK_TIERED_GEMM_ACCUMULATORS=0 -DDAK_TIERED_GEMM_BW_HOLD=1"
dak_gpu_tests 200 4
: > "$OUT/variants.txt"
for v in $variants; do
  a=${v%:*} h=${v#*:}
  echo "=== accumulators $a hold $h" >> "$OUT/variants.txt"
  timeout 60 build-gpu/probe-$a-$h >> "$OUT/variants.txt" 2>&1 || echo "probe-$a-$h failed rc=$?"
done
timeout 30 build-gpu/gemm_probe trace 2 > "$OUT/trace.txt" 2>&1; echo "trace rc=$?"
dak_l7_decode tiered X=1 tiered
dak_l7_decode cublas X=1 cublas
timeout 90 build-gpu/dak bench gemm --quick --tokens 8 --json "$OUT/gemm-quick-n8.json" > /dev/null 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$?"; grep -iE "error" "$OUT/quick.log" | head -3; rm -f "$OUT/quick.log"
head -3 "$OUT/trace.txt" | cut -c1-150
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick-n8.json" | head -4
echo "probe us (accumulators:hold): qkv o gate_up down lm | N=1: qkv o gate_up down lm | 132t K256 K1024 K4096 264t | 1 tile K4096 K16384"
awk '/^===/ {if (line) print line; line=$3":"$5; i=0; next} /^M=/ {i++; if (i%6==1 || i%6==0 || i>30) line=line" "$(NF-3)} END {print line}' "$OUT/variants.txt"
echo "total $(( $(date +%s) - t0 )) s"
