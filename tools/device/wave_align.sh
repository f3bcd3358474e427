#!/usr/bin/env bash
# Device call (session 6): wave alignment of the tiered GEMM's bandwidth path (HBM units of 16-64
# rows so the last wave is full; issue 4 item 5). Build, every gpu test (4 at a time), the probe's
# decode linears (N = 1 and 8, k_splits default/1/2/4), `dak bench gemm --quick` (N = 8 and 512
# stacks), and decode TPOT of Llama-2-7B at batch 1 and 8 with --gemm cublas and --gemm tiered
# (issue 3). Prints the tables last. The wave-aligned units it measured were slower and are
# reverted (docs/perf-notes.md, session 6); it still checks the decode GEMMs. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 200 4
timeout 120 build-gpu/gemm_probe > "$OUT/probe.txt" 2>&1; echo "probe rc=$?"
d=build-gpu/dak
timeout 150 $d bench gemm --quick --json "$OUT/gemm-quick.json" > "$OUT/quick.txt" 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error" "$OUT/quick.log" | head -3
for g in cublas tiered; do
  timeout 120 $d bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 --gen-len 32 \
    --gemm $g --json "$OUT/bench-l7-decode-$g.json" > "$OUT/l7-$g.txt" 2> "$OUT/l7.log"
  echo "bench l7 decode --gemm $g rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/l7.log" | head -3
done
rm -f "$OUT"/*.log "$OUT/quick.txt"
cat "$OUT/probe.txt"
for g in cublas tiered; do echo "--gemm $g"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/l7-$g.txt"; done
grep -E "^\| (qkv|o_proj|mlp_up|mlp_down|norm|attention|activation)" "$OUT/l7-tiered.txt" | head -14
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick.json"
echo "total $(( $(date +%s) - t0 )) s"
