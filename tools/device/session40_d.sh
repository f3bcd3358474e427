#!/usr/bin/env bash
# Session 40, call 4. Call 3's trace (H100, batch 8, us after the attention's dependency wait
# returns): CTAs start at -8, the early KV loads are issued at -4.5, q lands at +1.0, but the first
# step (issued before the wait) lands only at +4.9 and the last at +9.5 (the steps issued after the
# wait land one by one); batch 1's in-CTA merge takes 3 us after its last step. The loads wait in a
# memory system full of GEMM W streams: qkv's last round and o_proj's early W stages (3 per CTA,
# issued before its dependency wait). A/B on the same trace build, Llama-2-7B batch 1 / 8, prompt 32,
# gen 32: the default; o_proj with 0 / 1 early W stages (DAK_EARLY_W); the attention's cp.async ring
# 4 / 5 deep (DAK_ATTN_HBM_STAGES; the prologue then requests every step before key len - 1 early);
# and attn_smem (the empty kernel of call 2) as the bound. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_configure "-DDAK_DIAG_SKIP_KERNELS -DDAK_ATT_TRACE" -DDAK_ATT_TRACE
dak_build dak
for e in X=1 DAK_EARLY_W=o_proj=0 DAK_EARLY_W=o_proj=1 DAK_ATTN_HBM_STAGES=4 DAK_ATTN_HBM_STAGES=5 \
         DAK_DIAG_SKIP=attn_smem X=2; do
  left 40 || break
  env $e timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
    --gen-len 32 > /tmp/t.txt 2> /tmp/t.log
  echo "== $e rc=$?"
  grep -E "^\| [0-9]+ \| 32 \| " /tmp/t.txt | awk -F'|' '{print "batch", $2, "TPOT", $7, "ratio", $10}'
  grep "att trace" /tmp/t.log | sed 's/ (us after the first post-wait stamp; min \/ p50 \/ max over warps)//'
  grep -E "error|notice" /tmp/t.log | head -3
done | tee "$OUT/ab.txt"
echo "total $(( $(date +%s) - t0 )) s"
