#!/usr/bin/env bash
# Device call (session 6, last): build, every gpu test (4 at a time), `dak bench gemm --quick`
# (Llama-2-7B, N = 8 and 512, every ratio) with the measured 1 MiB congestion cap and the
# multicast filler slices, and `dak bench` Llama-2-7B batch 8 at offload 0 / 10 / 30 % (auto).
# Prints the tables last. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 200 4
d=build-gpu/dak
timeout 150 $d bench gemm --quick --json "$OUT/gemm-quick.json" > "$OUT/quick.txt" 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error" "$OUT/quick.log" | head -3
timeout 150 $d bench --random-weights --repeats 5 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 32 \
  --offload-ratio 0,0.1,0.3 --json "$OUT/bench-l7-b8.json" > "$OUT/l7.txt" 2> "$OUT/l7.log"
echo "bench l7-b8 rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "$OUT/l7.log" | head -3
rm -f "$OUT"/*.log "$OUT/quick.txt"
sed -n '/^offload (mode/,/^$/p' "$OUT/l7.txt" | grep -E "^\|"
grep -E "^\| (op|norm|attention|qkv|mlp|o_proj)" "$OUT/l7.txt" | head -8
python3 tools/device/summarize_gemm.py "quick=$OUT/gemm-quick.json"
echo "total $(( $(date +%s) - t0 )) s"
