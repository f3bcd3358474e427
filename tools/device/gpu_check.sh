#!/usr/bin/env bash
# One device call: build dak on the GPU machine, run every gpu test (60 s limit each) and the cpu
# tests, then the benchmarks: `dak bench` (Llama-2-7B shapes, random weights, batch 1/8/64, prompt
# 32, gen 32) with the linears on cuBLASLt and on the tiered GEMM, `dak bench gemm`, `dak bench
# attention` and `dak profile`; prints a short table last. MODE=quick runs the quick variants of
# the three new benchmarks. Carry: third_party (CUTLASS headers, pcre2.h).
# Usage from the repo root: [MODE=quick] bash tools/device/gpu_check.sh
set -uo pipefail
MODE=${MODE:-full}
q=""; [[ $MODE == quick ]] && q="--quick"
OUT=${OUT:-/tmp/dak-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF > build-gpu.log 2>&1 &&
  cmake --build build-gpu -j16 >> build-gpu.log 2>&1
build_rc=$?
t1=$(date +%s)
if [[ $build_rc != 0 ]]; then grep -E "error|Error" build-gpu.log | head -n 40; echo "BUILD FAILED"; exit 1; fi
DAK_REQUIRE_GPU=1 ctest --test-dir build-gpu -L gpu --timeout 60 --output-on-failure > "$OUT/gpu-tests.log" 2>&1; gpu_rc=$?
ctest --test-dir build-gpu -L cpu -j16 > "$OUT/cpu-tests.log" 2>&1; cpu_rc=$?
t2=$(date +%s)
grep -E "Failed|Timeout|tests passed" "$OUT/gpu-tests.log" | tail -n 30

d=build-gpu/dak
for g in cublas auto; do
  timeout 240 $d bench --model llama-2-7b --random-weights --batch 1,8,64 --prompt-len 32 --gen-len 32 --repeats 5 \
    --gemm $g --csv "$OUT/bench-$g.csv" --json "$OUT/bench-$g.json" > "$OUT/bench-$g.txt" 2> "$OUT/bench-$g.log"
  echo "bench --gemm $g rc=$?"; cat "$OUT/bench-$g.txt"
done
t3=$(date +%s)
timeout 300 $d bench gemm $q --json "$OUT/gemm.json" --csv "$OUT/gemm.csv" > "$OUT/gemm.txt" 2> "$OUT/gemm.log"; gemm_rc=$?
t4=$(date +%s)
timeout 240 $d bench attention $q --json "$OUT/attention.json" --csv "$OUT/attention.csv" > "$OUT/attention.txt" \
  2> "$OUT/attention.log"; att_rc=$?
t5=$(date +%s)
rm -f "$OUT/profile.json"
timeout 240 $d profile $q --output "$OUT/profile.json" > "$OUT/profile.txt" 2> "$OUT/profile.log"; prof_rc=$?
t6=$(date +%s)
tail -n 40 "$OUT/gemm.txt"; tail -n 5 "$OUT/gemm.log"
tail -n 30 "$OUT/attention.txt"; tail -n 5 "$OUT/attention.log"
tail -n 30 "$OUT/profile.txt"; tail -n 5 "$OUT/profile.log"
cp build-gpu.log "$OUT/" 2>/dev/null
echo
echo "| step | result |"
echo "|---|---|"
echo "| build (s) | $((t1 - t0)) |"
echo "| gpu tests | rc=$gpu_rc $(grep -E 'tests passed' "$OUT/gpu-tests.log"), $((t2 - t1)) s with cpu tests |"
echo "| cpu tests | rc=$cpu_rc $(grep -E 'tests passed' "$OUT/cpu-tests.log") |"
echo "| bench decode (s) | $((t3 - t2)) |"
echo "| bench gemm | rc=$gemm_rc, $((t4 - t3)) s |"
echo "| bench attention | rc=$att_rc, $((t5 - t4)) s |"
echo "| profile | rc=$prof_rc, $((t6 - t5)) s |"
for g in cublas auto; do
  [[ -f "$OUT/bench-$g.csv" ]] && awk -F, -v g=$g 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    { t = $col["target"]; r = $col["tpot_over_floor"];
      verdict = t > 0 ? sprintf("target <= %.2f %s", t, r <= t ? "met" : "MISSED") : "no target";
      printf "| decode %s b=%s | TPOT %.3f ms, floor %.3f ms, TPOT/floor %.3f (%s), TTFT %.2f ms, B_g %.2f TB/s |\n",
        g, $col["batch"], $col["tpot_ms"], $col["floor_ms"], r, verdict, $col["ttft_ms"], $col["hbm_tb_s"] }' "$OUT/bench-$g.csv"
done
