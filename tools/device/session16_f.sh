#!/usr/bin/env bash
# Device call 7 of session 16 (the landing tree): TMA bulk rows for the HBM side of long attention
# splits. The GPU build (dak and the gpu tests), every gpu test, Llama-2-7B decode at batch 1 / 8 (auto),
# and the attention probe with the plan's HBM load path and with cp.async forced (A/B in one
# process each, B_g beside). A short table last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
nvcc -std=c++20 -O3 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a -Isrc -Ithird_party/cutlass/include \
  bench/tiered_attention_probe.cu build-gpu/libdak_gpu.a build-gpu/libdak_core.a -lcuda -lfmt -o build-gpu/attention_probe &
dak_gpu_tests 60 4
dak_l7_decode a X=1 auto
wait
{ echo "=== plan"; timeout 40 build-gpu/attention_probe; echo "=== cp.async forced"; DAK_PROBE_HBM_COPY=cp.async timeout 40 build-gpu/attention_probe; } > "$OUT/probe.txt" 2>&1
dak_bundle_decode
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt" | cut -c1-100
grep -E "===|B_g|ctx" "$OUT/probe.txt" | cut -c1-190
echo "total $(( $(date +%s) - t0 )) s"
