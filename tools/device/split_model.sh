#!/usr/bin/env bash
# The default model (98 MB) is larger than one device call carries (64 MiB counted in disk blocks,
# with the tracked tree, ~27.5 MB in session 34, and CUTLASS, ~28 MB, when carried), so it travels in
# three parts of 33 + 33 + 32.4 MB under models/ (ignored by .gitignore; the device machine keeps them
# between back-to-back calls while it is warm): build in one call carrying third_party, then carry
# [models/.p1], [models/.p2] and [models/.p3, models/.p3.sha256] in the next three, the last running
# tools/device/model_check.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=models/SmolLM2-135M-Instruct.Q4_1.gguf
rm -f models/.p1 models/.p2 models/.p3
dd if=$src of=models/.p1 bs=1000000 count=33 status=none
dd if=$src of=models/.p2 bs=1000000 skip=33 count=33 status=none
dd if=$src of=models/.p3 bs=1000000 skip=66 status=none
sha256sum $src | cut -d' ' -f1 > models/.p3.sha256
ls -l models/.p1 models/.p2 models/.p3
