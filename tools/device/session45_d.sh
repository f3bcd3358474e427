#!/usr/bin/env bash
# Session 45, last call: every gpu test on the final tree (the host_warps rule now also keeps the
# HBM side's CTA count; planner only, the kernel as in call 5), then the full `dak bench attention`
# sweep with the spread host side (issue 5; call 1's sweep: 130 / 141). Prediction: 131-132 of 141
# (Llama-3-8B 64 x 4096 / 32768 at x* pass, 64 x 512 stays below). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name --format=csv,noheader
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gpu_tests 90 2
left 150 && timeout 200 build-gpu/dak bench attention > "$OUT/attention.txt" 2>&1
echo "attention rc=$?"; grep -E "MISSED" "$OUT/attention.txt" | cut -d'|' -f2-4,7,9,13 | head -20
grep -E "^targets|^B_" "$OUT/attention.txt"
echo "total $(( $(date +%s) - t0 )) s"
