#!/usr/bin/env bash
# Device calls of session 22: the planner's copy pipeline shares the host link between the copy
# engine and the direct reads (a fluid simulation) and decode steps of <= 32 tokens take the tiered
# GEMM's per-kernel overhead (2.5 us); two placements changed (Llama-2-7B batch 8 at 30 %, OPT-6.7B
# batch 8 at 60 %): each is measured against its session-21 plan (`--plan`, same call), the tie the
# old replay could not break (call 6 of session 21) against today's plan, and the predictions at
# 0 / 10 % (`dak bench`, random weights, prompt 32, gen 8, 5 repeats). PARTS: tests l7 opt67 (call 1),
# opt30 hbm (call 2: the capacity run after the ring bisection, batch 512 at 60 %; the bench's
# all-HBM prediction).
# Usage from the repo root: PARTS="tests l7 opt67" bash tools/device/session22.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
parts=${PARTS:-tests l7 opt67}
plans=docs/results/2026-12-04/session22/plans
dak_build dak dak_gpu_tests
[[ $parts == *tests* ]] && dak_gpu_tests 60 4
if [[ $parts == *l7* ]]; then
  dak_bench_point l7-b1 X=1 40 --model llama-2-7b --batch 1 --prompt-len 32 --gen-len 8 --offload-ratio 0
  dak_bench_point l7-b8 X=1 120 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3
  dak_bench_point l7-b8-30-s21plan X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --plan $plans/l7-b8-30-session21.json
  dak_bench_point l7-b8-10-tie X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --plan $plans/l7-b8-10-refit-tie.json
  dak_bench_point l7-b512 X=1 120 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1
fi
if [[ $parts == *opt67* ]]; then
  dak_bench_point opt67-b8 X=1 120 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.6
  dak_bench_point opt67-b8-60-s21plan X=1 60 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 8 --plan $plans/opt67-b8-60-session21.json
fi
if [[ $parts == *opt30* ]]; then
  dak_bench_point opt30-capacity X=1 150 --model opt-30b --batch 96 --prompt-len 512 --gen-len 8 --gpu-memory 100GiB
  dak_bench_point opt30-b512-60 X=1 240 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.6
  dak_bench_point opt30-b8 X=1 120 --model opt-30b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1
fi
if [[ $parts == *hbm* ]]; then  # the bench's own all-HBM prediction (call 2: the tiered step overhead)
  dak_bench_point l7-b1-hbm X=1 40 --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 8
fi
if [[ $parts == *cli* ]]; then  # the bench argument checks a GPU reaches (new-user trial, session 21)
  build-gpu/dak bench --random-weights --model llama-2-7b --batch 1 --gen-len 2 --json /tmp/x.json --csv /tmp/../tmp/x.json; echo "same report file rc=$?"
  build-gpu/dak bench --random-weights --model llama-2-7b --batch 1 --prompt-len 4096 --gen-len 8; echo "context overflow rc=$?"
fi
dak_merge_points
[[ $parts == *tests* ]] && grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
