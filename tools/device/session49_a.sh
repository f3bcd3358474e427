#!/usr/bin/env bash
# Session 49: is the tiered GEMM still faster than cuBLASLt at 33-64 decode tokens on an H100, now that
# cuBLASLt's plans are tuned? Llama-2-7B TPOT, prompt 32, gen 32, auto (tuned cuBLASLt above 32
# tokens) against --gemm tiered at batch 33 / 40 / 48 / 64, two interleaved rounds; then the CUPTI
# per-kernel timeline of batch 64 under both, to see which operators the tiered GEMM loses or wins.
# Prediction (H100): session 48 measured tiered -2.8 % (40) / -3.2 % (64) against untuned cuBLASLt;
# tuning took -1.4 / -2.2 % of that, so tiered now -1 to -1.5 % at 40-64, ~0 at 33.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
# On an H200 (none since session 43) its owed call instead: issue 3 / 7 / 5 (session48_c.sh).
if echo "$gpu" | grep -q H200; then exec bash tools/device/session48_c.sh; fi
dak_configure "" ""
dak_build dak dak_timeline
for r in 1 2; do
  dak_tpot X=1 auto-r$r --model llama-2-7b --batch 33,40,48,64 --prompt-len 32 --gen-len 32
  dak_tpot X=1 tiered-r$r --model llama-2-7b --batch 33,40,48,64 --prompt-len 32 --gen-len 32 --gemm tiered
done | tee "$OUT/decode.txt"
grep -E "B_g|floor" /tmp/r-auto-r1.txt | head -2
left 120 && dak_timeline auto64 X=1 --batch 64
left 100 && dak_timeline tiered64 X=1 --batch 64 --gemm tiered
grep -E "^===|us|layer" "$OUT/timelines.txt" | head -80
echo "total $(( $(date +%s) - t0 )) s"
