#!/usr/bin/env bash
# Device call (session 6): the tiered GEMM's multicast slices past a side's last row now load an
# in-bounds slice (a TMA box entirely out of bounds cost ~8 us per load). Checks: the TieredGemm gpu
# tests; the probe's all-host cases with (448, 464 rows) and without (512) a partial last m-tile;
# gate_up at N = 512 for x = 0, 0.5, 2, 10, 40, 100 % (`dak bench gemm`, multicast up to 4); then
# `dak bench gemm --quick` (N = 8 and 512 stacks); the probe at x = 0, N = 512 with 1 and 2 k-splits. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_build_probe
dak_gtest 'TieredGemm*' 200
echo "probe (args: M N K m_host max_cluster host_ctas host_stages)"
for c in "448 512 4096 448 4 4 6" "464 512 4096 464 4 4 6" "512 512 4096 512 4 4 6" "448 512 4096 448 1 4 6" \
         "22016 512 4096 110 4 0 0" "22016 512 4096 440 4 0 0" "22016 512 4096 2202 4 0 0" "22016 512 4096 0 4 0 0"; do
  timeout 60 build-gpu/gemm_probe host $c | cut -c1-200
done
echo "probe, x = 0, N = 512 (args: M N K splits stages): k_splits 1 and 2 against the last wave"
for c in "22016 512 4096 1 0" "22016 512 4096 2 0" "12288 512 4096 1 0" "12288 512 4096 2 0" "4096 512 11008 1 0" \
         "4096 512 11008 2 0" "4096 512 4096 1 0"; do
  timeout 60 build-gpu/gemm_probe $c
done
d=build-gpu/dak
timeout 150 $d bench gemm --models llama-2-7b --tokens 512 --ratios 0,0.5,2,10,40,100 --per-gemm-min-mib 150 \
  --stack-host-gib 0.01 --runs 5 --json "$OUT/gemm-n512-lowx-fixed.json" > "$OUT/n512.txt" 2> "$OUT/n512.log"
echo "bench gemm n512 rc=$?"; grep -iE "error|fix" "$OUT/n512.log" | head -3
timeout 240 $d bench gemm --quick --json "$OUT/gemm-quick.json" > "$OUT/quick.txt" 2> "$OUT/quick.log"
echo "bench gemm --quick rc=$?"; grep -E "^(B_g|B_h)" "$OUT/quick.txt" | cut -c1-110
grep -iE "error" "$OUT/quick.log" | head -3
rm -f "$OUT"/*.log
python3 tools/device/summarize_gemm.py n512="$OUT/gemm-n512-lowx-fixed.json" quick="$OUT/gemm-quick.json"
echo "total $(( $(date +%s) - t0 )) s"
