#!/usr/bin/env bash
# Session 33, call 2 (H100 expected): build; every gpu test (after last_merge's removal and the
# HbmArena free-memory wait); `dak profile` of this GPU into $OUT/h100-measured.json (to ship as
# the compiled-in profile of the H100); issue 7's Llama-2-7B batch-8 points at 10 / 30 % planned
# with the compiled-in h200-default and with the measured profile: the prediction against TPOT.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
limit=${DAK_CALL_LIMIT:-540}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,pcie.link.gen.max,pcie.link.width.max --format=csv
s=$(date +%s)
timeout 300 build-gpu/dak profile -o "$OUT/h100-measured.json" --name h100-measured > "$OUT/profile.txt" 2> /tmp/profile.log
echo "profile rc=$? ($(( $(date +%s) - s )) s)"; tail -3 /tmp/profile.log
tail -40 "$OUT/profile.txt"
for p in default h100; do
  [ $(( $(date +%s) - t0 )) -lt $(( limit - 60 )) ] || { echo "skip $p (time)"; continue; }
  prof=(); [ $p = h100 ] && prof=(--profile "$OUT/h100-measured.json")
  [ $p = h100 ] && [ ! -s "$OUT/h100-measured.json" ] && { echo "no profile"; continue; }
  dak_bench_point l7-b8-$p X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3 "${prof[@]}"
done
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
