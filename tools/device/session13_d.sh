#!/usr/bin/env bash
# Device call 4 of session 13: RMSNorm fused into the tiered GEMMs with the statistic summed from
# the x tiles in SMEM (call 3 read the fp32 residual in the producer warpgroup: slower at batch 8)
# and the residual prefetched at the start of the storing unit; the attention split back to
# session 12's heuristic (unsplit short contexts made the host-KV warps of the offload points
# latency-bound: call 3's Llama-2-7B batch 8 at 10 % 22.79 ms, attention 4.72 -> 7.87 ms per step).
# Every gpu test; decode timelines and TPOT with and without the fusion; the offload points under
# both W eviction policies. Outputs bundled into few files. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_timeline b1-fused X=1 --batch 1
dak_timeline b8-fused X=1 --batch 8
dak_timeline b1-unfused DAK_NO_FUSED_NORM=1 --batch 1
dak_timeline b8-unfused DAK_NO_FUSED_NORM=1 --batch 8
dak_l7_decode fused X=1 auto
dak_l7_decode unfused DAK_NO_FUSED_NORM=1 auto
dak_l7_decode fused2 X=1 auto
dak_l7_decode normal DAK_W_EVICT_NORMAL=1 auto
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
DAK_W_EVICT_NORMAL=1 dak_offload_bench l7b8-evnormal 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
DAK_NO_FUSED_NORM=1 dak_offload_bench l7b8-unfused 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench opt1g 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
DAK_W_EVICT_NORMAL=1 dak_offload_bench opt1g-evnormal 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
dak_offload_bench l7b512 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
echo "total $(( $(date +%s) - t0 )) s"
