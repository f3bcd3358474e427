#!/usr/bin/env bash
# Device call 2 of session 13: the tiered GEMM's W loads with EVICT_FIRST (DAK_W_EVICT_NORMAL=1 for
# the old policy) and the attention split that skips the combine at short contexts. Timelines
# (tools/timeline/) of Llama-2-7B decode at batch 1 and 8 under both policies and without PDL, the
# untraced TPOT A/B, then the tiered GEMM / attention gpu tests. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline dak_gpu_tests
tl() {  # tl NAME ENV DAK-BENCH-ARGS...: one traced run, its summary into $OUT/timeline-NAME.txt
  local name=$1 envs=$2; shift 2
  env $envs CUDA_INJECTION64_PATH=$PWD/build-gpu/libdak_timeline.so DAK_TIMELINE_OUT=/tmp/tl-$name.csv \
    timeout 120 build-gpu/dak bench --random-weights --model llama-2-7b --prompt-len 32 --gen-len 16 --repeats 5 "$@" \
    > "$OUT/bench-$name.txt" 2>&1
  echo "traced $name rc=$? ($(( $(date +%s) - t0 )) s)"
  python3 tools/timeline/summarize.py /tmp/tl-$name.csv --min-replays 20 > "$OUT/timeline-$name.txt" 2>&1
}
tl b1-first X=1 --batch 1
tl b8-first X=1 --batch 8
tl b1-normal DAK_W_EVICT_NORMAL=1 --batch 1
tl b8-normal DAK_W_EVICT_NORMAL=1 --batch 8
tl b1-nopdl DAK_NO_PDL=1 --batch 1
dak_l7_decode first X=1 auto
dak_l7_decode normal DAK_W_EVICT_NORMAL=1 auto
dak_l7_decode first2 X=1 auto
dak_gtest 'TieredGemm*:TieredAttention*:GpuEngine*' 240
for f in "$OUT"/timeline-*.txt; do echo "=== $f"; sed -n '1,9p;/layer period/,/before the layers/p' "$f" | cut -c1-90; done
echo "total $(( $(date +%s) - t0 )) s"
