#!/usr/bin/env bash
# The default model (98 MB) is larger than one device call carries (64 MiB with the tree), so it
# travels in two parts under models/ (ignored by .gitignore, which the device machine keeps
# between back-to-back calls while it is warm; paths ignored only through .git/info/exclude were
# seen removed there): carry [models/.p1] in one call, then [models/.p2] in the next one, which
# runs tools/device/model_check.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=models/SmolLM2-135M-Instruct.Q4_1.gguf
dd if=$src of=models/.p1 bs=1000000 count=50 status=none
dd if=$src of=models/.p2 bs=1000000 skip=50 status=none
sha256sum $src | cut -d' ' -f1 > models/.p2.sha256
ls -l models/.p1 models/.p2
