#!/usr/bin/env bash
# Device call (session 6): (1) gate_up at N = 512 with host rows in whole 128-row tiles (dak bench
# gemm's new default), multicast up to 4; (2) the same at x = 10 % and 40 % with more host bytes in
# flight than the 256 KiB cap (--congestion), to see whether the cap limits the host side; (3) the
# full `dak profile` (the GEMM sweep with clusters has not run before) into $OUT/h200-measured.json;
# (4) Llama-2-7B batch 512 at 10 % with --offload direct and prefetch (auto ran in lowx_and_b512.sh).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
d=build-gpu/dak
g="--models llama-2-7b --tokens 512 --per-gemm-min-mib 150 --stack-host-gib 0.01 --runs 5"
runs=()
gemm() {  # label, flags...
  local label=$1; shift
  timeout 120 $d bench gemm $g "$@" --json "$OUT/gemm-$label.json" > /dev/null 2> "$OUT/gemm.log"
  echo "bench gemm $label rc=$?"; grep -iE "error|fix" "$OUT/gemm.log" | head -3
  runs+=("$label=$OUT/gemm-$label.json")
}
gemm tiles --ratios 0,0.5,2,10,40,100
gemm x10-16x6 --ratios 10 --congestion 16,6
gemm x10-32x4 --ratios 10 --congestion 32,4
gemm x40-48x4 --ratios 40 --congestion 48,4
gemm x40-64x2 --ratios 40 --congestion 64,2
python3 tools/device/summarize_gemm.py "${runs[@]}" | grep -v stack8
timeout 300 $d profile -o "$OUT/h200-measured.json" > "$OUT/profile.txt" 2> "$OUT/profile.log"
echo "profile rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/profile.log" | head -5
grep -iE "cap|in flight|B_g|B_h|tensor|planned/best" "$OUT/profile.txt" | head -20 | cut -c1-160
for m in direct prefetch; do
  timeout 120 $d bench --random-weights --repeats 5 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 \
    --offload-ratio 0.1 --offload $m --json "$OUT/bench-l7-b512-$m.json" > "$OUT/l7.txt" 2> "$OUT/l7.log"
  echo "bench l7-b512 $m rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/l7.log" | head -3
  sed -n '/^offload (mode/,/^$/p' "$OUT/l7.txt" | grep -E "^\| [0-9]"
done
rm -f "$OUT"/*.log "$OUT/l7.txt"
echo "total $(( $(date +%s) - t0 )) s"
