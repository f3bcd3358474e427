#!/usr/bin/env bash
# Device call of session 17 after the review: the GPU build and every gpu test on the final tree.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 60 4
echo "total $(( $(date +%s) - t0 )) s"
