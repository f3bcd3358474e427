#!/usr/bin/env bash
# Device call 2 of session 31:
# 1. build dak, the gpu tests and gemm_probe; every gpu test (the attention schedules changed);
# 2. gemm_probe trace (two layers of the four Llama-2-7B decode linears) with qkv at 1 / 2 / 3
#    k-splits, N = 8 and 64: where qkv's time goes with the fuller last round (session 30 measured S = 2
#    1.4 % slower in decode without a trace);
# 3. the attention split rule (core/tiered_attention_schedule.cc, kCombineKernelSteps) against the
#    makespan alone (the default; DAK_ATTN_SPLIT_RULE=combine the priced rule), two interleaved rounds: Llama-2-7B batch 1 / 8 at
#    prompt 32 gen 16 (48 keys: 2 splits against 3) and prompt 16 gen 64 (80 keys: 2 against 5),
#    Llama-3-8B batch 1 / 8 at prompt 32 gen 16; issue 3's points (prompt 32 gen 32, batch 1 / 8 / 64,
#    4 splits either way) once; batch 64 on the tiered GEMM against auto (cuBLASLt there): the H100
#    of call 1 had the tiered GEMM 2 % ahead, session 26's H200 cuBLASLt 3.5 %.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
echo "probe built $(( $(date +%s) - t0 )) s"
dak_gpu_tests 120 2
dak_gtest 'GpuEngineMeasuring.*' 120
limit=${DAK_CALL_LIMIT:-420}
left() { [ $(( $(date +%s) - t0 )) -lt $(( limit - $1 )) ]; }

round() {
  for v in "X=1 llama-2-7b 32 16 1,8" "DAK_ATTN_SPLIT_RULE=combine llama-2-7b 32 16 1,8" \
           "X=1 llama-2-7b 16 64 1,8" "DAK_ATTN_SPLIT_RULE=combine llama-2-7b 16 64 1,8" \
           "X=1 llama-3-8b 32 16 1,8" "DAK_ATTN_SPLIT_RULE=combine llama-3-8b 32 16 1,8" \
           "X=1 llama-2-7b 32 32 64 tiered" "X=1 llama-2-7b 32 32 64 auto"; do
    set -- $v
    left 40 || { echo "skip $v (time)"; continue; }
    env $1 timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model $2 --batch $5 --prompt-len $3 \
      --gen-len $4 --gemm ${6:-auto} > /tmp/d.txt 2>/dev/null
    echo "=== [$1 $2 p$3 g$4 ${6:-auto}] rep $R rc=$?"; grep -E "^\| [0-9]+ \| $3 \| $4" /tmp/d.txt
  done
}
R=1 round >> "$OUT/decode.txt"
if left 60; then
  for n in 8 64; do
    for q in 1 2 3; do
      timeout 30 build-gpu/gemm_probe trace 2 $q 0 0 0 $n > /tmp/tr.txt 2>&1
      echo "=== N=$n qkv_splits=$q rc=$?"; cat /tmp/tr.txt
    done
  done > "$OUT/trace.txt"
  echo "--- gemm_probe trace (us)"; grep -E "^=== |per layer" "$OUT/trace.txt" | paste - - | sed 's/trace: //'
  echo "--- qkv rows (second layer)"; awk '/^=== /{n=$0} /^qkv /{c[n]++; if (c[n]==2) print n, $0}' "$OUT/trace.txt" | cut -c1-150
fi
R=2 round >> "$OUT/decode.txt"
if left 60; then
  timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
    --gen-len 32 > /tmp/d.txt 2>/dev/null
  { echo "=== [issue 3 points] rep 1 rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" /tmp/d.txt; } >> "$OUT/decode.txt"
fi
echo "--- decode (variant, rep, batch, TPOT ms, floor, ratio)"
awk '/^=== /{n=$0; sub(/^=== /,"",n); sub(/ rc=.*/,"",n)} /^\|/{split($0,c,"|"); print n, "| batch", c[2], "TPOT", c[7], "floor", c[9], "ratio", c[10]}' "$OUT/decode.txt"
echo "total $(( $(date +%s) - t0 )) s"
