#!/usr/bin/env bash
# Device call 5 of session 11: the zero-copy GEMM grid now has every multiple of 128 rows up to
# 2048 (cuBLASLt's kernel choice jumps between neighbours: bench/zero_copy_probe.cc). Build; every
# gpu test; `dak profile` into $OUT/h200-measured.json; with that profile, each --offload mode at
# Llama-2-7B batch 8, 10 % and zero-copy at OPT-6.7B batch 8 with 1 GiB on the host and at
# Llama-2-7B batch 512, 10 %, so every prediction meets its measurement in one run. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
timeout 240 build-gpu/dak profile -o "$OUT/h200-measured.json" > "$OUT/profile.txt" 2> /tmp/profile.log
echo "profile rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" /tmp/profile.log | head -5
python3 -c "import json,sys; z=json.load(open(sys.argv[1]))['zero_copy']; print('attention', round(z['attention_gbps'],1), 'gemm points', len(z['gemm']))" \
  "$OUT/h200-measured.json"
P="--profile $OUT/h200-measured.json"
for m in zero-copy direct prefetch auto; do
  dak_offload_bench "l7-$m" 90 --model llama-2-7b --batch 8 --offload-ratio 0.1 --offload $m $P
done
dak_offload_bench opt-zero-copy 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1 --offload zero-copy $P
dak_offload_bench l7b512-zero-copy 150 --model llama-2-7b --batch 512 --offload-ratio 0.1 --offload zero-copy $P
python3 - "$OUT/offload.json" /tmp/bench-*.json <<'PY'
import json, sys
out = {}
for f in sys.argv[2:]:
    out[f.split('bench-')[1][:-5]] = json.load(open(f))
json.dump(out, open(sys.argv[1], 'w'), indent=1)
PY
echo "total $(( $(date +%s) - t0 )) s"
