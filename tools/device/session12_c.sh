#!/usr/bin/env bash
# Device call 3 of session 12: the tiered GEMM's HBM TMA loads with 128-byte L2 promotion (was
# 256: `gemm_probe stream` 4.44 against 4.10 TB/s). Probe A/B in one call (the 64-row tiles'
# translation unit built per variant: p128 = this tree, hbm256 = the old HBM promotion, host128 =
# 128 B for the host rows too): decode shapes, the two-layer trace, all-host rows; then the engine
# (Llama-2-7B decode), every gpu test, three offload points and `dak bench gemm`. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_probe_variants p128: hbm256:-DDAK_TIERED_GEMM_HBM_L2_PROMOTION=256 host128:-DDAK_TIERED_GEMM_HOST_L2_PROMOTION=128
for v in p128 hbm256 host128; do
  echo "== probe $v"
  build-gpu/probe-$v stream | grep "tiered GEMM" | head -1
  build-gpu/probe-$v | grep -E "splits= *[0-9]+ .*" | grep -E "N=  8" | head -12 > "$OUT/probe-$v.txt"
  cat "$OUT/probe-$v.txt"
  build-gpu/probe-$v trace 2 | grep "per layer"
  build-gpu/probe-$v host 12288 8 4096 12288 1 0 0 | tail -1
  build-gpu/probe-$v host 22016 512 4096 22016 4 0 0 | tail -1
done
dak_l7_decode auto X=1 auto
dak_gpu_tests 60 4
dak_offload_bench l7b8-auto 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench opt1g-auto 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
dak_offload_bench l7b512-auto 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
python3 - "$OUT/offload.json" /tmp/bench-*.json <<'PY'
import json, sys
json.dump({f.split('bench-')[1][:-5]: json.load(open(f)) for f in sys.argv[2:]}, open(sys.argv[1], 'w'), indent=1)
PY
left=$(( 570 - ($(date +%s) - t0) ))
echo "bench gemm with ${left} s left"
timeout $left build-gpu/dak bench gemm --json "$OUT/gemm.json" > "$OUT/gemm.txt" 2>&1
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "\| (stack8|gemm) .*\| (8|512) \| 0 \||targets" "$OUT/gemm.txt" | cut -d"|" -f2-4,8,12,15,16,19 | head -30
echo "total $(( $(date +%s) - t0 )) s"
