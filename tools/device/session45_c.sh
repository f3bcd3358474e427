#!/usr/bin/env bash
# Session 45 (issue 5): host CTAs of 2 (or 1) working warps with deeper rings when the host items are
# few (TieredAttentionSchedule::host_warps). Call 4's trace (H100) showed the host side ending last
# at Llama-3-8B's balance points: 16 host items on 4 CTAs x 4 warps x 2 steps (256 KiB in flight)
# read 44-45 GB/s beside the busy HBM side. The plan now runs 8 CTAs x 2 warps x 4 steps (512 KiB).
# First the tiered attention's gpu tests (new: host-warp variants, the spread plan's bits), then
# DAK_ATTN_HOST_SPREAD=1 / 0 interleaved, two rounds, at the balance points, then every gpu test.
# Prediction (H100): Llama-3-8B 64 x 4096 at x* 85 -> ~92 %, 64 x 32768 87.5 -> ~95 %, 64 x 512
# (8-layer stack, HBM-bound at x = 0: 75 %) 67 -> ~72 %; x = 0 rows unchanged. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gtest 'TieredAttention*' 200
att() {  # att LABEL ENV ARGS...: the tiered rows (model, batch, ctx, b_h, time, of ideal)
  local label=$1 envs=$2; shift 2
  env $envs timeout 60 build-gpu/dak bench attention "$@" 2>/dev/null |
    grep -E "^\| (llama|opt).*tiered" | cut -d'|' -f2-4,7,9,13 | sed "s/^/$label /"
}
for round in 1 2; do
  for sp in 1 0; do
    left 200 || break 2
    att "spread $sp r$round" DAK_ATTN_HOST_SPREAD=$sp --models llama-3-8b --batch 64 --ctx 512,4096,32768 --ratios 0
    att "spread $sp r$round" DAK_ATTN_HOST_SPREAD=$sp --models llama-3-8b --batch 512 --ctx 512,4096 --ratios 0,1/512 \
      --no-balance-point
  done
done | tee "$OUT/spread.txt"
left 120 && dak_gpu_tests 90 2
echo "total $(( $(date +%s) - t0 )) s"
