#!/usr/bin/env bash
# Device call 1 of session 20: session 19's landing tree on the GPU (the env switches were not run
# there), then why the compute path's EB is not flat at small host ratios (session 19's sweep:
# Llama-2-7B's stack at N = 512 335.7 us at x = 0, 560.5 at 0.5 %; 70B / OPT-30B down +10-15 %):
# `dak bench gemm` at x = 0 / 0.5 / 2 % with multicast clusters of at most 4 / 2 / 1, and a kernel
# timeline of the Llama-2-7B stack at 0.5 % (per-GEMM durations). Decode batch 1 / 8 as the
# session's reference. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests dak_timeline
dak_gpu_tests 60 4
for c in 4 2 1; do
  timeout 90 build-gpu/dak bench gemm --models llama-2-7b,opt-30b --tokens 512 --ratios 0,0.5,2 --runs 5 \
    --max-cluster $c --json "$OUT/gemm-c$c.json" > "/tmp/gemm-c$c.txt" 2>&1
  echo "bench gemm cluster<=$c rc=$? ($(( $(date +%s) - t0 )) s)"
  { echo "=== max cluster $c"; cat /tmp/gemm-c$c.txt; } >> "$OUT/gemm.txt"
done
CUDA_INJECTION64_PATH=$PWD/build-gpu/libdak_timeline.so DAK_TIMELINE_OUT=/tmp/tl-gemm.csv \
  timeout 60 build-gpu/dak bench gemm --models llama-2-7b --tokens 512 --ratios 0.5 --runs 5 > /tmp/tl-gemm.txt 2>&1
echo "traced gemm rc=$?"
python3 tools/timeline/summarize.py /tmp/tl-gemm.csv --min-replays 5 > "$OUT/timeline-gemm.txt" 2>&1
python3 - /tmp/tl-gemm.csv >> "$OUT/timeline-gemm.txt" <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(list)
for r in rows:
    if r['graph_id'] not in ('', '0'):
        by[(r['graph_id'], r['grid'], r['block'], r['smem'])].append((int(r['end_ns']) - int(r['start_ns'])) / 1e3)
print("per (graph, grid, block, smem): count, median duration us")
for k, v in sorted(by.items()):
    v.sort(); print(k, len(v), round(v[len(v) // 2], 1))
PY
dak_l7_decode base X=1 auto
dak_bundle_decode
echo "--- summary"
grep -E "tests passed|tests failed" "$OUT/gpu-tests.log" | tail -1
grep -E "FAILED|Failure" "$OUT/gpu-tests.log" | head -5
grep -E "^=== |\| 512 \| (0|0.5|2) \|" "$OUT/gemm.txt" | awk -F'|' '{print $2 "|" $3 "|" $4 "|" $8 "|" $9 "|" $11 "|" $15}'
tail -n 30 "$OUT/timeline-gemm.txt"
grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/decode.txt"
echo "total $(( $(date +%s) - t0 )) s"
