#!/usr/bin/env bash
# Device call 8 of session 19: every gpu test on the landing tree (the environment switches now read
# through core/env.h). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
DAK_NO_PDL=yes timeout 30 build-gpu/dak bench --random-weights --model llama-2-7b --batch 1 --prompt-len 8 --gen-len 4 \
  --repeats 1 2>&1 | grep -E "DAK_NO_PDL|^\| 1 \|" | cut -c1-120
echo "total $(( $(date +%s) - t0 )) s"
