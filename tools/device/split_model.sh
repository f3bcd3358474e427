#!/usr/bin/env bash
# The default model (98 MB) is larger than one device call carries (64 MiB with the tree), so it
# travels in parts: this splits models/SmolLM2-135M-Instruct.Q4_1.gguf into .m1 (30 MB), .m2 (50 MB)
# and .m3 (rest), folders ignored through .git/info/exclude. Carry [third_party, .m1] in the build
# call, [.m2] in the next, [.m3] in the one that runs tools/device/model_check.sh (back to back:
# ignored files stay on the machine only while it is warm).
set -euo pipefail
cd "$(dirname "$0")/../.."
src=models/SmolLM2-135M-Instruct.Q4_1.gguf
for d in .m1 .m2 .m3; do mkdir -p $d; grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude; done
dd if=$src of=.m1/part bs=1000000 count=30 status=none
dd if=$src of=.m2/part bs=1000000 skip=30 count=50 status=none
dd if=$src of=.m3/part bs=1000000 skip=80 status=none
sha256sum $src | cut -d' ' -f1 > .m3/sha256
ls -l .m1/part .m2/part .m3/part
