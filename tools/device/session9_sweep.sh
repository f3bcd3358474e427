#!/usr/bin/env bash
# Device call (session 9, last): the landing tree (`--gemm auto` = tiered up to 8 tokens). Build;
# every gpu test (4 at a time); Llama-2-7B decode TPOT at batch 1 / 8 / 16 / 32 / 64 with tiered,
# cublas and auto (the auto threshold); the issue-4 sweep `dak bench gemm` (Llama-2-7B, Llama-2-70B,
# OPT-30B linears at N = 8 and 512, every ratio), JSON + CSV. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
: > "$OUT/decode.txt"
for g in tiered cublas auto; do
  timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,16,32,64 --prompt-len 32 \
    --gen-len 32 --gemm $g --json "$OUT/bench-l7-$g.json" > /tmp/l7-$g.txt 2> /dev/null
  echo "decode --gemm $g rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" /tmp/l7-$g.txt | cut -d'|' -f2,7,10
  { echo "=== --gemm $g"; cat /tmp/l7-$g.txt; } >> "$OUT/decode.txt"
done
timeout 240 build-gpu/dak bench gemm --json "$OUT/gemm.json" --csv "$OUT/gemm.csv" > "$OUT/gemm.txt" 2> /tmp/gemm.log
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" /tmp/gemm.log | head -3
grep -E "B_g|B_h|targets|met|MISSED|differ" "$OUT/gemm.txt" | grep -vE "^\|" | head -12
python3 tools/device/summarize_gemm.py "sweep=$OUT/gemm.json" > "$OUT/gemm-summary.txt"
grep -E "stack8|\| 0 \|" "$OUT/gemm-summary.txt" | head -40
echo "total $(( $(date +%s) - t0 )) s"
