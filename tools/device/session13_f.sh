#!/usr/bin/env bash
# Device call 6 of session 13 (the landing tree): the fused RMSNorm reverted (calls 3-5: no gain;
# docs/attempts/session13-fused-rmsnorm.patch), the attention split back to session 12's; the W
# loads' EVICT_FIRST kept. Every gpu test; decode TPOT under both W eviction policies and the
# timelines; three offload points; `dak bench gemm --quick`. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_timeline b1 X=1 --batch 1
dak_timeline b8 X=1 --batch 8
dak_l7_decode first X=1 auto
dak_l7_decode normal DAK_W_EVICT_NORMAL=1 auto
dak_l7_decode first2 X=1 auto
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench opt1g 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
dak_offload_bench l7b512 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
timeout 120 build-gpu/dak bench gemm --quick > "$OUT/gemm-quick.txt" 2>&1
echo "bench gemm --quick rc=$? ($(( $(date +%s) - t0 )) s)"
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "targets|stack8 \| layer .*\| 8 \| 0 " "$OUT/gemm-quick.txt" | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
