#!/usr/bin/env bash
# Device call 6 of session 14: the attention combine requests its first 8 partial outputs per
# column together with the (m, l) pairs (one round trip for <= 8 live splits) and reduces (m, l)
# across the block. Every gpu test (a new 2048-split case); decode TPOT and timelines; offload
# points; `dak bench attention --quick`. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_timeline b1 X=1 --batch 1
dak_timeline b8 X=1 --batch 8
dak_l7_decode a X=1 auto
dak_l7_decode b X=1 auto
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench opt1g 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
timeout 200 build-gpu/dak bench attention --quick > "$OUT/attention-quick.txt" 2>&1
echo "bench attention --quick rc=$? ($(( $(date +%s) - t0 )) s)"
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "MISSED|met|targets" "$OUT/attention-quick.txt" | cut -c1-160 | tail -30
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
