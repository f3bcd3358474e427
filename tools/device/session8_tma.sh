#!/usr/bin/env bash
# Device call (session 8): `gemm_probe tma` (one CTA's and a full wave's TMA streaming rate with no
# math: 2D boxes as the tiered GEMM's W tiles, and 1D bulk copies) and the probe's fixed-cost
# shapes. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
timeout 60 build-gpu/gemm_probe tma > "$OUT/tma.txt" 2>&1; echo "tma rc=$?"
timeout 60 build-gpu/gemm_probe > "$OUT/probe.txt" 2>&1; echo "probe rc=$?"
cat "$OUT/tma.txt"; grep -E "N=  8" "$OUT/probe.txt" | tail -8
