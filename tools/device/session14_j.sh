#!/usr/bin/env bash
# Device call 10 of session 14: `--gemm auto` runs the tiered GEMM up to 32 tokens (was 16). Every
# gpu test; Llama-2-7B decode TPOT at batch 1, 8, 24, 32 with auto. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,24,32 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench-auto.json" > "$OUT/auto.txt" 2> /dev/null
echo "auto rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/auto.txt" | cut -c1-110
echo "total $(( $(date +%s) - t0 )) s"
