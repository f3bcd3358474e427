#!/usr/bin/env bash
# One device call: build dak on the GPU machine, run the gpu tests (and the cpu tests as a
# cross-check of the toolchain there), then `dak bench` on Llama-2-7B shapes with random weights
# (batch 1, 8, 64; prompt 32, gen 32), and print a short table last.
# Carry: third_party (CUTLASS headers, pcre2.h). Usage from the repo root: bash tools/device/gpu_check.sh
set -uo pipefail
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader
t0=$(date +%s)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF > build-gpu.log 2>&1 &&
  cmake --build build-gpu -j16 >> build-gpu.log 2>&1
build_rc=$?
t1=$(date +%s)
if [[ $build_rc != 0 ]]; then tail -n 60 build-gpu.log; echo "BUILD FAILED"; exit 1; fi
DAK_REQUIRE_GPU=1 ctest --test-dir build-gpu -L gpu --output-on-failure > gpu-tests.log 2>&1; gpu_rc=$?
ctest --test-dir build-gpu -L cpu -j16 > cpu-tests.log 2>&1; cpu_rc=$?
cat gpu-tests.log | tail -n 30

# Benchmark (issue 3, item 7): TTFT/TPOT/EB next to the HBM floor of the same run, with the
# per-operator breakdown; well under a minute on the H200.
rm -f bench.txt bench.log bench.csv bench.json
t2=$(date +%s)
timeout 300 build-gpu/dak bench --model llama-2-7b --random-weights --batch 1,8,64 --prompt-len 32 --gen-len 32 \
  --repeats 5 --csv bench.csv --json bench.json > bench.txt 2> bench.log
bench_rc=$?
t3=$(date +%s)
echo
cat bench.txt
[[ $bench_rc != 0 ]] && tail -n 20 bench.log
[[ -n "${OUT:-}" ]] && cp build-gpu.log gpu-tests.log cpu-tests.log bench.txt bench.log bench.csv bench.json "$OUT"/ 2>/dev/null
echo
echo "| step | result |"
echo "|---|---|"
echo "| build (s) | $((t1 - t0)) |"
echo "| gpu tests | rc=$gpu_rc $(grep -E 'tests passed' gpu-tests.log) |"
echo "| cpu tests | rc=$cpu_rc $(grep -E 'tests passed' cpu-tests.log) |"
echo "| bench (s) | rc=$bench_rc, $((t3 - t2)) s |"
# One row per batch from bench.csv: TPOT, floor, ratio and issue 3's target.
[[ -f bench.csv ]] && awk -F, 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
  { t = $col["target"]; r = $col["tpot_over_floor"];
    verdict = t > 0 ? sprintf("target <= %.2f %s", t, r <= t ? "met" : "MISSED") : "no target";
    printf "| bench b=%s | TPOT %.3f ms, floor %.3f ms, TPOT/floor %.3f (%s), TTFT %.2f ms, B_g %.2f TB/s |\n",
      $col["batch"], $col["tpot_ms"], $col["floor_ms"], r, verdict, $col["ttft_ms"], $col["hbm_tb_s"] }' bench.csv
