#!/usr/bin/env bash
# Session 33, call 4 (H100 expected): the compiled-in h100-default profile picked by GPU runs
# without --profile. Build; every gpu test; `dak generate` with a budget that forces offload (its
# plan line, no profile notice on this GPU); issue 7's Llama-2-7B batch-8 points at 10 / 30 % (auto)
# and each --offload mode at 10 %; batch 512 at 10 % (auto). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
limit=${DAK_CALL_LIMIT:-540}
left() { [ $(( $(date +%s) - t0 )) -lt $(( limit - $1 )) ]; }
timeout 60 build-gpu/dak generate --random-weights --model llama-2-7b --gpu-memory 10GiB --prompt-ids 1,2,3 \
  --max-new-tokens 4 > "$OUT/generate.txt" 2> "$OUT/generate.log"
echo "generate rc=$?"; grep -E "notice|offload|profile|placed" "$OUT/generate.log" | cut -c1-250
dak_bench_point l7-b8-auto X=1 90 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3
grep -E "^offload \(mode" /tmp/s-l7-b8-auto.txt | grep -o "predicted = .*"
for m in direct prefetch zero-copy; do
  left 80 || { echo "skip $m (time)"; continue; }
  dak_bench_point l7-b8-10-$m X=1 60 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload $m
done
left 90 && dak_bench_point l7-b512-10-auto X=1 90 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
