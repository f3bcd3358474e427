#!/usr/bin/env bash
# Device call 2 of session 14: does the next GEMM's early W burst slow the small kernels before it?
# Llama-2-7B decode TPOT with fewer W stages requested before the dependency wait (DAK_EARLY_W) or
# no PDL (DAK_GEMM_PDL) on o_proj or every GEMM; timelines of two of them. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_timeline b1-o-nopdl DAK_GEMM_PDL=o_proj=0 --batch 1
dak_timeline b1-o-early1 DAK_EARLY_W=o_proj=1 --batch 1
dak_l7_decode base X=1 auto
dak_l7_decode o-nopdl DAK_GEMM_PDL=o_proj=0 auto
dak_l7_decode o-early0 DAK_EARLY_W=o_proj=0 auto
dak_l7_decode o-early1 DAK_EARLY_W=o_proj=1 auto
dak_l7_decode o-early2 DAK_EARLY_W=o_proj=2 auto
dak_l7_decode all-early2 DAK_EARLY_W=qkv_proj=2,o_proj=2,mlp_up=2,mlp_down=2 auto
dak_l7_decode all-nopdl DAK_GEMM_PDL=qkv_proj=0,o_proj=0,mlp_up=0,mlp_down=0 auto
dak_l7_decode base2 X=1 auto
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-120
echo "total $(( $(date +%s) - t0 )) s"
