#!/usr/bin/env bash
# Session 38, call 3: the tree with auto refining every variant (DAK_PLAN_REFINE_ALL default on):
# every gpu test; then issue 7's OPT-30B batch-8 points at 10 / 30 / 60 % in the modes session 37
# left (direct, prefetch, zero-copy) with auto again as the same-call baseline; then Llama-2-7B
# batch 512 at 10 / 30 % (auto) on this H100. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
for m in auto direct prefetch zero-copy; do
  left 80 || { echo "skip opt-30b $m (time)"; continue; }
  r=0.1,0.3,0.6; [ $m = zero-copy ] && r=0.1,0.3  # zero-copy at 60 %: ~1 s a step (the link under cuBLASLt)
  dak_bench_point opt-30b-b8-$m X=1 100 --model opt-30b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio $r --offload $m
done
left 90 && dak_bench_point llama-2-7b-b512-auto X=1 110 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3
grep -h "notice" /tmp/s-*.log | sort | uniq -c | cut -c1-220
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
