#!/usr/bin/env bash
# Session 41, call 2: the tree with the SMEM merge on by default and the L2 prefetch removed
# (call 1 on an H100: the merge through SMEM 0.85 % faster at batch 1, the prefetch 0.2 / 1 % slower).
# A normal (not diagnostic) build, every gpu test, then the merge A/B as two interleaved rounds
# (default vs DAK_ATTN_SMEM_MERGE=0) on Llama-2-7B (MHA) and Llama-3-8B (GQA 4:1; a control: its
# 64-key plans do not take the merge, whose 8 KiB area would pass the 2-CTA target by 128 bytes), batch
# 1 / 8, prompt 32, gen 32; Llama-2-7B batch 64; on an H200, issue 7's
# Llama-2-7B batch-512 points (10 / 30 %, auto and direct); then compute-sanitizer racecheck of the
# CTA-merge test while time is left. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build
dak_gpu_tests 120
for r in 1 2; do
  for e in X=1 DAK_ATTN_SMEM_MERGE=0; do
    left 150 || break
    dak_tpot $e "l7-$e-$r" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
    dak_tpot $e "l3-$e-$r" --model llama-3-8b --batch 1,8 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/ab.txt"
left 120 && dak_tpot X=1 l7-b64 --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32 | tee -a "$OUT/ab.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for m in auto direct; do
    left 90 && dak_bench_point h200-llama-2-7b-b512-$m X=1 70 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 \
      --offload-ratio 0.1,0.3 --offload $m
  done
  dak_merge_points > /dev/null
  dak_point_table
fi
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if left 60 && [ -x "$cs" ]; then
  DAK_REQUIRE_GPU=1 timeout $(( limit - ($(date +%s) - t0) - 15 )) "$cs" --tool racecheck build-gpu/tests/dak_gpu_tests \
    --gtest_filter='TieredAttentionKernel.SplitsMergedInTheCta*' > "$OUT/racecheck.txt" 2>&1
  echo "racecheck rc=$?"; grep -E "RACECHECK SUMMARY|PASSED|FAILED|hazard" "$OUT/racecheck.txt" | head -5
fi
echo "--- A/B (TPOT ms [min, max], TPOT / floor)"; cat "$OUT/ab.txt"
echo "total $(( $(date +%s) - t0 )) s"
