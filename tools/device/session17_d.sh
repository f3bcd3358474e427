#!/usr/bin/env bash
# Device call of session 17 on the landing tree: the GPU build, every gpu test, Llama-2-7B decode
# at batch 1 / 8 / 64 (auto), the full `dak bench attention` sweep (issue 5's table: 3 models x
# batch 8 / 64 / 512 x 512 / 4K / 32K keys x 5 ratios + the balance point; cells under 256 MiB
# timed as an 8-layer stack), and `dak generate --random-weights` (SKIP_GPU_TESTS=1: no gpu tests, when the same call ran them). A short table
# last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
[[ ${SKIP_GPU_TESTS:-0} == 1 ]] || dak_gpu_tests 60 4
timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 --json "$OUT/decode-final.json" > "$OUT/decode-final.txt" 2> /dev/null
echo "decode rc=$? ($(( $(date +%s) - t0 )) s)"
timeout 300 build-gpu/dak bench attention --json "$OUT/attention.json" --csv "$OUT/attention.csv" \
  > "$OUT/attention.txt" 2> "$OUT/attention.log"
echo "bench attention rc=$? ($(( $(date +%s) - t0 )) s)"
build-gpu/dak generate --model llama-2-7b --random-weights --prompt-ids 1,2,3 -n 4 --seed 010 --output json \
  > "$OUT/gen.json" 2> "$OUT/gen.err"; echo "generate --random-weights rc=$?"; tail -n 2 "$OUT/gen.err"
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode-final.txt" | cut -c1-100
grep -E "^targets|^B_g|^B_h|\| tiered \| 0 \||MISSED" "$OUT/attention.txt" | cut -c1-160 | head -60
echo "total $(( $(date +%s) - t0 )) s"
