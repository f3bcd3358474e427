#!/usr/bin/env bash
# Session 33, call 8: what fusing a small kernel away could save at most. A diagnostic build
# (-DDAK_DIAG_SKIP_KERNELS: wrong outputs) drops the kernels DAK_DIAG_SKIP names from every decode
# layer: rope (RoPE + KV append), act (SiLU-gate), attn (the attention); Llama-2-7B decode,
# batch 1 / 8, prompt 32, gen 32, two interleaved rounds; the release build once. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
cp build-gpu/dak /tmp/dak-release
cmake -S . -B build-gpu -DCMAKE_CXX_FLAGS=-DDAK_DIAG_SKIP_KERNELS > cfg2.log 2>&1 &&
  cmake --build build-gpu -j16 --target dak > build2.log 2>&1 || { grep error build2.log | head; exit 1; }
echo "diag build $(( $(date +%s) - t0 )) s"
run() {  # $1 label, $2 binary, $3 skip list
  DAK_DIAG_SKIP=$3 timeout 60 $2 bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
    --gen-len 32 2> /dev/null > "/tmp/d-$1.txt"
  grep -E "^\| [0-9]+ \| 32 \| 32" "/tmp/d-$1.txt" | awk -F'|' -v l="$1" '{print l, "batch", $2, "TPOT", $7, "floor", $9, "ratio", $10}'
}
run release /tmp/dak-release ""
for R in 1 2; do
  for v in none rope act rope,act attn; do run "$v-$R" build-gpu/dak "$v"; done
done | tee "$OUT/skip.txt"
cat /tmp/d-none-1.txt > "$OUT/bench-none.txt"
echo "total $(( $(date +%s) - t0 )) s"
