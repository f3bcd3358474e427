#!/usr/bin/env bash
# Device call (session 8, last): the tree as landed (the wide-stage kernel reverted; the per-CTA trace
# and the `tma` probe kept). Build; every gpu test (4 at a time); `gemm_probe tma` (incl. one 3D box
# of 4 atoms per instruction); Llama-2-7B decode TPOT (cuBLASLt, tiered); offload points under the
# calibrated planner: OPT-6.7B batch 8 at 10 / 30 % and FlexGen's OPT-6.7B point (1 GiB on the host),
# Llama-2-7B batch 8 prefetch / zero-copy / direct at 10 %. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 200 4
timeout 60 build-gpu/gemm_probe tma > "$OUT/tma.txt" 2>&1; echo "tma rc=$?"
dak_l7_decode tiered X=1 tiered
dak_l7_decode cublas X=1 cublas
bench() {  # label, seconds, flags...
  local label=$1 limit=$2; shift 2
  timeout "$limit" build-gpu/dak bench --random-weights --repeats 5 --prompt-len 32 --gen-len 8 \
    --json "$OUT/bench-$label.json" "$@" > "$OUT/$label.txt" 2> /dev/null
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"
  sed -n '/^offload (mode/,/^$/p' "$OUT/$label.txt" | grep -E "^\| [0-9]"
}
bench opt67-b8 120 --model opt-6.7b --batch 8 --offload-ratio 0.1,0.3
bench opt67-flexgen 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1.0
for m in direct prefetch zero-copy; do bench l7-b8-$m 60 --model llama-2-7b --batch 8 --offload-ratio 0.1 --offload $m; done
cat "$OUT/tma.txt"
rm -f "$OUT"/l7-*.txt "$OUT"/opt67-*.txt "$OUT"/gpu-tests.log  # $OUT brings back at most 8 files
echo "total $(( $(date +%s) - t0 )) s"
