#!/usr/bin/env bash
# Session 43, call 2: the landing check of the tree with the SMEM merge up to the 2-CTA limit by
# default (DAK_ATTN_SMEM_MERGE_2CTA removed), kSmemLimitBytes less the static allowance and the
# tests' own main(): every gpu test; then issue 3's decode record (Llama-2-7B batch 1 / 8 / 64 and
# Llama-3-8B batch 1 / 8, prompt 32, gen 32). On an H200 also issue 7's points with the current code
# (Llama-2-7B batch 512 at 10 / 30 %, auto; Llama-2-70B bf16 batch 8, --gpu-memory 100GiB and
# --offload none), while time is left. Carry: third_party.
# Also batch 64 on the tiered GEMM with each GEMM's trace (before issue 7's points).
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gpu_tests 90
{
  dak_tpot X=1 l7 --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32
  dak_tpot X=1 l3 --model llama-3-8b --batch 1,8 --prompt-len 32 --gen-len 32
} > "$OUT/decode.txt"
cp /tmp/r-l7.txt /tmp/r-l3.txt "$OUT/"  # the per-operator breakdowns
# Batch 64 on the tiered GEMM (auto takes cuBLASLt there): its TPOT, then the last layer's per-CTA
# trace of each GEMM (o_proj's increment was 25 us against a 10.4 us floor in session 36).
left 60 && dak_tpot X=1 l7-tiered --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32 --gemm tiered >> "$OUT/decode.txt"
for op in o_proj qkv_proj mlp_up mlp_down; do
  left 30 || break
  DAK_GEMM_TRACE=$op timeout 40 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --gemm tiered \
    --batch 64 --prompt-len 32 --gen-len 32 2>&1 >/dev/null | grep -E "gemm trace|error"
done > "$OUT/gemm-trace.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  left 200 && dak_bench_point h200-llama-2-7b-b512-auto X=1 70 --model llama-2-7b --batch 512 --prompt-len 32 \
    --gen-len 8 --offload-ratio 0.1,0.3 --offload auto
  left 150 && dak_bench_point h200-llama-2-70b-b8-100GiB X=1 150 --model llama-2-70b --batch 8 --prompt-len 32 \
    --gen-len 4 --gpu-memory 100GiB
  left 115 && dak_bench_point h200-llama-2-70b-b8-none X=1 110 --model llama-2-70b --batch 8 --prompt-len 32 \
    --gen-len 4 --offload none
  grep -h "notice" /tmp/s-*.log 2>/dev/null | sort | uniq -c | cut -c1-240
  dak_merge_points > /dev/null
  dak_point_table
fi
echo "--- decode (TPOT ms [min, max], TPOT / floor)"; cat "$OUT/decode.txt"
echo "--- batch 64 GEMM traces"; cut -c1-330 "$OUT/gemm-trace.txt"
echo "total $(( $(date +%s) - t0 )) s"
