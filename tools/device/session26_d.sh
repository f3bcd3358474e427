#!/usr/bin/env bash
# Device call 5 of session 26 (main after the pairs were reverted, with the trial-26 CLI changes):
# build, every gpu test, Llama-2-7B decode at batch 1 / 8 / 64 (prompt 32, gen 32, auto).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench-l7-final.json" > "$OUT/l7-final.txt" 2>/dev/null; echo "decode rc=$?"
dak_bundle_decode
echo "--- decode, prompt 32, gen 32 (TPOT ms, floor, ratio)"
grep -hE "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | awk '{split($0,c,"|"); print "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}'
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
