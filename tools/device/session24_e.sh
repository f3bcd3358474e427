#!/usr/bin/env bash
# Device call 5 of session 24 (the final tree: the op graph without the fused norms' launches, the
# trial's CLI fixes): every gpu test and Llama-2-7B decode (its model ms now without 63 norm
# launches). Carries models/.p1 for call 6 (tools/device/model_check.sh with models/.p2).
# Carry: third_party, models/.p1.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
dak_l7_decode final X=1 auto
dak_bundle_decode
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
