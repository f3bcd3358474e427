#!/usr/bin/env bash
# Next session's first call (written in session 40, never run: no device time was left). The L2
# prefetch of the next layer's KV (TieredAttentionArgs::next_g_k, DAK_ATTN_L2_PREFETCH=1; off by
# default until measured). Session 40's call 3 traced the decode attention (H100, batch 8): its
# early KV loads, requested 4.5 us before qkv completes, land 4.9 us after it, behind the GEMM
# weight streams in HBM, while q (in L2) lands at +1.0. With the prefetch each layer's attention
# requests the next layer's live HBM KV rows into L2 at its start, ~150 us before they are read.
# Prediction: the attention ends ~3-4 us after the wait instead of 7-11 us; TPOT -2 to -4 % at
# batch 1 / 8. One trace build (-DDAK_ATT_TRACE, plus the diagnostic skip flag, harmless here): the
# tiered attention's gpu tests (a new one: prefetching changes no bit and writes nothing; at the
# end, time permitting, it runs under compute-sanitizer memcheck), then
# Llama-2-7B prompt 32 gen 32, batch 1 / 8, with and without the prefetch, two interleaved rounds,
# each with its trace; then the in-CTA merge through SMEM (DAK_ATTN_SMEM_MERGE=1, also new and
# never run: batch 1's merge took 3 us; its bits are checked in SplitsMergedInTheCta...), alone and
# with the prefetch; then o_proj without early W stages and a 5-deep attention ring, and the
# attn_smem bound while time is left. If the prefetch wins: default it on (gpu_engine.cc
# kv_l2_prefetch_enabled) and run every gpu test. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_configure "-DDAK_DIAG_SKIP_KERNELS -DDAK_ATT_TRACE" -DDAK_ATT_TRACE
dak_build dak dak_gpu_tests
dak_gtest 'TieredAttentionKernel.*:DiagEmptyKernel.*' 150
for e in DAK_ATTN_L2_PREFETCH=1 X=1 DAK_ATTN_L2_PREFETCH=1 X=2 DAK_ATTN_SMEM_MERGE=1 \
         DAK_ATTN_L2_PREFETCH=1,DAK_ATTN_SMEM_MERGE=1 DAK_EARLY_W=o_proj=0 DAK_ATTN_HBM_STAGES=5 DAK_DIAG_SKIP=attn_smem; do
  left 30 || break
  env ${e//,/ } timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
    --gen-len 32 > /tmp/t.txt 2> /tmp/t.log
  echo "== $e rc=$?"
  grep -E "^\| [0-9]+ \| 32 \| " /tmp/t.txt | awk -F'|' '{print "batch", $2, "TPOT", $7, "ratio", $10}'
  grep "att trace" /tmp/t.log | sed 's/ (us after the first post-wait stamp; min \/ p50 \/ max over warps)//'
  grep -E "error|notice" /tmp/t.log | head -3
done | tee "$OUT/ab.txt"
# The prefetch under memcheck, then the SMEM merge's barriers under racecheck (a missing one would
# race on the reused slots), while time is left.
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
left 130 && [ -x "$cs" ] && DAK_REQUIRE_GPU=1 timeout 120 "$cs" --tool memcheck build-gpu/tests/dak_gpu_tests \
  --gtest_filter='TieredAttentionKernel.Prefetching*' 2>&1 | grep -E "ERROR SUMMARY|PASSED|FAILED|Invalid" | head -5
# racecheck of the CTA-merge test (both merges).
left 100 && [ -x "$cs" ] && DAK_REQUIRE_GPU=1 timeout 90 "$cs" --tool racecheck build-gpu/tests/dak_gpu_tests \
  --gtest_filter='TieredAttentionKernel.SplitsMergedInTheCta*' 2>&1 | grep -E "RACECHECK SUMMARY|PASSED|FAILED|hazard" | head -5
echo "total $(( $(date +%s) - t0 )) s"
