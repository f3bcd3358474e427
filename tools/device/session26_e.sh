#!/usr/bin/env bash
# Device call 6 of session 26: where the 64-row tile loses at N = 64 against N = 8 (the next step of
# the x-sharing result, docs/perf-notes.md session 26): per-CTA timestamps of a 2-layer graph of the
# Llama-2-7B decode linears at N = 8, 32 and 64, with x loaded and without (-DDAK_PROBE_NO_X).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_probe_variants base: nox:-DDAK_PROBE_NO_X
for n in 8 32 64; do
  for v in base nox; do
    echo "=== $v N=$n"; timeout 30 build-gpu/probe-$v trace 2 0 0 0 0 $n 2>&1
  done
done | tee "$OUT/trace-n.txt"
echo "total $(( $(date +%s) - t0 )) s"
