#!/usr/bin/env bash
# Device call 1 (session 9): the tiered GEMM's wide stages rebuilt (64 x 256 k-blocks for the 64-row
# tiles, one 3D TMA box per operand and stage; no serialized wgmma): session 8's wide-stage call
# (build; every gpu test; the probe and its trace; Llama-2-7B decode with tiered and cublas; `dak
# bench gemm --quick` at N = 8), then Llama-2-7B batch 8 at 10 % offload (auto). (Call 1 ran the same
# steps written out in this file, the offload point before the printed tables.) Carry: third_party.
set -uo pipefail
bash tools/device/session8_wide.sh
source tools/device/common.sh
dak_offload_bench l7-b8 120 --model llama-2-7b --batch 8 --offload-ratio 0.1 --offload auto
cp /tmp/bench-l7-b8.json "$OUT/bench-l7-b8-auto.json"
