#!/usr/bin/env bash
# Session 44, call 1: every gpu test on the tree of session 43's last commits (the new-user trial's
# fixes, the bench's re-plan for 1 CTA an SM, the shared override code had not run on a GPU); then
# session 43's prepared A/B of the KV block padding (DAK_BENCH_KV_PAD_ROWS 0 / 8 / 64; prediction on
# an H200: +2-3 points on Llama-3-8B batch 64 at 4096 keys and batch 512 at 512, none on Llama-2-7B
# batch 64 at 4096) interleaved with the deeper HBM rings, now re-planned for 1 CTA an SM
# (--hbm-stages 3 / 4 / 6; session 43 had them at 62 % because they ran in two waves). Last, issue 3's
# decode record. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gpu_tests 90 2
cells=("llama-3-8b --batch 64 --ctx 4096" "llama-3-8b --batch 512 --ctx 512" "llama-2-7b --batch 64 --ctx 4096"
       "llama-2-7b --batch 16 --ctx 4096")
att() {  # att LABEL ENV ARGS...: the tiered rows at x = 0 (model, batch, ctx, time, of ideal, plan)
  local label=$1 envs=$2; shift 2
  env $envs timeout 40 build-gpu/dak bench attention --ratios 0 --no-balance-point "$@" 2>/dev/null |
    grep -E "^\| (llama|opt).*tiered" | cut -d'|' -f2-4,9,13,15 | sed "s/^/$label /"
}
for round in 1 2; do
  for pad in 0 8 64; do
    left 150 || break 2
    for c in "${cells[@]}"; do att "pad $pad round $round" DAK_BENCH_KV_PAD_ROWS=$pad --models $c; done
  done
  if [ $round = 1 ]; then
    for st in 3 4 6; do
      left 150 || break
      for c in "${cells[@]:0:2}"; do att "stages $st" X=1 --models $c --hbm-stages $st; done
    done
  fi
done | tee "$OUT/attention-ab.txt"
# Issue 3 on this card, then early W stages on it (session 35's A/B ran on an H100 only: the whole
# ring early for down was 0.3 % slower there); interleaved, one process each.
for v in X=1 DAK_EARLY_W=mlp_down=64 DAK_EARLY_W=o_proj=1,mlp_down=1 X=1; do
  left 40 && dak_tpot "$v" "l7-$v" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
done | tee "$OUT/decode.txt"
echo "total $(( $(date +%s) - t0 )) s"
