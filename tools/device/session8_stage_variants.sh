#!/usr/bin/env bash
# Device call (session 8): `gemm_probe tma` with the stage variants (what a GEMM stage adds to the
# bare W stream of one CTA: the producer's index arithmetic, the x box, consumer warps). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu dak_core
dak_build_probe
timeout 60 build-gpu/gemm_probe tma > "$OUT/tma.txt" 2>&1; echo "tma rc=$?"
cat "$OUT/tma.txt"
