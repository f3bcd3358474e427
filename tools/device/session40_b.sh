#!/usr/bin/env bash
# Session 40, call 2. Call 1 (H100) timed the attention's kernel boundary alone: attn_body (an
# empty dependent kernel of the attention's CTA count) costs 0.3-0.5 us a layer over no kernel,
# while the attention itself costs 5.6 (batch 1) / 8.4 (batch 8) us a layer more than attn_body.
# This call splits that: attn_smem gives the empty CTAs the attention's SMEM, so they keep o_proj's
# early CTAs (which request W before their dependency wait) off the SMs they hold, as the
# attention's CTAs do. attn_smem - attn_body: the cost of holding those SMs; none - attn_smem: the
# attention's own latency chain (q load, steps, merge, store). Then two attention plan A/Bs at
# this short context (the combine kernel instead of the in-CTA merge; session 34's split rule
# without the occupancy term). Llama-2-7B decode, batch 1 / 8, prompt 32, gen 32, TPOT ms.
# On an H200 the rest of the call runs session39_c.sh's batch-512 points of issue 7.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_configure -DDAK_DIAG_SKIP_KERNELS
dak_build dak dak_gpu_tests
dak_gtest 'DiagEmptyKernel.*' 60
for R in 1 2; do
  for v in DAK_DIAG_SKIP=none DAK_DIAG_SKIP=attn_body DAK_DIAG_SKIP=attn_smem; do
    left 100 && dak_tpot $v "${v#*=}-$R" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/skip.txt"
for v in DAK_ATTN_COMBINE=kernel DAK_ATTN_SPLIT_RULE=makespan; do
  left 100 && dak_tpot $v "${v%%=*}" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
done | tee -a "$OUT/skip.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  left 150 && DAK_CALL_LIMIT=$(( limit - ($(date +%s) - t0) )) bash tools/device/session39_c.sh
fi
echo "total $(( $(date +%s) - t0 )) s"
