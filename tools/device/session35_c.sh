#!/usr/bin/env bash
# Session 35, call 3: the tree with session 35's split x ring removed (its tests kept: bn 32 / 64
# rings walked by 1-100 CTAs). Build; the TieredGemm tests, then every gpu test; where the tiered
# GEMM overtakes cuBLASLt on this GPU: Llama-2-7B decode (prompt 32, gen 32) at batch 33-64 under
# --gemm tiered and --gemm cublas, two interleaved rounds; issue 3's points (auto, batch 1 / 8 / 64).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gtest 'TieredGemm.*' 200
dak_gpu_tests 120 2
for r in 1 2; do
  for g in tiered cublas; do
    dak_tpot X=1 "$g$r" --model llama-2-7b --batch 33,40,48,56,64 --prompt-len 32 --gen-len 32 --gemm $g
  done
done | tee "$OUT/switch.txt"
timeout 120 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench.json" > "$OUT/bench.txt" 2> /dev/null
echo "bench rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/bench.txt"
echo "total $(( $(date +%s) - t0 )) s"
