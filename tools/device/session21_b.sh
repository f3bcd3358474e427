#!/usr/bin/env bash
# Device call 3 of session 21: the staging ring with three slots (the copy of staged linear k waits
# for the GEMM of k - 3, not k - 2) against two (DAK_STAGING_SLOTS=2, same binary), at the batch-512
# 10 % points where call 1 measured 1.06-1.08 x the floor (Llama-2-7B, OPT-6.7B, OPT-30B) and the
# Llama-2-7B batch-8 point; FlexGen's OPT points with --cpu-offload-gb now planned as a host amount;
# every gpu test. `dak bench`, random weights, prompt 32, gen 8 (FlexGen: gen 32), auto.
# Usage from the repo root: bash tools/device/session21_b.sh. Carry: third_party. (Call 3 ran it with
# its own copies of dak_bench_point / dak_merge_points, since moved to common.sh.)
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
for pass in 1 2; do
  for slots in 3 2; do
    dak_bench_point l7-b512-s$slots-p$pass DAK_STAGING_SLOTS=$slots 60 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  done
done
for slots in 3 2; do
  dak_bench_point opt67-b512-s$slots DAK_STAGING_SLOTS=$slots 60 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  dak_bench_point l7-b8-s$slots DAK_STAGING_SLOTS=$slots 40 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
done
dak_bench_point opt67-flexgen X=1 60 --model opt-6.7b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 1
dak_bench_point opt30-flexgen X=1 90 --model opt-30b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 4.6
for slots in 3 2; do
  dak_bench_point opt30-b512-s$slots DAK_STAGING_SLOTS=$slots 90 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
done
dak_merge_points
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
