#!/usr/bin/env bash
# Device call 6 of session 11 (the landing tree): build; every gpu test; `dak profile --quick
# --skip-gemm` (its new zero-copy table); the four modes at Llama-2-7B batch 8 and 512 at 10 % and
# at OPT-6.7B batch 8 with 1 GiB on the host, planned with the compiled-in default profile (now
# with the zero-copy rates). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
timeout 120 build-gpu/dak profile --quick --skip-gemm -o /tmp/quick.json > "$OUT/profile-quick.txt" 2> /tmp/profile.log
echo "profile --quick rc=$?"; sed -n '/^Zero-copy/,/^$/p' "$OUT/profile-quick.txt"
for m in auto prefetch direct zero-copy; do
  dak_offload_bench "l7-$m" 90 --model llama-2-7b --batch 8 --offload-ratio 0.1 --offload $m
done
for m in auto prefetch direct zero-copy; do
  dak_offload_bench "opt-$m" 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1 --offload $m
done
for m in auto prefetch direct zero-copy; do
  dak_offload_bench "l7b512-$m" 150 --model llama-2-7b --batch 512 --offload-ratio 0.1 --offload $m
done
python3 - "$OUT/offload.json" /tmp/bench-*.json <<'PY'
import json, sys
json.dump({f.split('bench-')[1][:-5]: json.load(open(f)) for f in sys.argv[2:]}, open(sys.argv[1], 'w'), indent=1)
PY
echo "total $(( $(date +%s) - t0 )) s"
