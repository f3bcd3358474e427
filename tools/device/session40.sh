#!/usr/bin/env bash
# Next session's first call (prepared in session 39). What one kernel boundary of the decode chain
# costs by itself: a diagnostic build (-DDAK_DIAG_SKIP_KERNELS: wrong outputs) runs Llama-2-7B decode
# (batch 1 / 8, prompt 32, gen 32, two interleaved rounds) with the attention (none), without it
# (attn), and with an empty kernel of its CTA count in its place (attn_body). attn_body - attn is
# the boundary's cost; none - attn_body the attention's own work (docs/perf-notes.md session 39: the
# lead of running each kv head's attention inside qkv's kernel). Then, on an H100, session 38's
# profile-selection run (tools/device/session39_c.sh's H100 branch). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gtest 'DiagEmptyKernel.*' 60
cp build-gpu/dak /tmp/dak-release
cmake -S . -B build-diag -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF \
  -DCMAKE_CXX_FLAGS=-DDAK_DIAG_SKIP_KERNELS > cfg2.log 2>&1 &&
  cmake --build build-diag -j16 --target dak > build2.log 2>&1 || { grep error build2.log | head; exit 1; }
echo "diag build $(( $(date +%s) - t0 )) s"
run() {  # $1 label, $2 binary, $3 skip list
  DAK_DIAG_SKIP=$3 timeout 60 $2 bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
    --gen-len 32 2> /dev/null > "/tmp/d-$1.txt"
  grep -E "^\| [0-9]+ \| 32 \| 32" "/tmp/d-$1.txt" | awk -F'|' -v l="$1" '{print l, "batch", $2, "TPOT", $7, "floor", $9, "ratio", $10}'
}
{
  left 60 && run release /tmp/dak-release ""
  for R in 1 2; do
    for v in none attn attn_body; do left 40 && run "$v-$R" build-diag/dak "$v"; done
  done
} | tee "$OUT/skip.txt"
if ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  left 150 && DAK_CALL_LIMIT=$(( limit - ($(date +%s) - t0) )) bash tools/device/session39_c.sh
fi
echo "total $(( $(date +%s) - t0 )) s"
