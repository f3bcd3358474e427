#!/usr/bin/env bash
# The next session's first device call (written in session 32, which had no device time left):
# 1. build dak, the gpu tests and gemm_probe; every gpu test (session 32's last_merge cases have not
#    run on a GPU yet: TieredAttentionKernel.* with last_merged(), the graph replay with changing
#    lengths, the counters back at zero);
# 2. last_merge A/B (DAK_ATTN_COMBINE=last against the plan), two interleaved rounds: Llama-2-7B
#    decode batch 1 / 8 at prompt 32 gen 16 (48 keys: 3 splits, the combine kernel) and batch 1 at
#    prompt 4000 gen 16 (~32 splits); `dak bench attention --ratios 0` cells whose splits are not 1,
#    2 or 4;
# 3. issue 3's points (prompt 32, gen 32, batch 1 / 8 / 64) and batch 64 tiered against auto: on an
#    H200 these settle the H100-vs-H200 questions of sessions 31-32 (the staged attention path has
#    only run on H100s).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
limit=${DAK_CALL_LIMIT:-540}
left() { [ $(( $(date +%s) - t0 )) -lt $(( limit - $1 )) ]; }
n=0
dec() {  # $1 env, $2 batches, $3 prompt, $4 gen, $5 gemm; the whole report (per-operator tables too) in $OUT
  n=$((n + 1))
  env $1 timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch $2 --prompt-len $3 \
    --gen-len $4 --gemm ${5:-auto} 2> /dev/null > "$OUT/bench-$n.txt"
  grep -E "^\| [0-9]+ \| $3 \| $4" "$OUT/bench-$n.txt" | sed "s/^/[$1 ${5:-auto}] /" | cut -c1-130
}
for R in 1 2; do
  for v in X=1 DAK_ATTN_COMBINE=last; do
    left 60 || { echo "skip $v (time)"; continue; }
    dec $v 1,8 32 16; dec $v 1 4000 16
  done
done > "$OUT/decode-last.txt"
cat "$OUT/decode-last.txt"
for v in X=1 DAK_ATTN_COMBINE=last; do
  left 60 || { echo "skip attention $v (time)"; continue; }
  env $v timeout 90 build-gpu/dak bench attention --models llama-2-7b,llama-3-8b --batch 1,8 --ctx 48,512,700,4096 \
    --ratios 0 --no-balance-point --max-host-gib 1 --output csv > "$OUT/att-${v#*=}.csv" 2> /dev/null
  echo "attention $v rc=$?"
done
dak_attention_rows "$OUT"/att-*.csv
if left 50; then
  dec X=1 1,8,64 32 32
  dec X=1 64 32 32 tiered
  # Batch 64 at 33-64 keys: the attention ran at ~half of B_g in session 28's eager table (1.02 ms a
  # step); its splits are short (cp.async): the staged path forced, against the plan.
  dec DAK_ATTN_HBM_COPY=staged 64 32 32
  dec X=1 64 32 32
  dec DAK_ATTN_HBM_COPY=staged 64 32 32
fi
echo "total $(( $(date +%s) - t0 )) s"
