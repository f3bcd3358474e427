#!/usr/bin/env bash
# Device call 6 of session 15: the tree to land after the CLI bad-input fixes (host-side code): the GPU
# build, every gpu test and every cpu test (the machine's newer CLI11 refused a positional named like an option), Llama-2-7B decode at batch 1 / 8 (auto). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
ctest --test-dir build-gpu -L cpu -j16 --timeout 120 > "$OUT/cpu-tests.log" 2>&1
echo "cpu tests rc=$?"; grep -E "tests passed|\*\*\*Failed" "$OUT/cpu-tests.log" | tail -n 8
dak_l7_decode a X=1 auto
build-gpu/dak generate --model llama-2-7b --random-weights --prompt-ids 1,2,3 -n 4 --seed 010 --output json \
  > "$OUT/gen.json" 2> "$OUT/gen.err"; echo "generate --random-weights rc=$?"; tail -n 2 "$OUT/gen.err"
dak_bundle_decode
echo "total $(( $(date +%s) - t0 )) s"
