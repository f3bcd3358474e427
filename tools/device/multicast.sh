#!/usr/bin/env bash
# Device call for the multicast increment of the tiered GEMM (issue 4): build, every gpu test, then
# `dak bench gemm --quick` (Llama-2-7B, N = 8 and 512, every ratio, multicast on) and the read-
# amplification experiment: Llama-2-7B gate_up (22016 x 4096) per launch at x = 0 and 100 % for
# N = 128..2048 with multicast clusters of up to 1 (off) and 4 CTAs. Prints a short table last.
# Usage from the repo root: [SKIP_TESTS=1] [CLUSTERS="1 2 4"] bash tools/device/multicast.sh
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
dak_build
[[ ${SKIP_TESTS:-0} == 1 ]] || dak_gpu_tests 120
d=build-gpu/dak
timeout 200 $d bench gemm --quick --json "$OUT/gemm-quick.json" --csv "$OUT/gemm-quick.csv" > "$OUT/gemm-quick.txt" \
  2> "$OUT/gemm-quick.log"; echo "bench gemm --quick rc=$?"
grep -E "^(B_g|B_h|multicast)" "$OUT/gemm-quick.txt" | cut -c1-110
echo "| op | N | x % | time us [min, max] | EB GB/s | ideal GB/s | ratio | cuBLAS us | prefetch us | bits | target |"
grep -E "^\| llama" "$OUT/gemm-quick.txt" | cut -d'|' -f 4,7,8,11,12,13,15,16,17,18,19 | sed 's/^/|/'
grep -E "targets|differ" "$OUT/gemm-quick.txt" | head -4
for c in ${CLUSTERS:-1 4}; do
  timeout 150 $d bench gemm --models llama-2-7b --tokens 128,256,512,1024,2048 --ratios 0,100 --per-gemm-min-mib 150 \
    --stack-host-gib 0.01 --runs 5 --max-cluster $c --json "$OUT/amp-c$c.json" --csv "$OUT/amp-c$c.csv" \
    > "$OUT/amp-c$c.txt" 2> "$OUT/amp-c$c.log"; echo "amplification, clusters of up to $c: rc=$?"
  tail -n 3 "$OUT/amp-c$c.log"
done
echo
echo "Read amplification (gate_up at x = 100 %: time x B_h / host bytes; 1.0 = each host byte crosses PCIe once)"
echo "| max cluster | N | cluster | time us | host MB | B_h GB/s | amplification | cuBLAS us (x=0) | x=0 tiered us |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for c in ${CLUSTERS:-1 4}; do
  [[ -f "$OUT/amp-c$c.csv" ]] || continue
  awk -F, -v c=$c 'NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i; next }
    $col["method"] == "gemm" && $col["x_pct"] == 0 { t0[$col["N"]] = $col["time_us"]; cb[$col["N"]] = $col["cublas_us"] }
    $col["method"] == "gemm" && $col["x_pct"] == 100 {
      hb = $col["host_bytes"]; bh = $col["b_h_gbps"]; t = $col["time_us"]
      printf "| %s | %s | %s | %.1f | %.1f | %.2f | %.2f | %s | %s |\n", c, $col["N"], $col["cluster"], t, hb / 1e6, bh,
        t * 1e-6 * bh * 1e9 / hb, cb[$col["N"]], t0[$col["N"]] }' "$OUT/amp-c$c.csv"
done
echo "total $(( $(date +%s) - t0 )) s"
