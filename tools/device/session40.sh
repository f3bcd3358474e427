#!/usr/bin/env bash
# Next session's first call (prepared in session 39). What one kernel boundary of the decode chain
# costs by itself. build-gpu is configured as a diagnostic build (-DDAK_DIAG_SKIP_KERNELS: wrong
# outputs only when DAK_DIAG_SKIP names a kernel; the flag stays in the CMake cache). Llama-2-7B
# decode (batch 1 / 8, prompt 32, gen 32, two interleaved rounds) runs with the attention (none),
# without it (attn), and with an empty kernel of its CTA count in its place (attn_body).
# attn_body - attn is the boundary's cost, plus the early o_proj CTAs that fit beside empty CTAs.
# none - attn_body is the attention's own work (docs/perf-notes.md session 39: the lead of running
# each kv head's attention inside qkv's kernel). Then, on an H100, session 38's profile-selection
# run (tools/device/session39_c.sh's H100 branch, on the same binary: no DAK_DIAG_SKIP there);
# on an H200, that script's batch-512 points of issue 7.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_configure -DDAK_DIAG_SKIP_KERNELS
dak_build dak dak_gpu_tests
dak_gtest 'DiagEmptyKernel.*' 60
for R in 1 2; do
  for v in none attn attn_body; do
    left 100 && dak_tpot DAK_DIAG_SKIP=$v "$v-$R" --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32
  done
done | tee "$OUT/skip.txt"
left 150 && DAK_CALL_LIMIT=$(( limit - ($(date +%s) - t0) )) bash tools/device/session39_c.sh
echo "total $(( $(date +%s) - t0 )) s"
