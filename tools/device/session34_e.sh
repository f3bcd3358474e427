#!/usr/bin/env bash
# Session 34, call 5: the RoPE epilogue's per-token inputs (positions, cache slots and rows) and its
# row pair's bias / inv_freq loaded before the unit's main loop on tiles of <= 16 tokens. Build;
# every gpu test; then two interleaved rounds of the epilogue against the separate kernel
# (DAK_ROPE_EPILOGUE=0), Llama-2-7B decode batch 1 / 8 / 16 (prompt 32, gen 32); batch 64 auto
# against --gemm tiered (the 64 x 64 kernel without the epilogue's code). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
for R in 1 2; do
  for v in X=1 DAK_ROPE_EPILOGUE=0; do dak_tpot $v l7-$R-${v%%=*} --model llama-2-7b --batch 1,8,16 --prompt-len 32 --gen-len 32; done
  dak_tpot X=1 auto64-$R --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32
  dak_tpot X=1 tiered64-$R --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32 --gemm tiered
done | tee "$OUT/rope.txt"
cp /tmp/r-l7-1-X.txt "$OUT/bench-l7.txt"
echo "total $(( $(date +%s) - t0 )) s"
