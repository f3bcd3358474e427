#!/usr/bin/env bash
# Device call of session 32: the staged HBM load path of the tiered attention
# (TieredAttentionSchedule::hbm_staged, A/B by DAK_ATTN_HBM_COPY=cp.async|bulk|staged in one binary).
# 1. build dak and the gpu tests; every gpu test (the new staged variants of the attention tests);
# 2. `dak bench attention` at x = 0 (issue 5's misses), Llama-2-7B and Llama-3-8B, batch 8 / 64,
#    512 / 4096 / 32768 keys: the plan's path, staged, and the other two, two interleaved rounds;
# 3. decode TPOT, Llama-2-7B batch 1 / 8 prompt 32 gen 32 and batch 8 prompt 2048 gen 16, plan vs staged.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
limit=${DAK_CALL_LIMIT:-560}
left() { [ $(( $(date +%s) - t0 )) -lt $(( limit - $1 )) ]; }
att() {  # $1 = env assignment
  env $1 timeout 120 build-gpu/dak bench attention --models llama-2-7b,llama-3-8b --batch 8,64 --ctx 512,4096,32768 \
    --ratios 0 --no-balance-point --max-host-gib 1 --output csv 2> /dev/null
}
for R in 1 2; do
  for v in X=1 DAK_ATTN_HBM_COPY=staged DAK_ATTN_HBM_COPY=cp.async DAK_ATTN_HBM_COPY=bulk; do
    [ $R = 2 ] && [ $v != X=1 ] && [ $v != DAK_ATTN_HBM_COPY=staged ] && continue
    left 60 || { echo "skip att $v (time)"; continue; }
    att $v > "$OUT/att-$R-${v#*=}.csv"; echo "attention $v round $R rc=$?"
  done
done
dec() {  # $1 = env, $2 = batch list, $3 prompt, $4 gen
  env $1 timeout 90 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch $2 --prompt-len $3 \
    --gen-len $4 2> /dev/null | grep -E "^\| [0-9]+ \| $3 \| $4"
}
for R in 1 2; do
  for v in X=1 DAK_ATTN_HBM_COPY=staged; do
    left 45 || { echo "skip decode $v (time)"; continue; }
    echo "=== decode [$v] round $R"; dec $v 1,8 32 32; dec $v 8 2048 16
  done
done > "$OUT/decode.txt"
cat "$OUT/decode.txt" | cut -c1-120
echo "--- attention at x = 0 (file, model, B, ctx, kernel, median us, of ideal)"
for f in "$OUT"/att-*.csv; do
  python3 - "$f" <<'PY'
import csv, sys, os
name = os.path.basename(sys.argv[1])[4:-4]
for r in csv.DictReader(open(sys.argv[1])):
    if r["kernel"] != "tiered" or r["skipped"] == "true": continue
    print(f"{name:10s} {r['model']:11s} B={r['batch']:>3s} ctx={r['context']:>5s} {1000 * float(r['time_ms']):9.1f} us "
          f"of_ideal={float(r['of_ideal']):.3f} layers={r['layers']} {r['schedule'][-40:]}")
PY
done | sort -k2,2 -k3,3 -k4,4 -s
echo "total $(( $(date +%s) - t0 )) s"
