#!/usr/bin/env bash
# Device call 1 of session 15: HEAD (cef0e3d, built but never run on the device in session 14):
# every gpu test, Llama-2-7B decode at batch 1 / 8 (auto), and the traced batch-1 layer. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_l7_decode auto X=1 auto
dak_timeline b1 X=1 --batch 1
tail -n 40 "$OUT/timelines.txt"
dak_bundle_decode
echo "total $(( $(date +%s) - t0 )) s"
