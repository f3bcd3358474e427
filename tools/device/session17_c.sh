#!/usr/bin/env bash
# Device call 3 of session 17: RoPE and the KV append folded into the tiered attention of decode
# steps (TieredAttentionArgs::g_new). The GPU build, every gpu test, Llama-2-7B decode at batch
# 1 / 8: the tree's default then (fused; off by default since), DAK_ATTN_FUSE_ROPE=0 (the separate kernel) and
# DAK_EARLY_W=o_proj=5 (o_proj's whole ring before its dependency, now that the attention's loads
# start early), interleaved (fused and separate twice); the timeline of one batch-1 layer, fused and not. A short table
# last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests dak_timeline
dak_gpu_tests 60 4
dak_l7_decode fused1 X=1 auto
dak_l7_decode separate1 DAK_ATTN_FUSE_ROPE=0 auto
dak_l7_decode oproj5 DAK_EARLY_W=o_proj=5 auto
dak_l7_decode fused2 X=1 auto
dak_l7_decode separate2 DAK_ATTN_FUSE_ROPE=0 auto
dak_timeline fused X=1 --batch 1
dak_timeline separate DAK_ATTN_FUSE_ROPE=0 --batch 1
dak_bundle_decode
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
grep -E "^=== |layer period|^ +[0-9]+ |before the layers" "$OUT/timelines.txt" | cut -c1-90 | head -40
echo "total $(( $(date +%s) - t0 )) s"
