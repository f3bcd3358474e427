#!/usr/bin/env bash
# Device calls of session 21: the planner prices auto plans with staged linears by the engine's copy
# pipeline and counts their ring as the engine allocates it (docs/planner.md §2), so the issue-7
# offload points are re-measured against the new predictions, every mode at Llama-2-7B batch 512 /
# 10 %, and the matrix of global ratios {0, 10, 30, 60} % at batch 8 and 512 (`dak bench`, random
# weights, prompt 32, gen 8, 5 repeats). PARTS picks: tests l7 opt67 (call 1), opt30 capacity
# (call 2). JSON of every run merged into $OUT/offload.json, text into $OUT/offload.txt (common.sh).
# (Calls 1, 2 and 5 ran this script with its own copy of dak_bench_point / dak_merge_points.)
# Usage from the repo root: PARTS="tests l7 opt67" bash tools/device/session21.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
parts=${PARTS:-tests l7 opt67}
dak_build dak dak_gpu_tests
[[ $parts == *tests* ]] && dak_gpu_tests 60 4
if [[ $parts == *l7* ]]; then
  dak_bench_point l7-b512-auto X=1 120 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
  for m in prefetch direct zero-copy; do dak_bench_point l7-b512-$m X=1 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload $m; done
  dak_bench_point l7-b8-auto X=1 90 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
fi
if [[ $parts == *opt67* ]]; then
  dak_bench_point opt67-b8-auto X=1 90 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
  dak_bench_point opt67-flexgen X=1 60 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 1
  dak_bench_point opt67-b512-auto X=1 120 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
fi
if [[ $parts == *opt30* ]]; then
  dak_bench_point opt30-b8-auto X=1 170 --model opt-30b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
  dak_bench_point opt30-flexgen X=1 90 --model opt-30b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 4.6
  dak_bench_point opt30-b512-auto X=1 200 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3
fi
if [[ $parts == *capacity* ]]; then
  dak_bench_point opt30-capacity X=1 150 --model opt-30b --batch 96 --prompt-len 512 --gen-len 8 --gpu-memory 100GiB
fi
dak_merge_points
[[ $parts == *tests* ]] && grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
