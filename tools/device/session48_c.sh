#!/usr/bin/env bash
# Session 48, third machine. On an H200 (none lent since session 43): issue 3's Llama-2-7B TPOT at
# batch 1 / 8 / 64 (prompt 32, gen 32; session 43: 1.247 / 1.274 / 1.675 of the floor), auto against
# `--gemm tiered` at 40 and 64 tokens (session 43's H200: tiered 3.5 % slower at 64; this session's
# H100: 3.3 % faster), issue 7's batch-512 points, then the full attention sweep (issue 5; session 43's
# H200: 123 of 141). On an H100: `dak bench gemm --quick` (issue 4) and the same TPOT rows.
# Prediction: batch 1 / 8 within 1 % of session 43 (the decode kernels are unchanged since); the
# b512 points within 1.05 of their floors; the sweep 125-130 of 141. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_configure "" ""
dak_build dak
{
  dak_tpot X=1 l7 --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32
  dak_tpot X=1 l7-auto --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32
  dak_tpot X=1 l7-tiered --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32 --gemm tiered
} | tee "$OUT/decode.txt"
grep -E "B_g|floor" /tmp/r-l7.txt | head -2
# OPT-30B 8 x 512 at x = 0 read 78 % inside the full sweep and 84 % in short runs: the same cell
# beside a 32768-key cell (whose size sets the shared K / V buffers) and alone, interleaved.
# cuBLASLt's first heuristic against its other candidates on the decode linears at 40 / 64 tokens
# (bench/cublaslt_algo_probe.cu). Prediction: within 3 % of the best on 3 of 4 shapes; o_proj's
# 15.7 us (67 % of its floor on the H100) the most room.
nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc bench/cublaslt_algo_probe.cu build-gpu/libdak_gpu.a \
  build-gpu/libdak_core.a -lcublasLt -lcuda -lfmt -o build-gpu/lt_probe > /tmp/lt.log 2>&1 || head -20 /tmp/lt.log
timeout 60 build-gpu/lt_probe 40 64 > "$OUT/cublaslt-algos.txt" 2>&1; echo "lt probe rc=$?"
grep -E "^B_g|=>" "$OUT/cublaslt-algos.txt"
for r in 1 2; do
  dak_att_rows "with32768-r$r" X=1 --models opt-30b --batch 8 --ctx 512,32768 --ratios 0 --no-balance-point | grep -v B_
  dak_att_rows "alone-r$r" X=1 --models opt-30b --batch 8 --ctx 512 --ratios 0 --no-balance-point | grep -v B_
done | tee "$OUT/opt30b-cell.txt"
if ! echo "$gpu" | grep -q H200; then
  left 150 && timeout 140 build-gpu/dak bench gemm --quick > "$OUT/gemm-quick.txt" 2>&1
  echo "gemm rc=$?"; grep -E "^targets|^B_|met|MISSED" "$OUT/gemm-quick.txt" | tail -12
  echo "total $(( $(date +%s) - t0 )) s"; exit 0
fi
pt() {  # pt MODEL RATIOS MODE SECONDS
  left "$4" && dak_bench_point "h200-$1-b512-$3-${2//,/_}" X=1 "$4" --model "$1" --batch 512 --prompt-len 32 \
    --gen-len 8 --offload-ratio "$2" --offload "$3"
}
pt llama-2-7b 0,0.6 auto 70
pt opt-6.7b 0,0.1,0.3,0.6 auto 100
pt opt-30b 0.6 auto 150
dak_merge_points > /dev/null
dak_point_table
left 215 && timeout 205 build-gpu/dak bench attention > "$OUT/attention.txt" 2>&1
echo "attention rc=$?"; grep -E "^targets|^B_" "$OUT/attention.txt"
grep -E "MISSED" "$OUT/attention.txt" | cut -d'|' -f2-4,7,9,13,15 | head -20
echo "total $(( $(date +%s) - t0 )) s"
