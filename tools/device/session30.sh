#!/usr/bin/env bash
# Device call of session 30: the L2 prefetch of W in the decode GEMMs (kernels/tiered_gemm_kernel.cuh,
# kL2Burst / kL2Ahead), A/B in one binary through DAK_W_L2_BURST / DAK_W_L2_AHEAD:
# 1. build dak, the gpu tests and the timeline library; every gpu test (L2PrefetchOfWKeepsBits among them);
# 2. Llama-2-7B decode at batch 1 / 8 (prompt 32, gen 32) under each variant (and DAK_GEMM_FILL_WAVES=1:
#    qkv at 2 k-splits), two interleaved rounds;
# 3. CUPTI timelines at batch 1 of the default and of VARIANT_T (the expected best), and the batch-8
#    10 % offload point under both, where the time left (DAK_CALL_LIMIT, default 540 s) allows.
# 4. the small ring (session 29) with the L2 prefetch ahead, one round.
# Both switches were removed after the call (measured slower, docs/perf-notes.md session 30): apply
# docs/attempts/session30-l2-prefetch-and-fill-waves.patch to run this again.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
# The small decode ring of session 29 (two CTAs an SM; 20-24 % slower there for lack of bytes in
# flight), built beside the main tree: with W prefetched into L2 ahead of it, it may keep the rate.
# DAK_NO_RING=1 leaves it out (a short call).
RING=-DDAK_TIERED_GEMM_BW_RING_BYTES=110592
pid_ring=
if [ -z "${DAK_NO_RING:-}" ]; then
  cmake -S . -B build-ring -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF \
    -DCMAKE_CXX_FLAGS=$RING -DCMAKE_CUDA_FLAGS=$RING > cfg-ring.log 2>&1 &&
    cmake --build build-ring -j8 --target dak > build-ring.log 2>&1 &
  pid_ring=$!
fi
dak_build dak dak_gpu_tests dak_timeline
dak_gpu_tests 90 1
limit=${DAK_CALL_LIMIT:-540}
VARIANTS=("X=1" "DAK_W_L2_BURST=8" "DAK_W_L2_BURST=16" "DAK_W_L2_AHEAD=2" "DAK_W_L2_AHEAD=4"
          "DAK_W_L2_BURST=8 DAK_W_L2_AHEAD=2" "DAK_GEMM_FILL_WAVES=1")
# DAK_SHORT=1: four variants only (a call with little device time left).
[ -n "${DAK_SHORT:-}" ] && VARIANTS=("X=1" "DAK_W_L2_BURST=8" "DAK_W_L2_AHEAD=4" "DAK_GEMM_FILL_WAVES=1")
VARIANT_T=${VARIANT_T:-"DAK_W_L2_BURST=8 DAK_W_L2_AHEAD=2"}
round() {
  for v in "${VARIANTS[@]}"; do
    [ $(( $(date +%s) - t0 )) -lt $(( limit - 40 )) ] || { echo "skip $v (time)"; continue; }
    env $v timeout 45 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
      --gen-len 32 > /tmp/d.txt 2>/dev/null
    echo "=== [$v] rep $1 rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" /tmp/d.txt
  done | tee -a "$OUT/decode.txt"
}
ring_round() {
  for v in "DAK_W_L2_AHEAD=4" "DAK_W_L2_AHEAD=8" "DAK_W_L2_BURST=8 DAK_W_L2_AHEAD=8"; do
    [ $(( $(date +%s) - t0 )) -lt $(( limit - 40 )) ] || { echo "skip ring $v (time)"; continue; }
    env $v timeout 45 build-ring/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
      --gen-len 32 > /tmp/d.txt 2>/dev/null
    echo "=== [ring $v] rep $1 rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" /tmp/d.txt
  done | tee -a "$OUT/decode.txt"
}
ring_ok=0
if [ -n "$pid_ring" ]; then
  wait $pid_ring && ring_ok=1 || grep -E "error" build-ring.log | head -5
  echo "build ring ok=$ring_ok $(( $(date +%s) - t0 )) s"
fi
round 1
round 2
[ $ring_ok = 1 ] && ring_round 1
if [ $(( $(date +%s) - t0 )) -lt $(( limit - 120 )) ]; then
  dak_timeline b1-default X=1 --batch 1
  dak_timeline b1-prefetch "$VARIANT_T" --batch 1
fi
if [ $(( $(date +%s) - t0 )) -lt $(( limit - 70 )) ]; then
  dak_bench_point l7-b8-10-default X=1 45 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1
  dak_bench_point l7-b8-10-prefetch "$VARIANT_T" 45 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 \
    --offload-ratio 0.1
fi
dak_merge_points > /dev/null
echo "--- timelines (us per step, summed increments)"
grep -E "^=== |tiered_gemm|span" "$OUT/timelines.txt" 2>/dev/null | head -12
echo "--- batch 8, 10 %"
dak_point_table
echo "--- decode (variant, rep, batch, TPOT ms, floor, ratio)"
awk '/^=== /{n=$0; sub(/^=== /,"",n); sub(/ rc=.*/,"",n)} /^\|/{split($0,c,"|"); print n, "| batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}' "$OUT/decode.txt"
echo "total $(( $(date +%s) - t0 )) s"
