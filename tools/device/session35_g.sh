#!/usr/bin/env bash
# Session 35: why `--gemm tiered` decode is slower at batch 33 than at 40 (calls 3 and 5: 6.38 against
# 6.21 ms on the same tile). CUPTI timelines of one Llama-2-7B decode layer at batch 33 and 40.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
dak_timeline b33 X=1 --batch 33 --gemm tiered
dak_timeline b40 X=1 --batch 40 --gemm tiered
grep -E "^=== |graph|layer period|^ +[0-9]+ |before the layers" "$OUT/timelines.txt" | cut -c1-100 | head -40
echo "total $(( $(date +%s) - t0 )) s"
