#!/usr/bin/env bash
# Session 33, last call: the landing tree. Build; every gpu test; `dak generate` on Llama-2-7B
# random weights with a budget that forces offload (no profile notice on an H100 80GB HBM3); one
# issue-3 decode point. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
timeout 60 build-gpu/dak generate --random-weights --model llama-2-7b --gpu-memory 10GiB --prompt-ids 1,2,3 \
  --max-new-tokens 4 > "$OUT/generate.txt" 2> "$OUT/generate.log"
echo "generate rc=$?"; grep -E "notice|offload|placed|TPOT" "$OUT/generate.log" | cut -c1-220
timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 2> /dev/null > "$OUT/bench.txt"
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/bench.txt" | cut -c1-140
echo "total $(( $(date +%s) - t0 )) s"
