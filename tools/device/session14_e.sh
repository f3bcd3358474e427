#!/usr/bin/env bash
# Device call 5 of session 14: the tree to land: HBM CTAs of the 64-row tiles request 3 W stages
# before the dependency wait (kEarlyWideStages), host CTAs their whole ring. Every gpu test; decode
# TPOT against the whole ring (DAK_EARLY_W=...=5, the old behaviour) in the same call; timelines;
# the offload points; `dak bench gemm --quick`. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
RING=DAK_EARLY_W=qkv_proj=5,o_proj=5,mlp_up=5,mlp_down=5,logits=5
dak_timeline b1 X=1 --batch 1
dak_timeline b8 X=1 --batch 8
dak_l7_decode early3 X=1 auto
dak_l7_decode ring $RING auto
dak_l7_decode early3b X=1 auto
dak_l7_decode ringb $RING auto
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench opt1g 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
dak_offload_bench l7b512 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
# (a line here ran `env $RING dak_offload_bench ...`: env cannot run a shell function; it did not run)
timeout 120 build-gpu/dak bench gemm --quick > "$OUT/gemm-quick.txt" 2>&1
echo "bench gemm --quick rc=$? ($(( $(date +%s) - t0 )) s)"
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "targets|stack8 \| layer .*\| 8 \| 0 " "$OUT/gemm-quick.txt" | cut -c1-200
grep -E "^=== |^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
echo "total $(( $(date +%s) - t0 )) s"
