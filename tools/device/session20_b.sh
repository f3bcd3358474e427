#!/usr/bin/env bash
# Device call 2 of session 20: is the compute path's host side at small x bound by its bytes in
# flight (one multicast cluster per host m-tile, 6 x 16 KiB of W) and the host read latency under
# the HBM side's load? Llama-2-7B stack, N = 512, x = 0 / 0.5 %: (a) the HBM CTAs' W stages in
# flight (DAK_GEMM_HBM_STAGES 6 / 4 / 3 / 2), (b) the host CTAs' stages (--congestion 4,S), (c) a
# kernel timeline with clusters of at most 2. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_timeline
b() {  # LABEL ENV FLAGS...
  local label=$1 envs=$2; shift 2
  env $envs timeout 60 build-gpu/dak bench gemm --models llama-2-7b --tokens 512 --runs 5 "$@" > /tmp/g.txt 2>&1
  echo "$label rc=$?"
  grep -E "\| 512 \| [0-9.]+ \|" /tmp/g.txt | awk -F'|' -v l="$label" '{print l " |" $8 "|" $11 "|" $15}' | tee -a "$OUT/ab.txt"
}
for hs in 6 4 3 2; do b "hbm_stages=$hs" DAK_GEMM_HBM_STAGES=$hs --ratios 0,0.5; done
for st in 6 4 2 1; do b "c4 host 4x$st" X=1 --ratios 0.5 --congestion 4,$st; done
b "c2 host 8x6" X=1 --ratios 0.5 --max-cluster 2 --congestion 8,6
b "c2 host 4x3" X=1 --ratios 0.5 --max-cluster 2 --congestion 4,3
for c in 2 4; do
  CUDA_INJECTION64_PATH=$PWD/build-gpu/libdak_timeline.so DAK_TIMELINE_OUT=/tmp/tl-c$c.csv \
    timeout 60 build-gpu/dak bench gemm --models llama-2-7b --tokens 512 --ratios 0,0.5 --runs 5 --max-cluster $c \
    > /tmp/tl.txt 2>&1
  echo "traced c$c rc=$?"
  { echo "=== max cluster $c"; python3 tools/timeline/summarize.py /tmp/tl-c$c.csv --min-replays 5 | grep -A6 "layer period"; } \
    >> "$OUT/timeline.txt" 2>&1
done
echo "--- summary"
cat "$OUT/ab.txt"
cat "$OUT/timeline.txt"
echo "total $(( $(date +%s) - t0 )) s"
