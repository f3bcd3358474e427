#!/usr/bin/env bash
# Prepared in session 44 for the next H200 (on an H100 it runs only the switch sweep): where the
# tiered GEMM beats cuBLASLt between 33 and 64 tokens. On an H100 (session 44, calls 4-5) the tiered
# GEMM was 1-4 % faster at 36-64 tokens for the Llama shapes, 0.7-2.6 % slower at 33-34 and for
# OPT-6.7B at 40; on an H200 (session 43) 3.5 % slower at 64. auto switches at 32 on every GPU.
# Prediction for the H200: cuBLASLt ahead from 33 to 64 (the H200's faster HBM leaves the tiered
# GEMM's N = 33-64 tiles further from their bytes). Then, on an H200, session 43's KV padding A/B
# (rejected on the H100: never faster, up to -1.7 points). Two rounds each. Last, the engine's
# batch-512 point under the filled HBM side of the attention and the rule before. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_build dak
for round in 1 2; do
  for m in llama-2-7b llama-3-8b opt-6.7b; do
    for g in auto tiered; do
      left 60 && dak_tpot X=1 "$m-$g-$round" --model $m --batch 33,40,48,56,64 --prompt-len 32 --gen-len 32 --gemm $g
    done
  done
done | tee "$OUT/switch.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for round in 1 2; do
    for pad in 0 8; do
      for c in "llama-3-8b --batch 64 --ctx 4096" "llama-3-8b --batch 512 --ctx 512" "llama-2-7b --batch 64 --ctx 4096"; do
        left 30 || break 3
        DAK_BENCH_KV_PAD_ROWS=$pad timeout 40 build-gpu/dak bench attention --models $c --ratios 0 --no-balance-point \
          2>/dev/null | grep -E "^\| (llama|opt).*tiered" | cut -d'|' -f2-4,9,13,15 | sed "s/^/pad $pad round $round /"
      done
    done
  done | tee "$OUT/pad.txt"
fi
# The filled HBM side of the tiered attention (session 44, default) in the engine, where the H100's
# host link was too noisy to judge it: Llama-2-7B batch 512 at 10 % (host KV), three interleaved
# rounds; compare only runs whose [min, max] is narrow (session 44 read 39.97-40.29 ms under both
# rules on its H100). Prediction: equal within 0.5 %.
for round in 1 2 3; do
  for fill in 1 0; do
    left 20 && dak_bench_point "fill$fill-r$round" DAK_ATTN_HBM_FILL=$fill 40 --model llama-2-7b --batch 512 \
      --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  done
done
dak_merge_points > /dev/null
dak_point_table
grep -h -E "^=== |^\| 512 \| 32 \| 8 " "$OUT/offload.txt" | cut -c1-110
echo "total $(( $(date +%s) - t0 )) s"
