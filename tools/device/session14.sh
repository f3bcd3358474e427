#!/usr/bin/env bash
# Device call 1 of session 14: the tiered GEMM's L2 prefetch of the W stages past an HBM CTA's ring
# before the dependency wait (TieredGemmArgs::l2_prefetch_bytes; DAK_L2_PREFETCH per operator).
# Every gpu test; Llama-2-7B decode TPOT with it off, on o_proj (the default), on o_proj + down, on
# every GEMM; timelines; one offload point. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_timeline b1-off DAK_L2_PREFETCH=o_proj=0 --batch 1
dak_timeline b1-o X=1 --batch 1
dak_timeline b1-all DAK_L2_PREFETCH=qkv_proj=1048576,o_proj=1048576,mlp_up=1048576,mlp_down=1048576 --batch 1
dak_timeline b8-o X=1 --batch 8
dak_l7_decode off DAK_L2_PREFETCH=o_proj=0 auto
dak_l7_decode o X=1 auto
dak_l7_decode o-down DAK_L2_PREFETCH=o_proj=1048576,mlp_down=1048576 auto
dak_l7_decode all DAK_L2_PREFETCH=qkv_proj=1048576,o_proj=1048576,mlp_up=1048576,mlp_down=1048576 auto
dak_l7_decode o96 DAK_L2_PREFETCH=o_proj=96 auto
dak_l7_decode off2 DAK_L2_PREFETCH=o_proj=0 auto
dak_l7_decode o2 X=1 auto
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-140
echo "total $(( $(date +%s) - t0 )) s"
