#!/usr/bin/env bash
# Device call 5 of session 22 (the landing tree after the trial's fixes): every gpu test, and the
# trial's case of auto against direct under a binding budget (Qwen2-7B batch 512, prompt 128,
# --gpu-memory 8GiB: auto refined 227.7 ms predicted with a 777 MiB ring, direct 221.2; the direct
# path's compute tiles run slower than the model says, session 21), `dak bench`, random weights, gen 8.
# Usage from the repo root: bash tools/device/session22_d.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
for m in auto direct prefetch; do
  dak_bench_point qwen2-b512-8g-$m X=1 120 --model qwen2-7b --batch 512 --prompt-len 128 --gen-len 8 --gpu-memory 8GiB --offload $m
done
dak_merge_points
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
