#!/usr/bin/env bash
# Device call 4 of session 15: the landing tree (the session's experiments reverted; the CLI
# bad-input fixes of this session and the last are host-side). Every gpu test; Llama-2-7B decode at
# batch 1 / 8 (auto); the offload points; `dak bench gemm --quick` and `dak bench attention --quick`
# with their floors. A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_l7_decode a X=1 auto
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench opt1g 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
timeout 150 build-gpu/dak bench gemm --quick > "$OUT/gemm-quick.txt" 2>&1
echo "bench gemm --quick rc=$? ($(( $(date +%s) - t0 )) s)"
timeout 150 build-gpu/dak bench attention --quick > "$OUT/attention-quick.txt" 2>&1
echo "bench attention --quick rc=$? ($(( $(date +%s) - t0 )) s)"
dak_bundle_decode
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
grep -E "^\| [0-9]" "$OUT/offload.txt" | cut -c1-140
grep -E "targets|stack8 \| layer .*\| 8 \| 0 |B_g|B_h" "$OUT/gemm-quick.txt" | head -12 | cut -c1-200
grep -E "MISSED|met|B_g" "$OUT/attention-quick.txt" | head -8 | cut -c1-160
echo "total $(( $(date +%s) - t0 )) s"
