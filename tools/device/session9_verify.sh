#!/usr/bin/env bash
# Device call (session 9, the landed tree): build; every gpu test (4 at a time); Llama-2-7B decode
# TPOT at batch 1 / 8 / 16 / 32 with the default `--gemm auto` (tiered up to 16 tokens); the probe's
# decode shapes. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gpu_tests 200 4
timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8,16,32 --prompt-len 32 \
  --gen-len 32 --json "$OUT/bench-l7-auto.json" > "$OUT/l7-auto.txt" 2> /dev/null
echo "decode (auto) rc=$?"; grep -E "^\| [0-9]+ \| 32 \| 32" "$OUT/l7-auto.txt" | cut -d'|' -f2,7,10
timeout 60 build-gpu/gemm_probe > "$OUT/probe.txt" 2>&1; echo "probe rc=$?"
grep -E "splits= 1 .*units=" "$OUT/probe.txt" | head -40
echo "total $(( $(date +%s) - t0 )) s"
