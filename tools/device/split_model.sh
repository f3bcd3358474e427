#!/usr/bin/env bash
# The default model (98 MB) is larger than one device call carries (64 MiB with the tracked tree,
# ~25 MB in session 34; parts of 15 + 42 + 41.4 MB), so it travels in three parts under models/ (ignored by .gitignore, which the device
# machine keeps between back-to-back calls while it is warm): carry [third_party, models/.p1] in
# the first call (the build and the gpu tests: tools/device/session26.sh), [models/.p2] in the
# next, then [models/.p3] in the one that runs tools/device/model_check.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=models/SmolLM2-135M-Instruct.Q4_1.gguf
rm -f models/.p1 models/.p2 models/.p3
dd if=$src of=models/.p1 bs=1000000 count=15 status=none
dd if=$src of=models/.p2 bs=1000000 skip=15 count=42 status=none
dd if=$src of=models/.p3 bs=1000000 skip=57 status=none
sha256sum $src | cut -d' ' -f1 > models/.p3.sha256
ls -l models/.p1 models/.p2 models/.p3
