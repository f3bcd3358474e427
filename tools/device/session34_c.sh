#!/usr/bin/env bash
# Session 34, call 3: RoPE and the KV append in qkv's epilogue (q / k heads in the paired row
# order). Build; the new and affected gpu tests, then every gpu test; then, one binary, two
# interleaved rounds, the epilogue against the separate kernel (DAK_ROPE_EPILOGUE=0): Llama-2-7B
# decode batch 1 / 8 / 16 (prompt 32, gen 32) and the batch-8 10 % offload point (gen 8).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gtest 'RopeKvAppend*:TieredGemm.Rope*:RandomWeights.*:GpuEngineParity.*:GpuEngineVsCpu.*' 300
dak_gpu_tests 120 2
for R in 1 2; do
  for v in X=1 DAK_ROPE_EPILOGUE=0; do
    tag=$R-${v%%=*}
    dak_tpot $v l7-$tag --model llama-2-7b --batch 1,8,16 --prompt-len 32 --gen-len 32
    dak_tpot $v off10-$tag --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  done
done | tee "$OUT/rope.txt"
cp /tmp/r-l7-1-X.txt "$OUT/bench-l7.txt"
echo "total $(( $(date +%s) - t0 )) s"
