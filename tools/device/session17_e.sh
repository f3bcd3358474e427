#!/usr/bin/env bash
# Device call of session 17 on the landing tree (RoPE fusion off by default): the GPU build, every
# gpu test, Llama-2-7B decode at batch 1 / 8 / 64 (auto, the defaults), and at batch 1 / 8 the fused
# path with and without the early K/V loads (DAK_ATTN_FUSE_ROPE=1 [DAK_ATTN_EARLY_KV=0]: is the
# early prologue beside the qkv GEMM's tail what makes the fused kernel slow?). A short table last.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 --json "$OUT/decode-final.json" > "$OUT/decode-final.txt" 2> /dev/null
echo "decode rc=$? ($(( $(date +%s) - t0 )) s)"
dak_l7_decode fused DAK_ATTN_FUSE_ROPE=1 auto
dak_l7_decode fused-late "DAK_ATTN_FUSE_ROPE=1 DAK_ATTN_EARLY_KV=0" auto
dak_bundle_decode
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode-final.txt" | cut -c1-100
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
