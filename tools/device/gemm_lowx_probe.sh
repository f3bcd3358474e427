#!/usr/bin/env bash
# Device call (prepared in session 5, for the next one): why the direct path's host rows crawl at
# N = 512 with few host rows (docs/micro-experiments.md, section 3). bench/tiered_gemm_probe.cu in
# its `host` mode: (1) all-host GEMMs, no HBM CTAs beside them: one cluster of 4 with 6 and 1
# stages, two clusters, one plain CTA with 6 stages — does one multicast cluster reach more than
# ~3.6 GB/s alone?; (2) the measured 2 % point (gate_up 22016 x 4096, 440 host rows) with and
# without multicast; (3) Nsight Compute stall sampling of (2): which wait dominates (the consumers'
# full barrier, the producers' empty barrier). Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu
dak_build_probe
echo "build $(( $(date +%s) - t0 )) s"
p=build-gpu/gemm_probe
echo "(1) all host rows, N = 512 (args: M N K m_host max_cluster host_ctas host_stages)"
for c in "448 512 4096 448 4 4 6" "448 512 4096 448 4 4 1" "448 512 4096 448 4 8 6" "448 512 4096 448 1 1 6" \
         "448 512 4096 448 1 4 6" "12288 512 4096 12288 4 4 6"; do
  timeout 60 $p host $c
done
echo "(2) 2 % of gate_up on the host, N = 512"
for c in "22016 512 4096 440 4 0 0" "22016 512 4096 440 1 0 0" "22016 512 4096 440 4 4 6" "22016 512 4096 0 4 0 0"; do
  timeout 60 $p host $c
done
echo "(3) Nsight Compute, 2 % point with multicast"
timeout 150 ncu --clock-control none --section WarpStateStats --section SourceCounters --page source \
  --print-source sass --csv -k regex:tiered_gemm --launch-skip 3 --launch-count 1 \
  $p host 22016 512 4096 440 4 0 0 > "$OUT/ncu-lowx.csv" 2> "$OUT/ncu-lowx.log"
echo "ncu rc=$?"; python3 tools/device/ncu_top_stalls.py "$OUT/ncu-lowx.csv" 25
echo "total $(( $(date +%s) - t0 )) s"
