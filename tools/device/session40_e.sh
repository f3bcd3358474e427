#!/usr/bin/env bash
# Session 40, call 4: the L2 prefetch of the next layer's KV (TieredAttentionArgs::next_g_k). Call 3
# traced the decode attention (H100, batch 8): its early KV loads, requested 4.5 us before qkv
# completes, land 4.9 us after it, behind the GEMM weight streams in HBM, while q (in L2) lands at
# +1.0. Now each layer's attention requests the next layer's live HBM KV rows into L2 at its start,
# ~150 us before they are read. Prediction: the attention ends ~3-4 us after the wait instead of
# 7-11 us; TPOT -2 to -4 % at batch 1 / 8. One trace build (-DDAK_ATT_TRACE, and the diagnostic
# skip flag, harmless here): the tiered attention's gpu tests (a new one: prefetching changes no bit
# and writes nothing), then Llama-2-7B prompt 32 gen 32, batch 1 / 8, with the prefetch (default)
# and without (DAK_ATTN_L2_PREFETCH=0), two interleaved rounds, each with its trace; then session
# 40_d's o_proj early-W and ring-depth A/Bs while time is left. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_configure "-DDAK_DIAG_SKIP_KERNELS -DDAK_ATT_TRACE" -DDAK_ATT_TRACE
dak_build dak dak_gpu_tests
dak_gtest 'TieredAttentionKernel.*:DiagEmptyKernel.*' 150
for e in X=1 DAK_ATTN_L2_PREFETCH=0 X=2 DAK_ATTN_L2_PREFETCH=0 DAK_EARLY_W=o_proj=0 DAK_ATTN_HBM_STAGES=5 \
         DAK_DIAG_SKIP=attn_smem; do
  left 30 || break
  env $e timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
    --gen-len 32 > /tmp/t.txt 2> /tmp/t.log
  echo "== $e rc=$?"
  grep -E "^\| [0-9]+ \| 32 \| " /tmp/t.txt | awk -F'|' '{print "batch", $2, "TPOT", $7, "ratio", $10}'
  grep "att trace" /tmp/t.log | sed 's/ (us after the first post-wait stamp; min \/ p50 \/ max over warps)//'
  grep -E "error|notice" /tmp/t.log | head -3
done | tee "$OUT/ab.txt"
echo "total $(( $(date +%s) - t0 )) s"
