#!/usr/bin/env bash
# Device call (session 7, check): `dak bench attention --quick` after the ungated first launch per
# timed operator (the full sweep reported a host-gate timeout). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
timeout 60 build-gpu/dak bench attention --quick --max-host-gib 4 > "$OUT/att-quick.txt" 2>&1; echo "quick rc=$?"
grep -E "note|targets|^\| llama" "$OUT/att-quick.txt" | cut -c1-150
echo "total $(( $(date +%s) - t0 )) s"
