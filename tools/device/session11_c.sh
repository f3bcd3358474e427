#!/usr/bin/env bash
# Device call 3 of session 11: the zero-copy GEMM measurement now reads W from a fresh region of the
# host buffer on every launch and writes a wide y (as the engine's host GEMM does). Build; the
# Profile gpu test; `dak profile` into $OUT/h200-measured.json; zero-copy against its prediction
# at the three points of call 2. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gtest 'Profile.*' 120
timeout 240 build-gpu/dak profile -o "$OUT/h200-measured.json" > "$OUT/profile.txt" 2> /tmp/profile.log
echo "profile rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" /tmp/profile.log | head -5
python3 -c "import json,sys; z=json.load(open(sys.argv[1]))['zero_copy']; print('attention', round(z['attention_gbps'],1));
[print(g['N'], g['K'], g['rows'], round(g['gbps'],1)) for g in z['gemm']]" "$OUT/h200-measured.json" | tr '\n' ';'; echo
P="--profile $OUT/h200-measured.json"
dak_offload_bench l7-zc 90 --model llama-2-7b --batch 8 --offload-ratio 0.1 --offload zero-copy $P
dak_offload_bench opt-zc 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1 --offload zero-copy $P
dak_offload_bench l7b512-zc 150 --model llama-2-7b --batch 512 --offload-ratio 0.1 --offload zero-copy $P
cp /tmp/bench-*.json "$OUT/" 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
