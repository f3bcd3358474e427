#!/usr/bin/env bash
# Device call (session 9): L2 prefetch of the W tiles past the ring while an HBM CTA waits for the
# previous grid. dak and the library are built with the default (20 MiB GPU-wide); the probe also
# with the 64-row tiles' translation unit under DAK_TIERED_GEMM_L2_PREFETCH_MIB = 0 / 8 / 20 / 40, in
# parallel. Each variant: the probe's decode shapes and its trace of two decode layers. Then every
# gpu test, Llama-2-7B decode (tiered, cublas), `dak bench gemm --quick` at N = 8. Carry: third_party.
# The prefetch was slower at every budget and was reverted after this call (docs/perf-notes.md,
# session 9): rerunning needs it back.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
variants="0 8 20 40"
dak_probe_variants \
  0:-DDAK_TIERED_GEMM_L2_PREFETCH_MIB=0 \
  8:-DDAK_TIERED_GEMM_L2_PREFETCH_MIB=8 \
  20:-DDAK_TIERED_GEMM_L2_PREFETCH_MIB=20 \
  40:-DDAK_TIERED_GEMM_L2_PREFETCH_MIB=40
dak_gpu_tests 200 4
: > "$OUT/variants.txt"
for v in $variants; do
  echo "=== prefetch $v MiB" >> "$OUT/variants.txt"
  timeout 60 build-gpu/probe-$v >> "$OUT/variants.txt" 2>&1 || echo "probe-$v failed rc=$?"
  timeout 30 build-gpu/probe-$v trace 2 > "/tmp/trace-$v.txt" 2>&1 || echo "trace-$v failed rc=$?"
  { echo "=== prefetch $v MiB"; cat "/tmp/trace-$v.txt"; } >> "$OUT/traces.txt"
done
dak_l7_decode tiered X=1 tiered
dak_l7_decode cublas X=1 cublas
timeout 90 build-gpu/dak bench gemm --quick --tokens 8 --json "$OUT/gemm-quick-n8.json" > /dev/null 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$?"; grep -iE "error" "$OUT/quick.log" | head -3; rm -f "$OUT/quick.log"
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick-n8.json" | head -4
for v in $variants; do echo "trace, prefetch $v MiB: $(head -1 "/tmp/trace-$v.txt")"; done
echo "probe us (prefetch MiB): qkv o gate_up down lm | N=1: qkv o gate_up down lm | 132t K256 K1024 K4096 264t | 1 tile K4096 K16384"
awk '/^===/ {if (line) print line; line=$3; i=0; next} /^M=/ {i++; if (i%6==1 || i%6==0 || i>30) line=line" "$(NF-3)} END {print line}' "$OUT/variants.txt"
cut -c1-130 /tmp/trace-20.txt | head -6
echo "total $(( $(date +%s) - t0 )) s"
