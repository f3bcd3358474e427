#!/usr/bin/env bash
# Session 34, call 4: the tree with the RoPE epilogue's profile and planner follow-ups. Build; every
# gpu test; then, two interleaved rounds, Llama-2-7B decode (prompt 32, gen 32) at batch 1 / 8 / 32 / 64
# under auto (cuBLASLt above 32 tokens) against --gemm tiered at 32 / 64 (the RoPE and norm epilogues),
# and tiered at 64 without the RoPE epilogue (DAK_ROPE_EPILOGUE=0). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
for R in 1 2; do
  dak_tpot X=1 auto-$R --model llama-2-7b --batch 1,8,32,64 --prompt-len 32 --gen-len 32
  dak_tpot X=1 tiered-$R --model llama-2-7b --batch 32,64 --prompt-len 32 --gen-len 32 --gemm tiered
  dak_tpot DAK_ROPE_EPILOGUE=0 tiered-norope-$R --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32 --gemm tiered
done | tee "$OUT/gemm64.txt"
cp /tmp/r-auto-1.txt "$OUT/bench-auto.txt"
cp /tmp/r-tiered-1.txt "$OUT/bench-tiered.txt"
echo "total $(( $(date +%s) - t0 )) s"
