#!/usr/bin/env bash
# Session 45 (issue 5): which side ends last at the balance points that miss 90 % (H100 session 45
# call 1: Llama-3-8B batch 64 at 512 / 4096 / 32768 keys 70.6 / 80.9 / 82.9 % of ideal at x* = 1/64,
# OPT-30B 64 x 512 88.3 %; Llama-2-7B 64 x 4096 97.7 %, the control). A -DDAK_ATT_TRACE build prints,
# for the last launch of each point, the host CTAs' and the HBM CTAs' warp stamps apart. Then the same
# points with --host-ctas 4 / 16 / 32 (the plan's count is in the trace's host warp count / 4).
# Prediction: the host side ends last (its 51 GB/s falls beside a busy HBM side) and more host CTAs
# help; if the HBM side ends last, its 63 sequences' items are the tail. The build keeps the trace
# flag in build-gpu: the next call must dak_configure "" "". Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "-DDAK_ATT_TRACE" "-DDAK_ATT_TRACE"
dak_build dak
att() {  # att LABEL ARGS...: the tiered rows (model, batch, ctx, b_h, time, of ideal) and the traces
  local label=$1; shift
  timeout 60 build-gpu/dak bench attention --ratios 0 "$@" 2> /tmp/att-err.txt |
    grep -E "^\| (llama|opt).*tiered" | cut -d'|' -f2-4,7,9,13 | sed "s/^/$label /"
  grep -E "att trace .*(host|HBM) warps" /tmp/att-err.txt | grep -v "b_h=0 " | sed -E "s/\(us after[^)]*\)//" | cut -c1-300
}
for c in "llama-3-8b --batch 64 --ctx 512,4096,32768" "llama-2-7b --batch 64 --ctx 4096" "opt-30b --batch 64 --ctx 512"; do
  left 60 && att plan --models $c
done | tee "$OUT/trace.txt"
for hc in 4 16 32; do
  for c in "llama-3-8b --batch 64 --ctx 4096,32768" "opt-30b --batch 64 --ctx 512"; do
    left 40 && att "host-ctas $hc" --models $c --host-ctas $hc
  done
done | tee "$OUT/host-ctas.txt"
echo "total $(( $(date +%s) - t0 )) s"
