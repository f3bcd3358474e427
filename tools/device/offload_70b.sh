#!/usr/bin/env bash
# Device call: Llama-2-70B bf16 (random weights) on one H200: all in HBM (it fits at small
# batch x context), and with a 100 GiB HBM budget (the rest in host memory, direct path).
# Builds dak only. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
d=build-gpu/dak
timeout 240 $d generate --model llama-2-70b --random-weights --prompt-ids 1,2,3,4,5,6,7,8 --max-new-tokens 8 \
  --ignore-eos --gpu-memory 100GiB > "$OUT/gen70.txt" 2> "$OUT/gen70.log"; echo "generate 70b --gpu-memory 100GiB rc=$?"
cat "$OUT/gen70.log" | tail -4; cat "$OUT/gen70.txt"
for args in "--gpu-memory 100GiB" "--offload none"; do
  timeout 280 $d bench --model llama-2-70b --random-weights --batch 8 --prompt-len 32 --gen-len 4 --repeats 5 $args \
    > "$OUT/b70.txt" 2> "$OUT/b70.log"; echo "bench 70b $args rc=$?"
  grep -E "^\| 8 \|" "$OUT/b70.txt"; grep -E "B_h =" "$OUT/b70.txt" | cut -c1-70; grep -E "error|fix|offload:" "$OUT/b70.log" | head -4
done
echo "total $(( $(date +%s) - t0 )) s"
