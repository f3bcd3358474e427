#!/usr/bin/env bash
# Device call 2 of session 12: (1) `gemm_probe stream` with more box variants (L2 promotion, 8-atom
# boxes, unswizzled 512-byte rows); (2) Llama-2-7B batch 512 at 10 % (auto) under two plans of
# the same bytes: the greedy's KV cache of layers 0-3 wholly on the host (concentrated, before
# this session) and spread evenly over the 32 layers (the allocator's new spread pass), A B A.
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
echo "== probe stream"
build-gpu/gemm_probe stream > "$OUT/stream.txt"; cat "$OUT/stream.txt"
P=docs/results/2026-12-02/session12
for run in concentrated spread concentrated2; do
  dak_offload_bench "l7b512-$run" 150 --model llama-2-7b --batch 512 --offload auto --plan "$P/l7b512-${run%2}.json"
done
grep -E "^=== |^\| (attention|mlp_up|qkv_proj) " "$OUT/offload.txt"
python3 - "$OUT/offload.json" /tmp/bench-*.json <<'PY'
import json, sys
json.dump({f.split('bench-')[1][:-5]: json.load(open(f)) for f in sys.argv[2:]}, open(sys.argv[1], 'w'), indent=1)
PY
echo "total $(( $(date +%s) - t0 )) s"
