#!/usr/bin/env bash
# Device call 5 of session 13 (the landing tree): the RMSNorm statistic summed while the stage's
# wgmma run (call 4 summed it before issuing them: qkv / gate_up +3-4 us each), the fused norm on
# the bandwidth tiles only (call 4's batch-512 offload point ran 53.1 ms with it on the compute
# tiles). Every gpu test; decode TPOT with and without the fusion and timelines; three offload
# points; `dak bench gemm --quick`. Outputs bundled into few files. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_gpu_tests 60 4
dak_timeline b1-fused X=1 --batch 1
dak_timeline b8-fused X=1 --batch 8
dak_l7_decode fused X=1 auto
dak_l7_decode unfused DAK_NO_FUSED_NORM=1 auto
dak_l7_decode fused2 X=1 auto
dak_offload_bench l7b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1
dak_offload_bench opt1g 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1
dak_offload_bench l7b512 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
timeout 120 build-gpu/dak bench gemm --quick > "$OUT/gemm-quick.txt" 2>&1
echo "bench gemm --quick rc=$? ($(( $(date +%s) - t0 )) s)"
dak_bundle_decode
grep -A12 "layer period" "$OUT/timelines.txt" | cut -c1-90
grep -E "targets|stack8 \| layer .*\| 8 \| 0 " "$OUT/gemm-quick.txt" | cut -c1-200
echo "total $(( $(date +%s) - t0 )) s"
