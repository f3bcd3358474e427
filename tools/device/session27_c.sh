#!/usr/bin/env bash
# Device call planned in session 27 (not run: no device that session): the decode GEMMs' ring small
# enough that two CTAs share an SM (DAK_TIERED_GEMM_BW_RING_BYTES=110592: 3 stages at bn 8, 2 at
# bn 16; the kernel then declares 2 CTAs per SM: 78 / 80 registers, bn 16 spilling 108 bytes), so the
# next GEMM's CTAs become resident beside the previous GEMM's and start their W loads before it ends
# (the ~3 us per GEMM boundary of docs/perf-notes.md, sessions 24-26). Same bits: the ring depth does
# not change any sum. A second build tree next to build-gpu (left by an earlier call on the same warm
# machine, else built here): the tiered GEMM gpu tests in it, Llama-2-7B decode at batch 1 / 8 on
# both trees twice, interleaved, and the timeline at batch 1 on the small ring.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
[ -x build-gpu/dak ] || dak_build dak dak_timeline
RING=-DDAK_TIERED_GEMM_BW_RING_BYTES=110592
cmake -S . -B build-ring -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF \
  -DCMAKE_CXX_FLAGS=$RING -DCMAKE_CUDA_FLAGS=$RING > cfg-ring.log 2>&1 &&
  cmake --build build-ring -j16 --target dak dak_gpu_tests > build-ring.log 2>&1 || { grep error build-ring.log | head; exit 1; }
echo "build ring $(( $(date +%s) - t0 )) s"
DAK_REQUIRE_GPU=1 timeout 240 build-ring/tests/dak_gpu_tests --gtest_filter='TieredGemm*:GpuEngine*' > "$OUT/ring-tests.txt" 2>&1
echo "ring gpu tests rc=$?"; grep -E "^\[  (PASSED|FAILED) |Failure" "$OUT/ring-tests.txt" | head -10
for rep in 1 2; do
  for tree in build-gpu build-ring; do
    timeout 45 $tree/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
      --gen-len 32 > /tmp/d.txt 2>/dev/null
    echo "$tree rep $rep rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" /tmp/d.txt
  done
done | tee "$OUT/decode-ring.txt"
CUDA_INJECTION64_PATH=$PWD/build-gpu/libdak_timeline.so DAK_TIMELINE_OUT=/tmp/tl-ring.csv \
  timeout 120 build-ring/dak bench --random-weights --model llama-2-7b --prompt-len 32 --gen-len 16 --repeats 5 \
  --batch 1 > /tmp/bench-ring.txt 2>&1
python3 tools/timeline/summarize.py /tmp/tl-ring.csv --min-replays 20 > "$OUT/timeline-ring.txt" 2>&1
echo "--- decode (batch, TPOT ms, floor, ratio) per tree"
awk '/ rep /{n=$1" "$3} /^\|/{split($0,c,"|"); print n, "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}' "$OUT/decode-ring.txt"
grep -E "span median|tiered_gemm" "$OUT/timeline-ring.txt" | head -12
echo "total $(( $(date +%s) - t0 )) s"
