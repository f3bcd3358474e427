#!/usr/bin/env bash
# Session 35, call 1: the tree after session 34's review (rope_pair.cuh shared by every RoPE kernel,
# not yet run on a GPU). Build dak, the gpu tests and the timeline library; every gpu test; Llama-2-7B
# decode at batch 1 / 8 / 64 (prompt 32, gen 32, auto); CUPTI timelines of one decode layer at batch 64
# (`--gemm tiered` and auto) and batch 8 (auto), to see where batch 64 spends its ~209 us a layer.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests dak_timeline
dak_gpu_tests 120 2
dak_tpot X=1 auto --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32 | tee "$OUT/decode.txt"
dak_tpot X=1 tiered --model llama-2-7b --batch 64 --prompt-len 32 --gen-len 32 --gemm tiered | tee -a "$OUT/decode.txt"
dak_timeline b64-tiered X=1 --batch 64 --gemm tiered
dak_timeline b64-auto X=1 --batch 64
dak_timeline b8-auto X=1 --batch 8
grep -E "^=== |graph|layer period|^ +[0-9]+ |before the layers" "$OUT/timelines.txt" | cut -c1-100 | head -80
echo "total $(( $(date +%s) - t0 )) s"
