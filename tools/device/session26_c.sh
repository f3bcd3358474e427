#!/usr/bin/env bash
# Device call 4 of session 26 (branch xmc at da574ce; the change is saved as
# docs/results/2026-12-05/session26/pairs-sharing-x.patch and was reverted on main after this call:
# DAK_X_MULTICAST exists only with it): CTA pairs sharing x by multicast on the 64-row tiles.
# 1. Is the 64-row tile at N = 32 / 64 bound by the x tiles' L2 -> SMEM traffic? The probe built with
#    and without -DDAK_PROBE_NO_X (x never loaded), unpaired (DAK_X_MULTICAST=0), against the pairs:
#    the four Llama-2-7B decode linears at N = 8 / 32 / 64, default splits and stages.
# 2. Every gpu test (the new TieredGemm.PairsSharingXGiveTheSameBits first).
# 3. Llama-2-7B decode at batch 32 (auto: tiered) and 64 (--gemm tiered and auto = cuBLASLt), pairs
#    on and off; Llama-2-7B batch 512 offload points (per-operator breakdown: the host KV appends).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build
dak_probe_variants base: nox:-DDAK_PROBE_NO_X
for n in 8 32 64; do
  for mk in "12288 4096" "4096 4096" "22016 4096" "4096 11008"; do
    set -- $mk
    printf "pairs  "; timeout 30 build-gpu/probe-base $1 $n $2 0 0 2>&1 | tail -n 1
    printf "single "; DAK_X_MULTICAST=0 timeout 30 build-gpu/probe-base $1 $n $2 0 0 2>&1 | tail -n 1
    printf "nox    "; DAK_X_MULTICAST=0 timeout 30 build-gpu/probe-nox $1 $n $2 0 0 2>&1 | tail -n 1
  done
done | tee "$OUT/probe-pairs.txt"
dak_gtest "TieredGemm.PairsSharingX*" 120
dak_gpu_tests 60 4
for b in 32 64; do
  for g in auto tiered; do
    for e in X=1 DAK_X_MULTICAST=0; do
      env $e timeout 45 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch $b --prompt-len 32 \
        --gen-len 32 --gemm $g > /tmp/d.txt 2>/dev/null
      echo "b$b $g $e rc=$? $(grep -E "^\| $b \| 32 \| 32" /tmp/d.txt)"
    done
  done
done | tee "$OUT/decode-pairs.txt"
for r in 0.1 0.3; do
  dak_bench_point l7-b512-$r X=1 90 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio $r
done
dak_merge_points
echo "--- probe (us per GEMM, GB/s)"
awk '{print $1, $3, $2, $10, $12, $13}' "$OUT/probe-pairs.txt"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
echo "total $(( $(date +%s) - t0 )) s"
