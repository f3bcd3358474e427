#!/usr/bin/env bash
# Prepared in session 16 (its device time ran out before this ran): does the TMA bulk-row load path cost decode at short live lengths?
# Llama-2-7B decode at batch 8 (prompt 32, gen 32: splits of 16 keys, so the plan keeps cp.async) with
# the plan's path and with DAK_ATTN_HBM_COPY=bulk forced, same binary. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for e in X=1 DAK_ATTN_HBM_COPY=bulk; do
  env $e timeout 25 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 8 --prompt-len 32 \
    --gen-len 32 > "$OUT/b8-$e.txt" 2> /dev/null
  echo "$e rc=$? $(grep -E '^\| 8 \| 32 \| 32' "$OUT/b8-$e.txt" | cut -c1-90)"
done
echo "total $(( $(date +%s) - t0 )) s"
