#!/usr/bin/env bash
# Session 48: cuBLASLt tuning (CublasLtGemm::set_tuning, on for the eager decode step). The gemm gpu
# tests (bitwise the first heuristic's output), then Llama-2-7B TPOT at batch 40 / 64 / 128 (prompt 32,
# gen 32, auto = cuBLASLt above 32 tokens) with DAK_CUBLASLT_TUNE=0 and the default, two interleaved
# rounds, then every gpu test. Prediction (H100, from bench/cublaslt_algo_probe.cu: qkv 7 % at 33-48
# tokens, gate_up 5-6 % at 64 / 128, where the faster candidate also gives the same bits): batch 40
# -1 to -1.5 %, 64 -1.5 to -2 %, 128 -1 to -2 %; where the faster candidate's bits differ, no change.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gtest 'GemmCublasLt.*' 120; grep -E "\[cublaslt\]" "$OUT/tests.txt"
for r in 1 2; do
  for cfg in "off DAK_CUBLASLT_TUNE=0" "tuned X=1"; do
    set -- $cfg; left 150 || break 2
    dak_tpot "$2" "$1-r$r" --model llama-2-7b --batch 40,64,128 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/decode.txt"
left 130 && dak_gpu_tests 90 2
echo "total $(( $(date +%s) - t0 )) s"
