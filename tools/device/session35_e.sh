#!/usr/bin/env bash
# Session 35, call 5: the gated activation in gate_up's epilogue (TieredGemmActOut; W_gate_up in the
# paired order of core/rope_layout.h engine_pairs_gate_up). Build; the new and the touched tests
# first, then every gpu test; Llama-2-7B decode (prompt 32, gen 32), epilogue against the kernel
# (DAK_ACT_EPILOGUE=0, same binary), two interleaved rounds: batch 1 / 8 (auto) and 40 / 64 (`--gemm
# tiered`); then batch 33-64 on cuBLASLt for the switch point.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gtest 'TieredGemm.Act*:ActivationKernel.*:RandomWeights*:*Parity*' 300
dak_gpu_tests 120 2
for r in 1 2; do
  for v in X=1 DAK_ACT_EPILOGUE=0; do
    dak_tpot "$v" "r$r:$v:auto" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
    dak_tpot "$v" "r$r:$v:tiered" --model llama-2-7b --batch 33,40,64 --prompt-len 32 --gen-len 32 --gemm tiered
  done
done | tee "$OUT/act.txt"
dak_tpot X=1 "cublas" --model llama-2-7b --batch 33,40,64 --prompt-len 32 --gen-len 32 --gemm cublas | tee -a "$OUT/act.txt"
echo "total $(( $(date +%s) - t0 )) s"
