#!/usr/bin/env bash
# Device call 3 of session 16: the tiered attention's all-HBM side (issue 5). bench/tiered_attention_probe
# built with four variants of src/gpu/kernels/tiered_attention.cu: base (cp.async 16-byte copies),
# nomath (the copies and waits only), tma (one TMA bulk copy per K / V row into the padded step, on a
# per-stage mbarrier), tma+nomath. Each at Llama-2-7B batch 8, contexts 512 / 4096 / 32768, next to
# B_g of the same process; then Nsight Compute on base and tma at 4096. Carry: third_party.
# As run, the kernel had compile-time switches DAK_ATT_TMA_ROWS (now the runtime path hbm_bulk_rows:
# DAK_PROBE_HBM_COPY=bulk), DAK_ATT_NOMATH and DAK_ATT_ROTATE (in docs/attempts/session16-attention-hbm-variants.patch,
# which applies to the landed tree); DAK_ATT_TRACE stayed.
set -uo pipefail
source tools/device/common.sh
dak_build dak_gpu
dak_attention_probe base "" & dak_attention_probe nomath "-DDAK_ATT_NOMATH" & dak_attention_probe tma "-DDAK_ATT_TMA_ROWS" &
dak_attention_probe tmanomath "-DDAK_ATT_TMA_ROWS -DDAK_ATT_NOMATH" & wait
echo "variants built $(( $(date +%s) - t0 )) s"
for v in base nomath tma tmanomath base tma; do
  echo "=== $v"; timeout 60 build-gpu/ap-$v | tee -a "$OUT/probe.txt"
done
sec="--section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section Occupancy"
for v in base tma; do
  timeout 100 ncu --clock-control none $sec -k regex:tiered_attention_kernel --launch-skip 1 --launch-count 1 \
    build-gpu/ap-$v once 8 32 32 128 4096 > "$OUT/ncu-$v.txt" 2>&1
  echo "ncu $v rc=$?"
  grep -E "DRAM Throughput|Duration|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|L2 Hit|Mem Busy|Registers Per|Achieved Active" "$OUT/ncu-$v.txt" | head -14
done
echo "total $(( $(date +%s) - t0 )) s"
