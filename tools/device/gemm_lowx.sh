#!/usr/bin/env bash
# Device call: the tiered GEMM at N = 512 with few host rows (issue 4: "EB flat up to x*"). Per
# launch, Llama-2-7B gate_up (22016 x 4096) at x = 0, 0.5, 2, 10, 40, 100 %: multicast clusters of
# up to 1 (off), 2 and 4 CTAs, and 4 with PDL off; then every gpu test unless SKIP_TESTS=1, and
# `dak bench gemm --quick` with QUICK=1. Prints the tables last.
# Usage from the repo root: [SKIP_TESTS=1] [QUICK=1] bash tools/device/gemm_lowx.sh. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
d=build-gpu/dak
args="--models llama-2-7b --tokens 512 --ratios 0,0.5,2,10,40,100 --per-gemm-min-mib 150 --stack-host-gib 0.01 --runs 5"
runs=()
run() {  # label; ENVS and FLAGS from the caller
  local label=$1
  timeout 120 env $ENVS $d bench gemm $args $FLAGS --json "$OUT/$label.json" > "$OUT/$label.txt" 2> "$OUT/$label.log"
  echo "$label rc=$?"; grep -E "error|fix" "$OUT/$label.log" | head -3
  runs+=("$label=$OUT/$label.json")
}
ENVS="" FLAGS="--max-cluster 1" run c1
ENVS="" FLAGS="--max-cluster 2" run c2
ENVS="" FLAGS="--max-cluster 4" run c4
ENVS="DAK_NO_PDL=1" FLAGS="--max-cluster 4" run c4-nopdl
[[ ${SKIP_TESTS:-0} == 1 ]] || dak_gpu_tests 120
if [[ ${QUICK:-0} == 1 ]]; then
  timeout 200 $d bench gemm --quick --json "$OUT/quick.json" > "$OUT/quick.txt" 2> "$OUT/quick.log"
  echo "bench gemm --quick rc=$?"; grep -E "^(B_g|B_h|multicast)" "$OUT/quick.txt" | cut -c1-110
  grep -E "targets|differ" "$OUT/quick.txt" | head -4
  runs+=("quick=$OUT/quick.json")
fi
rm -f "$OUT"/*.log
python3 tools/device/summarize_gemm.py "${runs[@]}"
echo "total $(( $(date +%s) - t0 )) s"
