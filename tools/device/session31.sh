#!/usr/bin/env bash
# Device call of session 31: the L2 prefetch of W ahead of the SMEM ring, within a unit
# (kernels/tiered_gemm_kernel.cuh, kL2Ahead; DAK_W_L2_AHEAD=0..8 in one binary), aimed at N = 33-64,
# where the 64 x 64 tile's 3-stage ring holds only 96 KiB of W (half of each stage is x):
# 1. build dak, the gpu tests and gemm_probe; every gpu test (L2PrefetchOfWKeepsBits among them);
# 2. gemm_probe trace (two layers of the four Llama-2-7B decode linears, per-GEMM times) at N = 64 / 32
#    / 8 under each distance;
# 3. Llama-2-7B decode (prompt 32, gen 32): batch 32 / 64 on the tiered GEMM under each distance and
#    under auto (cuBLASLt at 64), batch 1 / 8 at 0 and 2; two interleaved rounds where time allows
#    (DAK_CALL_LIMIT, default 540 s).
# The switch was removed after the call (slower at every distance and N, docs/perf-notes.md session 31):
# apply docs/attempts/session31-l2-prefetch-within-unit.patch to run this again.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
echo "probe built $(( $(date +%s) - t0 )) s"
dak_gpu_tests 120 2
limit=${DAK_CALL_LIMIT:-540}
left() { [ $(( $(date +%s) - t0 )) -lt $(( limit - $1 )) ]; }

for n in 64 32 8; do
  for d in 0 1 2 3 4 6; do
    [ $n != 64 ] && [ $d != 0 ] && [ $d != 2 ] && [ $d != 4 ] && continue
    DAK_W_L2_AHEAD=$d timeout 30 build-gpu/gemm_probe trace 2 0 0 0 0 $n > /tmp/tr.txt 2>&1
    echo "=== N=$n ahead=$d rc=$?"; cat /tmp/tr.txt
  done
done > "$OUT/trace.txt"
echo "--- gemm_probe trace (us)"; grep -E "^=== |per layer" "$OUT/trace.txt" | paste - - | sed 's/trace: //'

round() {
  for v in "DAK_W_L2_AHEAD=0 tiered 32,64" "DAK_W_L2_AHEAD=2 tiered 32,64" "DAK_W_L2_AHEAD=3 tiered 32,64" \
           "DAK_W_L2_AHEAD=4 tiered 32,64" "X=1 auto 32,64" "DAK_W_L2_AHEAD=0 auto 1,8" "DAK_W_L2_AHEAD=2 auto 1,8"; do
    set -- $v
    left 40 || { echo "skip $v (time)"; continue; }
    env $1 timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch $3 --prompt-len 32 \
      --gen-len 32 --gemm $2 > /tmp/d.txt 2>/dev/null
    echo "=== [$1 $2] rep $R rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" /tmp/d.txt
  done
}
R=1 round >> "$OUT/decode.txt"
R=2 round >> "$OUT/decode.txt"
echo "--- decode (variant, rep, batch, TPOT ms, floor, ratio)"
awk '/^=== /{n=$0; sub(/^=== /,"",n); sub(/ rc=.*/,"",n)} /^\|/{split($0,c,"|"); print n, "| batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}' "$OUT/decode.txt"
echo "total $(( $(date +%s) - t0 )) s"
