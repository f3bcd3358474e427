#!/usr/bin/env bash
# Device call of session 29 (one call: 620 s of device time left; DAK_CALL_LIMIT the call's seconds). Branch wide-small-kernels:
# 1. build-gpu (this tree) and build-ring (the same tree with the decode GEMMs' ring small enough
#    for 2 CTAs per SM, DAK_TIERED_GEMM_BW_RING_BYTES=110592; session27_c.sh's plan) in parallel;
# 2. every gpu test in build-gpu (the new 2 / 4 pairs-per-thread RoPE cases among them); build-ring
#    builds dak only (its tests wait for a call with time to spare: the ring depth changes no sum);
# 3. Llama-2-7B batch 512 at 0 % (prompt 32, gen 8): the wide activation / RoPE paths against
#    DAK_NARROW_SMALL_KERNELS=1 in the same binary; Llama-2-7B decode at batch 1 / 8 on each tree;
#    both again where the time left (DAK_CALL_LIMIT) allows.
# DAK_NO_RING=1 leaves the ring tree out. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
RING=-DDAK_TIERED_GEMM_BW_RING_BYTES=110592
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF > cfg.log 2>&1 &&
  cmake --build build-gpu -j16 --target dak dak_gpu_tests > build.log 2>&1 &
pid_main=$!
if [ -z "${DAK_NO_RING:-}" ]; then  # DAK_NO_RING=1: main tree only (a short call)
cmake -S . -B build-ring -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF \
  -DCMAKE_CXX_FLAGS=$RING -DCMAKE_CUDA_FLAGS=$RING > cfg-ring.log 2>&1 &&
  cmake --build build-ring -j16 --target dak > build-ring.log 2>&1 &
pid_ring=$!
else
  pid_ring=
fi
wait $pid_main || { grep -E "error" build.log | head -30; exit 1; }
echo "build main $(( $(date +%s) - t0 )) s"
dak_gpu_tests 60 1
ring_ok=0
[ -n "$pid_ring" ] && { wait $pid_ring && ring_ok=1 || grep error build-ring.log | head; }
echo "build ring $(( $(date +%s) - t0 )) s ok=$ring_ok"
trees="build-gpu"; [ $ring_ok = 1 ] && trees="build-gpu build-ring"
limit=${DAK_CALL_LIMIT:-480}
b512_pair() {
  dak_bench_point b512-narrow$1 DAK_NARROW_SMALL_KERNELS=1 90 --model llama-2-7b --batch 512 --prompt-len 32 \
    --gen-len 8 --offload-ratio 0
  dak_bench_point b512-wide$1 X=1 90 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0
}
decode_round() {
  for tree in $trees; do
    timeout 45 $tree/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
      --gen-len 32 > /tmp/d.txt 2>/dev/null
    echo "$tree rep $1 rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" /tmp/d.txt
  done | tee -a "$OUT/decode-ring.txt"
}
b512_pair 1
decode_round 1
[ $(( $(date +%s) - t0 )) -lt $(( limit - 150 )) ] && b512_pair 2
[ $(( $(date +%s) - t0 )) -lt $(( limit - 60 )) ] && decode_round 2
dak_merge_points > /dev/null
echo "--- decode (tree, rep, batch, TPOT ms, floor, ratio)"
awk '/ rep /{n=$1" "$3} /^\|/{split($0,c,"|"); print n, "batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}' "$OUT/decode-ring.txt"
echo "--- batch 512, 0 %"
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
