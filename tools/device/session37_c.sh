#!/usr/bin/env bash
# Session 37, call 3: `dak bench gemm` with the defaults, without (--warmup-ms 0, as before session 37)
# and with the new 20 ms of sustained load before each figure (call 2: OPT-30B's qkv took 122 us right
# after its set-up, and 105 us as the same cuBLAS launch later in the run; gemm_probe with zeros or
# random data, sustained, 101-103 us at 1980 MHz). Then Llama-2-7B decode at batch 1 / 8 / 64, and
# issue 7's batch-8 points at 10 / 30 / 60 % in every mode (default profile), and direct with
# --profile h100-fast-link, for Llama-2-7B, OPT-6.7B and OPT-30B as time allows. Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak
for w in 0 20; do
  timeout 200 build-gpu/dak bench gemm --warmup-ms $w --json "$OUT/gemm-w$w.json" > "$OUT/gemm-w$w.txt" \
    2> "/tmp/gemm-w$w.log"
  echo "bench gemm --warmup-ms $w rc=$? ($(( $(date +%s) - t0 )) s)"; grep -iE "error|fix" "/tmp/gemm-w$w.log" | head -3
  grep -E "^(B_g|B_h)|targets" "$OUT/gemm-w$w.txt" | cut -c1-120
done
# OPT-30B alone, 50 runs: does the first figure of an experiment stay slow, or do fast runs appear?
for w in 0 200; do
  timeout 60 build-gpu/dak bench gemm --models opt-30b --tokens 8 --ratios 0 --runs 50 --warmup-ms $w 2> /dev/null |
    grep -E "^\| opt-30b \| gemm" | awk -F'|' -v w=$w '{print "runs 50 warmup-ms", w, $4, "time", $11, "cuBLAS", $16, "prefetch", $17}'
done
dak_tpot X=1 auto --model llama-2-7b --batch 1,8,64 --prompt-len 32 --gen-len 32 | tee "$OUT/decode.txt"
python3 - "$OUT/gemm-w0.json" "$OUT/gemm-w20.json" <<'P'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
def rows(d): return {(r["model"], r["method"], r["op"], r["N"], r["x_pct"]): r for r in d["rows"]}
ra, rb = rows(a), rows(b)
print("model method op N x | w0 us ratio | w20 us ratio | cuBLAS w0 / w20")
for k in sorted(rb, key=lambda k: (k[3], k[0], k[1], k[2], k[4])):
    if k not in ra or k[4] > 2: continue
    x, y = ra[k], rb[k]
    print(*k, f"| {x['time_us']['median']:.1f} {x['ratio']:.3f} | {y['time_us']['median']:.1f} {y['ratio']:.3f} | "
          f"{x['cublas_us']['median']:.1f} / {y['cublas_us']['median']:.1f}")
P
limit=${DAK_CALL_LIMIT:-560}
left() { [ $(( $(date +%s) - t0 )) -lt $(( limit - $1 )) ]; }
for model in llama-2-7b opt-6.7b opt-30b; do
  for m in auto direct prefetch zero-copy; do
    [ $model = opt-30b ] && [ $m = zero-copy ] && continue
    left 70 || { echo "skip $model $m (time)"; continue; }
    dak_bench_point $model-b8-$m X=1 90 --model $model --batch 8 --prompt-len 32 --gen-len 8 --offload-ratio 0.1,0.3,0.6 --offload $m
  done
  left 60 && dak_bench_point $model-b8-direct-fl X=1 90 --model $model --batch 8 --prompt-len 32 --gen-len 8 \
    --offload-ratio 0.1,0.3,0.6 --offload direct --profile h100-fast-link
done
grep -h "notice" /tmp/s-*.log | sort | uniq -c | cut -c1-220
dak_merge_points > /dev/null
dak_point_table
echo "total $(( $(date +%s) - t0 )) s"
