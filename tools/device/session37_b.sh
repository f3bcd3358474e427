#!/usr/bin/env bash
# Session 37, call 2: does the data change the time? gemm_probe (W, x zeros) timed OPT-30B's qkv
# (21504 x 7168, N = 8) at 105 us; `dak bench gemm` (random W, x) at 126 us with the same schedule.
# Each shape with zeros and with random data (DAK_PROBE_FILL=random), 100 repetitions each (sustained
# load), while nvidia-smi logs SM clock, power and throttle reasons every 20 ms; then the same rows of
# `dak bench gemm` for Llama-2-7B at N = 8. Then the H100 profile chosen by this host's link
# (h100-default or h100-fast-link, new in session 37): `dak plan`'s notice, and `dak bench` at
# Llama-2-7B batch 8, 10 % in modes auto and direct against its predictions. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
dak_build_probe
nvidia-smi -q -d POWER,CLOCK > "$OUT/smi-static.txt" 2>&1
grep -iE "Power Limit|Max Clocks|^ +SM +:|Memory +:" "$OUT/smi-static.txt" | head -12
Q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active
for fill in zeros random; do
  nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits -lms 20 > "/tmp/smi-$fill.csv" 2>&1 &
  smi=$!
  sleep 0.5
  for mk in "21504 7168" "28672 7168" "12288 4096" "22016 4096" "4096 11008"; do
    set -- $mk
    DAK_PROBE_FILL=$fill DAK_PROBE_REPEAT=60 timeout 60 build-gpu/gemm_probe $1 8 $2 0 0 | grep -v "^W and"
  done | sed "s/^/$fill /" | tee -a "$OUT/probe.txt"
  kill $smi; wait $smi 2>/dev/null
  python3 - "$fill" <<'P' | tee -a "$OUT/probe.txt"
import sys, statistics as st
rows = [l.split(', ') for l in open(f"/tmp/smi-{sys.argv[1]}.csv") if l.count(',') >= 5]
busy = [r for r in rows if float(r[3]) > 200]  # samples under load (W)
if not busy: print(sys.argv[1], "no samples above 200 W of", len(rows)); sys.exit()
sm = [float(r[1]) for r in busy]; pw = [float(r[3]) for r in busy]
reasons = {}
for r in busy: reasons[r[5].strip()] = reasons.get(r[5].strip(), 0) + 1
print(f"{sys.argv[1]}: {len(busy)} busy samples: SM clock median {st.median(sm):.0f} MHz [min {min(sm):.0f}], "
      f"power median {st.median(pw):.0f} W [max {max(pw):.0f}], throttle reasons {reasons}")
P
done
cp /tmp/smi-zeros.csv /tmp/smi-random.csv "$OUT/"
timeout 200 build-gpu/dak bench gemm --models llama-2-7b,opt-30b --tokens 8 --ratios 0 --json "$OUT/gemm8.json" > "$OUT/gemm8.txt" 2> "$OUT/gemm8.log"
echo "bench gemm rc=$?"; grep -iE "error|fix" "$OUT/gemm8.log" | head -3
grep -E "^\| (llama-2-7b|opt-30b) \| gemm" "$OUT/gemm8.txt" | awk -F'|' '{print $2,$4,$5,$6,$11,$15,$16}'
grep -E "^(B_g|B_h)" "$OUT/gemm8.txt" | cut -c1-100
build-gpu/dak plan --model llama-2-7b --batch 8 --gen-len 8 --offload-ratio 0.1 2>&1 | grep -E "notice|profile  |TPOT" | head -5
for m in auto direct; do
  dak_bench_point l7-b8-10-$m X=1 120 --model llama-2-7b --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1 --offload $m
  grep -E "notice" /tmp/s-l7-b8-10-$m.log | cut -c1-200
done
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
