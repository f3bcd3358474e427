#!/usr/bin/env bash
# Device call for the end-to-end experiments of issue 7 that earlier sessions had not run: batch 512
# (compute-bound linears, KV offload) for Llama-2-7B and OPT-6.7B, OPT-30B at batch 8 for global
# ratios {0, 10, 30, 60} % and FlexGen's OPT-30B point (4.6 GiB on the host, prompt 32, gen 32),
# OPT-30B at batch 512, and the capacity-driven OPT-30B run (--gpu-memory 100GiB, prompt 512, batch
# 48 / 96: KV grows with batch x prompt and the ratio comes from capacity). `dak bench`,
# random weights, --offload auto, prompt 32, gen 8 (7 decode steps x 5 repeats per point) unless
# stated. Also runs the tiered GEMM and offload-engine gpu tests. JSON per run under $OUT.
# Usage from the repo root: [PARTS="tests b512 opt30 capacity"] bash tools/device/offload_sweep.sh
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
d=build-gpu/dak
parts=${PARTS:-tests b512 opt30 capacity}
bench() {  # label, seconds, flags...
  local label=$1 limit=$2; shift 2
  timeout "$limit" $d bench --random-weights --repeats 5 --json "$OUT/$label.json" "$@" > "$OUT/$label.txt" \
    2> "$OUT/$label.log"
  echo "bench $label rc=$? ($(( $(date +%s) - t0 )) s)"
  grep -E "^B_h =|^B_g" "$OUT/$label.txt" | cut -c1-70
  sed -n '/^offload (mode/,/^$/p' "$OUT/$label.txt" | grep -E "^\|" | head -12
  grep -E "error|fix" "$OUT/$label.log" | head -4
}
if [[ $parts == *tests* ]]; then
  dak_gtest 'TieredGemm*:OffloadEngine*' 200
fi
if [[ $parts == *b512* ]]; then
  bench l7-b512 150 --model llama-2-7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
  bench opt67-b512 150 --model opt-6.7b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
fi
if [[ $parts == *opt30* ]]; then
  bench opt30-b8 170 --model opt-30b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3,0.6
  bench opt30-flexgen 120 --model opt-30b --batch 8 --prompt-len 32 --gen-len 32 --cpu-offload-gb 4.6
  bench opt30-b512 170 --model opt-30b --batch 512 --prompt-len 32 --gen-len 8 --offload-ratio 0,0.1,0.3
fi
if [[ $parts == *capacity* ]]; then
  bench opt30-capacity 170 --model opt-30b --batch 48,96 --prompt-len 512 --gen-len 8 --gpu-memory 100GiB
fi
rm -f "$OUT"/*.log "$OUT"/*.txt
echo "total $(( $(date +%s) - t0 )) s"
