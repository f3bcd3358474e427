#!/usr/bin/env bash
# Session 48, after the review of the cuBLASLt tuning (weights of >= 1.5 L2 sizes only, candidates that
# reduce as the first heuristic does, back-to-back timed rounds; dak bench tunes, generate does not):
# the gemm and engine gpu tests, then Llama-2-7B TPOT at batch 40 / 64 with DAK_CUBLASLT_TUNE=0 against
# the bench's default (tuned), then every gpu test while time is left. Prediction: as call 15 (batch 40
# -1 %, 64 -2.3 %), since its winners (qkv at 40, gate_up at 64) are split-K 1 like the first
# heuristic and far above 1.5 L2 sizes. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gtest 'GemmCublasLt.*:GpuEngine*:RandomWeights.*:BenchGemm.*:OffloadEngine.*' 150; grep -E "\[cublaslt\]" "$OUT/tests.txt"
for cfg in "off DAK_CUBLASLT_TUNE=0" "tuned X=1"; do
  set -- $cfg; left 60 || break
  dak_tpot "$2" "$1" --model llama-2-7b --batch 40,64 --prompt-len 32 --gen-len 32
done | tee "$OUT/decode.txt"
left 160 && dak_gpu_tests 90 2
echo "total $(( $(date +%s) - t0 )) s"
