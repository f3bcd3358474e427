#!/usr/bin/env bash
# Device call 1 of session 16: start the landed tree's dak on the GPU machine (session 15 ended without
# doing so after the CLI11 2.4 start-up fix): the GPU build, every gpu test, every cpu test, Llama-2-7B
# decode at batch 1 / 8 (auto), generate --random-weights, and `dak bench attention --quick` as this
# session's attention baseline. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_cpu_tests_and_generate
dak_l7_decode a X=1 auto
build-gpu/dak inspect configs/llama-2-7b.json > "$OUT/inspect.txt" 2>&1; echo "inspect rc=$?"
timeout 150 build-gpu/dak bench attention --quick > "$OUT/attention-quick.txt" 2>&1
echo "bench attention --quick rc=$? ($(( $(date +%s) - t0 )) s)"
dak_bundle_decode
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" "$OUT/cpu-tests.log" | tail -2
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
grep -E "MISSED|met|B_g|^\|" "$OUT/attention-quick.txt" | head -30 | cut -c1-170
echo "total $(( $(date +%s) - t0 )) s"
