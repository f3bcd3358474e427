#!/usr/bin/env bash
# Device call 6 of session 15: the tree to land after the CLI bad-input fixes (host-side code): the GPU
# build, every gpu test and every cpu test (the machine's newer CLI11 refused a positional named like an option), Llama-2-7B decode at batch 1 / 8 (auto). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_cpu_tests_and_generate
dak_l7_decode a X=1 auto
dak_bundle_decode
echo "total $(( $(date +%s) - t0 )) s"
