#!/usr/bin/env bash
# Session 36, call 2: accumulation chunks (TieredGemmSchedule::k_chunks) let the host side split
# its few long-K units over more CTAs with the split bits. Build; every gpu test (the new
# AccumulationChunksGiveTheSplitBits included); `dak bench gemm` at N = 8 for Llama-2-70B and OPT-30B
# (the shapes that take chunks: K >= 8192, unsplit), against call 1's numbers; Llama-2-7B decode at
# batch 1 / 8 (no linear of it takes chunks: unchanged expected). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
timeout 200 build-gpu/dak bench gemm --models llama-2-70b,opt-30b --tokens 8 --json "$OUT/gemm8.json" --csv "$OUT/gemm8.csv" > "$OUT/gemm8.txt" 2> "$OUT/gemm8.log"
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/gemm8.log" | head -3
dak_tpot X=1 auto --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32 | tee "$OUT/decode.txt"
grep -E "^(B_g|B_h)|targets" "$OUT/gemm8.txt" | cut -c1-140
python3 tools/device/summarize_gemm.py "n8=$OUT/gemm8.json" | grep -E "gemm \| (down|qkv|gate_up)" | cut -c1-150
grep -E "stack8 \| layer" "$OUT/gemm8.txt" | awk -F'|' '{print $2,$7,$8,$11,$14,$15,$19}'
echo "total $(( $(date +%s) - t0 )) s"
