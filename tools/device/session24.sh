#!/usr/bin/env bash
# Device call 1 of session 24 (the RMSNorm carried across the GEMM boundary: norm-out / norm-in
# epilogues of the tiered GEMM): the new kernel tests first, every gpu test, then Llama-2-7B decode
# (batch 1, 8, prompt 32, gen 32) and Qwen2-7B (bias on qkv) fused (default) against
# DAK_NO_FUSED_NORM=1 in the same call, and a timeline of batch 1. Usage from the repo root:
# bash tools/device/session24.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests dak_timeline
dak_gtest 'TieredGemm.Norm*' 120
dak_gpu_tests 60 4
dak_l7_decode fused X=1 auto
dak_l7_decode unfused DAK_NO_FUSED_NORM=1 auto
dak_l7_decode fused2 X=1 auto
dak_l7_decode unfused2 DAK_NO_FUSED_NORM=1 auto
for e in X=1 DAK_NO_FUSED_NORM=1; do
  env $e timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model qwen2-7b --batch 1,8,32 --prompt-len 32 \
    --gen-len 32 > "$OUT/qwen-$e.txt" 2>/dev/null; echo "qwen $e rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/qwen-$e.txt"
done
dak_bundle_decode
dak_timeline b1-fused X=1 --batch 1
echo "--- Llama-2-7B decode, prompt 32, gen 32 (TPOT ms, floor, ratio)"
grep -hE "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | awk '/^===/{n=$2} /^\|/{split($0,c,"|"); print n, "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}'
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
