#!/usr/bin/env bash
# Device call 2 of session 11: build; the new gpu test (Profile.*) and every gpu test; the full
# `dak profile` with the zero-copy grid (N x K x rows) into $OUT/h200-measured.json; zero-copy
# against its prediction (that profile) at Llama-2-7B batch 8, 10 %, OPT-6.7B batch 8 with 1 GiB on
# the host and Llama-2-7B batch 512, 10 % (auto there too); Llama-2-7B decode TPOT (issue 3, auto);
# the issue-4 sweep `dak bench gemm` (JSON, summary). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
timeout 240 build-gpu/dak profile -o "$OUT/h200-measured.json" > "$OUT/profile.txt" 2> /tmp/profile.log
echo "profile rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" /tmp/profile.log | head -5
python3 -c "import json,sys; z=json.load(open(sys.argv[1]))['zero_copy']; print('attention', round(z['attention_gbps'],1));
[print(g['N'], g['K'], g['rows'], round(g['gbps'],1)) for g in z['gemm']]" "$OUT/h200-measured.json" | tr '\n' ';'; echo
P="--profile $OUT/h200-measured.json"
dak_offload_bench l7-zc 90 --model llama-2-7b --batch 8 --offload-ratio 0.1 --offload zero-copy $P
dak_offload_bench opt-zc 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1 --offload zero-copy $P
dak_offload_bench l7b512-zc 150 --model llama-2-7b --batch 512 --offload-ratio 0.1 --offload zero-copy $P
dak_offload_bench l7b512-auto 120 --model llama-2-7b --batch 512 --offload-ratio 0.1 --offload auto
dak_l7_decode auto X=1 auto
timeout 240 build-gpu/dak bench gemm --json "$OUT/gemm.json" > "$OUT/gemm.txt" 2> /tmp/gemm.log
echo "bench gemm rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" /tmp/gemm.log | head -3
grep -E "targets|met|MISSED|differ" "$OUT/gemm.txt" | grep -vE "^\|" | head -8
python3 tools/device/summarize_gemm.py "sweep=$OUT/gemm.json" > /tmp/gemm-summary.txt
grep -E "stack8|\| 0 \|" /tmp/gemm-summary.txt | head -30
echo "total $(( $(date +%s) - t0 )) s"
