#!/usr/bin/env bash
# Device call 1 of session 11: build; every gpu test (4 at a time); the full `dak profile` (now with
# the zero-copy reads: cuBLASLt GEMMs and decode attention on host-mapped memory) into
# $OUT/h200-measured.json; then each --offload mode at Llama-2-7B batch 8, 10 % and OPT-6.7B batch 8
# with 1 GiB on the host, planned with that profile, so each mode's prediction meets its
# measurement in one run. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
timeout 240 build-gpu/dak profile -o "$OUT/h200-measured.json" > "$OUT/profile.txt" 2> "$OUT/profile.log"
echo "profile rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/profile.log" | head -5
python3 -c "import json,sys; p=json.load(open(sys.argv[1])); print('zero_copy', json.dumps(p.get('zero_copy')));
print('B_g', p['hbm']['read_gbps'], 'B_h', p['host_link']['sm_read_gbps'], 'B_ce', p['host_link']['copy_engine_gbps'])" \
  "$OUT/h200-measured.json"
P="--profile $OUT/h200-measured.json"
for m in zero-copy direct prefetch auto; do
  dak_offload_bench "l7-$m" 90 --model llama-2-7b --batch 8 --offload-ratio 0.1 --offload $m $P
done
for m in zero-copy auto; do
  dak_offload_bench "opt-$m" 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1 --offload $m $P
done
echo "total $(( $(date +%s) - t0 )) s"
