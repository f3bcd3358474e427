#!/usr/bin/env bash
# Session 42, call 2: the o_proj / down unit grid (DAK_GEMM_GRID, a diagnostic switch in the normal
# build). Call 1's GEMM trace showed o_proj's CTAs on the SMs the attention holds entering at the
# dependency release and ending last (one unit a CTA): fewer CTAs with more k-splits, all resident
# before the release, against the plan. Llama-2-7B decode, batch 1 / 8, prompt 32, gen 32, two
# interleaved rounds; then the o_proj trace under the best grid and a greedy-generation sanity
# check (the same text expected up to rounding: the k-split changes the sum order). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak
# Parse check: notices of ignored items are printed here (dak_tpot drops stderr).
DAK_GEMM_GRID=o_proj=3:96,mlp_down=3:96 timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b \
  --batch 1 --prompt-len 32 --gen-len 8 2>&1 | grep -E "notice|error|^\| 1 " | head -5
variants=(X=1 DAK_GEMM_GRID=o_proj=3:96 DAK_GEMM_GRID=o_proj=2:64 DAK_GEMM_GRID=o_proj=3:96,mlp_down=3:96
          DAK_GEMM_GRID=o_proj=6:96)
for round in 1 2; do
  for e in "${variants[@]}"; do
    left 25 || break
    dak_tpot "$e" "$e" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/ab.txt"
for e in X=1 DAK_GEMM_GRID=o_proj=3:96; do
  left 20 || break
  env $e DAK_GEMM_TRACE=o_proj timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b \
    --batch 1,8 --prompt-len 32 --gen-len 32 2>&1 >/dev/null | grep -E "gemm trace|error" | sed "s/^/$e /"
done | tee "$OUT/gemm-trace.txt"
for e in X=1 DAK_GEMM_GRID=o_proj=3:96,mlp_down=3:96; do
  left 15 || break
  env $e timeout 60 build-gpu/dak generate --random-weights --model llama-2-7b --prompt-ids 1,450,4996 -n 24 \
    --temperature 0 2>/dev/null | tail -3 | sed "s/^/$e: /"
done | tee "$OUT/generate.txt"
echo "total $(( $(date +%s) - t0 )) s"
