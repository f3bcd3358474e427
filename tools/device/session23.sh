#!/usr/bin/env bash
# Device call 1 of session 23: the cost model now prices a compute-path linear (N > 64) with host
# rows as the engine launches it (plan_tiered_gemm's host clusters, one read stream each with its
# ring of W tiles in flight over a loaded latency of 3.9 us, 15 us lost at the start; the HBM side
# in rounds on the CTAs left). --offload direct plans change with it. Measured here: the direct
# placements it makes against its predictions (and Llama-2-7B batch 512 at 10 % against session
# 22's direct placement, same call), and auto beside direct where the two are close.
# `dak bench`, random weights, prompt 32 (Qwen2 128), gen 8. Usage from the repo root:
# bash tools/device/session23.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
plans=docs/results/2026-12-04/session23/plans
s22=docs/results/2026-12-04/session22/plans
dak_build dak
dak_bench_point l7-b512-10-direct X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload direct
dak_bench_point l7-b512-10-direct-s22 X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --plan $plans/l7-b512-10-direct-session22.json
dak_bench_point l7-b512-30-direct X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.3 --offload direct
dak_bench_point opt67-b512-10-direct X=1 60 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload direct
dak_bench_point qwen2-b512-8g-direct X=1 120 --model qwen2-7b --batch 512 --prompt-len 128 --gen-len 8 --gpu-memory 8GiB --offload direct
dak_bench_point qwen2-b512-8g-auto X=1 120 --model qwen2-7b --batch 512 --prompt-len 128 --gen-len 8 --gpu-memory 8GiB --offload auto
dak_bench_point opt30-b512-30-direct X=1 100 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.3 --offload direct
dak_bench_point opt30-b512-30-staged X=1 100 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --plan $s22/opt30-b512-30-staged.json
dak_merge_points
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
