#!/usr/bin/env bash
# Device call 2 of session 15. (1) The fused-RMSNorm release hypothesis (perf-notes session 14):
# does one extra arrival per stage on the GEMMs' empty barriers (a fifth waiter, no work;
# DAK_GEMM_EXTRA_RELEASE=1, experiment build) slow the decode GEMMs? (2) Where batch 64 loses:
# traced layer at batch 64 with cuBLASLt and with the tiered GEMM. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
dak_l7_decode base X=1 auto
dak_l7_decode extra DAK_GEMM_EXTRA_RELEASE=1 auto
dak_l7_decode base2 X=1 auto
dak_l7_decode extra2 DAK_GEMM_EXTRA_RELEASE=1 auto
dak_timeline b1 X=1 --batch 1
dak_timeline b1-extra DAK_GEMM_EXTRA_RELEASE=1 --batch 1
dak_timeline b64-cublas X=1 --batch 64 --gemm cublas
dak_timeline b64-tiered X=1 --batch 64 --gemm tiered
grep -E "^===|layer period|^ +[0-9]+ " "$OUT/timelines.txt" | head -80
dak_bundle_decode
echo "total $(( $(date +%s) - t0 )) s"
