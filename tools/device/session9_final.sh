#!/usr/bin/env bash
# Device call (session 9, the tree to land): wide stages with independent accumulators, `--gemm auto`
# on the tiered GEMM up to 64 tokens. Build; every gpu test (4 at a time); Llama-2-7B decode TPOT at
# batch 1 / 8 / 64 with auto, tiered and cublas; `dak bench gemm --quick` at N = 8; offload points
# (auto) Llama-2-7B batch 8 at 10 / 30 %, batch 512 at 10 %, OPT-6.7B at FlexGen's 1 GiB point, and
# the modes direct / prefetch / zero-copy at Llama-2-7B batch 8, 10 %. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
mv "$OUT/gpu-tests.log" /tmp/gpu-tests.log
: > "$OUT/decode.txt"
for g in auto tiered cublas; do
  timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,64 --prompt-len 32 \
    --gen-len 32 --gemm $g --json "$OUT/bench-l7-$g.json" > /tmp/l7-$g.txt 2> /dev/null
  echo "decode --gemm $g rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" /tmp/l7-$g.txt
  { echo "=== --gemm $g"; cat /tmp/l7-$g.txt; } >> "$OUT/decode.txt"
done
timeout 90 build-gpu/dak bench gemm --quick --tokens 8 --json "$OUT/gemm-quick-n8.json" > /dev/null 2> /tmp/quick.log
echo "bench gemm --quick rc=$?"; grep -iE "error" /tmp/quick.log | head -3
: > "$OUT/offload.txt"
dak_offload_bench l7-b8 90 --model llama-2-7b --batch 8 --offload-ratio 0.1,0.3
dak_offload_bench l7-b512 120 --model llama-2-7b --batch 512 --offload-ratio 0.1
dak_offload_bench opt67-flexgen 90 --model opt-6.7b --batch 8 --cpu-offload-gb 1.0
for m in direct prefetch zero-copy; do dak_offload_bench l7-b8-$m 60 --model llama-2-7b --batch 8 --offload-ratio 0.1 --offload $m; done
python3 - "$OUT/offload.json" /tmp/bench-*.json <<'PY'
import json, sys
json.dump({p: json.load(open(p)) for p in sys.argv[2:]}, open(sys.argv[1], "w"))
PY
cp /tmp/gpu-tests.log "$OUT/gpu-tests.log"
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick-n8.json" | head -3
echo "total $(( $(date +%s) - t0 )) s"
