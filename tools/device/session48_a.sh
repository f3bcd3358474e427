#!/usr/bin/env bash
# Session 48, first call: every gpu test on the landed tree (session 47's test-race fixes: the
# DiagEmptyKernel and link-probe memsets, DeviceBuffer::poison, never run on a GPU yet), then the clean
# full attention sweep that session 47's disturbed one could not give (issue 5's count; session 45's
# H100: 131 of 141; prediction 131 +-1 with the 4-split cells +3..+7 points), then issue 3's
# Llama-2-7B TPOT at batch 1 / 8 / 64 (prompt 32, gen 32; the H100's last reading, session 44:
# 1.137 / 1.160 / 1.475 of the floor; the H200's, session 43: 1.247 / 1.274 / 1.675; prediction:
# within 1 % of those on the same GPU model). Each part runs only with time left (DAK_CALL_LIMIT).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$gpu"
dak_configure "" ""
dak_build dak dak_gpu_tests
dak_gpu_tests 90 2
left 230 && timeout 220 build-gpu/dak bench attention > "$OUT/attention.txt" 2>&1
echo "attention rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "MISSED" "$OUT/attention.txt" | cut -d'|' -f2-4,7,9,13,15 | head -20
grep -E "^targets|^B_" "$OUT/attention.txt"
left 60 && dak_tpot X=1 l7-r1 --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32 | tee "$OUT/decode.txt"
cp /tmp/r-l7-r1.txt "$OUT/" 2>/dev/null; grep -E "B_g|floor" /tmp/r-l7-r1.txt | head -3
echo "total $(( $(date +%s) - t0 )) s"
