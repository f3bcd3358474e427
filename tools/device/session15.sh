#!/usr/bin/env bash
# Device calls of session 15: every gpu test (the gated-MLP epilogue's among them), Llama-2-7B decode
# at batch 1 / 8 with the gated epilogue and without it (DAK_NO_GATED_EPILOGUE=1, same binary), and
# the traced batch-1 layer of each. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_l7_decode gated X=1 auto
dak_l7_decode unfused DAK_NO_GATED_EPILOGUE=1 auto
dak_l7_decode gated2 X=1 auto
dak_l7_decode unfused2 DAK_NO_GATED_EPILOGUE=1 auto
dak_timeline gated X=1 --batch 1
dak_timeline unfused DAK_NO_GATED_EPILOGUE=1 --batch 1
grep -E "^===|mlp_up|activation|mlp_down|total|layer" "$OUT/timelines.txt" | head -40
dak_bundle_decode
echo "total $(( $(date +%s) - t0 )) s"
