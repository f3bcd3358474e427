#!/usr/bin/env bash
# Session 34, call 6 (the landing tree, first of four back-to-back calls; carry: third_party): build; every gpu test; then two interleaved rounds of the RoPE epilogue against the
# separate kernel (DAK_ROPE_EPILOGUE=0), Llama-2-7B decode batch 1 / 8 / 16 (prompt 32, gen 32), and
# batch 64 under auto (cuBLASLt) against --gemm tiered with and without the epilogue (the 64 x 64
# tile's out-of-line pair writer).
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
for R in 1 2; do
  for v in X=1 DAK_ROPE_EPILOGUE=0; do dak_tpot $v l7-$R-${v%%=*} --model llama-2-7b --batch 1,8,16 --prompt-len 32 --gen-len 32; done
  dak_tpot X=1 auto64-$R --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32
  dak_tpot X=1 tiered64-$R --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32 --gemm tiered
  dak_tpot DAK_ROPE_EPILOGUE=0 tiered64-norope-$R --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32 --gemm tiered
done | tee "$OUT/rope.txt"
cp /tmp/r-l7-1-X.txt "$OUT/bench-l7.txt"
cp /tmp/r-tiered64-1.txt "$OUT/bench-tiered64.txt"
echo "total $(( $(date +%s) - t0 )) s"
