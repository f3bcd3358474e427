#!/usr/bin/env bash
# Session 35: with the activation in gate_up's epilogue, down's predecessor is a GEMM, as the norm-in
# GEMMs' is (they request their whole ring before the dependency wait; session 24). DAK_EARLY_W A/B
# at batch 1 / 8 (auto, prompt 32, gen 32), two interleaved rounds. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
V=("X=1" "DAK_EARLY_W=mlp_down=64" "DAK_EARLY_W=o_proj=64" "DAK_EARLY_W=mlp_down=64,o_proj=64" "DAK_EARLY_W=mlp_down=1")
for r in 1 2; do
  for v in "${V[@]}"; do dak_tpot "$v" "r$r:$v" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32; done
done | tee "$OUT/early.txt"
echo "total $(( $(date +%s) - t0 )) s"
