#!/usr/bin/env bash
# Short device call: build, the tiered GEMM and offload-engine gpu tests, and `dak bench gemm
# --quick` (Llama-2-7B, N = 8 and 512, every ratio). For a last check after small kernel edits
# when little device time is left. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gtest 'TieredGemm*:OffloadEngine*' 150
timeout 120 build-gpu/dak bench gemm --quick --json "$OUT/quick.json" > "$OUT/quick.txt" 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$?"; grep -E "^(B_g|B_h|multicast)|targets" "$OUT/quick.txt" | cut -c1-110
python3 tools/device/summarize_gemm.py "quick=$OUT/quick.json"
echo "total $(( $(date +%s) - t0 )) s"
