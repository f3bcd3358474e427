#!/usr/bin/env bash
# Session 35, call 2: the split x ring of the 64-row tiles at bn 32 / 64 (TieredGemmTile::x_slots:
# 4 W stages + 2 x slots at bn 64 where 3 (W, x) stages were; 5 + 2 at bn 32 where 4 were).
# 1. build this tree (dak, gpu tests, timeline) and, beside it, dak with -DDAK_TIERED_GEMM_X_SLOTS=0
#    (one x tile per stage: the old rings) in build-old;
# 2. every gpu test;
# 3. Llama-2-7B decode (prompt 32, gen 32, `--gemm tiered`) at batch 1 / 8 / 24 / 64, new and old,
#    two interleaved rounds; batch 64 under DAK_GEMM_WIDE_SPLITS (k-splits forced per linear);
# 4. the CUPTI timeline of batch 64 on the new build.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
F=-DDAK_TIERED_GEMM_X_SLOTS=0
( cmake -S . -B build-old -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAK_BUILD_FUZZERS=OFF \
    -DCMAKE_CXX_FLAGS=$F -DCMAKE_CUDA_FLAGS=$F > cfg-old.log 2>&1 &&
  cmake --build build-old -j8 --target dak > build-old.log 2>&1 ) &
pid_old=$!
dak_build dak dak_gpu_tests dak_timeline
wait $pid_old; echo "build-old rc=$? ($(( $(date +%s) - t0 )) s)"
dak_gtest 'TieredGemm.*' 200
dak_gpu_tests 120 2
ab() {  # ab LABEL BIN ENV ARGS...
  local label=$1 bin=$2 envs=$3; shift 3
  env $envs timeout 90 $bin/dak bench --random-weights --repeats 5 --model llama-2-7b --prompt-len 32 --gen-len 32 "$@" \
    2> /dev/null > "/tmp/r-$label.txt"
  grep -E "^\| [0-9]+ \| 32 \| " "/tmp/r-$label.txt" | awk -F'|' -v l="$label" '{print l, "batch", $2, "TPOT", $7, "ratio", $10}'
}
for r in 1 2; do
  ab new$r build-gpu X=1 --batch 1,8,24,64 --gemm tiered
  ab old$r build-old X=1 --batch 1,8,24,64 --gemm tiered
done | tee "$OUT/decode.txt"
for v in "12288x4096=2" "12288x4096=4" "4096x4096=1" "4096x4096=4" "4096x11008=4" "22016x4096=2"; do
  ab "split-$v" build-gpu DAK_GEMM_WIDE_SPLITS=$v --batch 64 --gemm tiered
done | tee -a "$OUT/decode.txt"
ab auto-new build-gpu X=1 --batch 64 | tee -a "$OUT/decode.txt"
dak_timeline b64-new X=1 --batch 64 --gemm tiered
CUDA_INJECTION64_PATH=$PWD/build-gpu/libdak_timeline.so DAK_TIMELINE_OUT=/tmp/tl-old.csv \
  timeout 120 build-old/dak bench --random-weights --model llama-2-7b --prompt-len 32 --gen-len 16 --repeats 5 \
  --batch 64 --gemm tiered > /dev/null 2>&1
{ echo "=== b64-old"; python3 tools/timeline/summarize.py /tmp/tl-old.csv --min-replays 20; } >> "$OUT/timelines.txt" 2>&1
grep -E "^=== |graph|layer period|^ +[0-9]+ " "$OUT/timelines.txt" | cut -c1-100 | head -40
echo "total $(( $(date +%s) - t0 )) s"
