#!/usr/bin/env bash
# Device call of session 32 after the plan took the staged HBM path for splits of >= 512 keys:
# 1. build dak and the gpu tests; every gpu test;
# 2. issue 5's full `dak bench attention` sweep with the defaults (3 models x batch 8 / 64 / 512 x
#    512 / 4K / 32K keys x 5 ratios + x*), JSON and CSV kept;
# 3. decode TPOT, Llama-2-7B batch 8 prompt 2048 gen 16 and batch 1 / 8 prompt 32 gen 32, the plan
#    against DAK_ATTN_HBM_COPY=bulk (session 16's path for long splits).
# Carry: third_party.
set -uo pipefail
source tools/device/common.sh
dak_build dak dak_gpu_tests
dak_gpu_tests 120 2
timeout 300 build-gpu/dak bench attention --json "$OUT/attention.json" --csv "$OUT/attention.csv" > "$OUT/attention.txt" 2> "$OUT/attention.err"
echo "attention sweep rc=$? ($(( $(date +%s) - t0 )) s)"
grep -E "points at|targets|met" "$OUT/attention.txt" | tail -5
python3 - "$OUT/attention.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kernel"] == "tiered" and r["skipped"] != "true"]
met = sum(r["target_met"] == "true" for r in rows)
print(f"tiered points: {len(rows)}, >= 90 % of ideal: {met}")
cells = {}
for r in rows:
    cells.setdefault((r["model"], int(r["batch"]), int(r["context"])), []).append(r)
print("model       B    ctx   " + " ".join(f"{x:>7s}" for x in ["x=0", "x*", "1/8", "1/4", "1/2", "1"]))
for k in sorted(cells):
    pts = {}
    for r in cells[k]:
        key = "x*" if r["balance_point"] == "true" else {0.0: "x=0", 0.125: "1/8", 0.25: "1/4", 0.5: "1/2", 1.0: "1"}.get(round(float(r["ratio"]), 3), r["ratio"])
        pts[key] = 100 * float(r["of_ideal"])
    print(f"{k[0]:11s} {k[1]:3d} {k[2]:6d} " + " ".join(f"{pts[x]:7.1f}" if x in pts else "       " for x in ["x=0", "x*", "1/8", "1/4", "1/2", "1"]))
PY
for R in 1 2; do
  for v in X=1 DAK_ATTN_HBM_COPY=bulk; do
    [ $(( $(date +%s) - t0 )) -lt 520 ] || { echo "skip decode $v (time)"; continue; }
    echo "=== decode [$v] round $R"
    env $v timeout 60 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 8 --prompt-len 2048 \
      --gen-len 16 2> /dev/null | grep -E "^\| [0-9]+ \| 2048 \| 16"
  done
done | cut -c1-120
env X=1 timeout 45 build-gpu/dak bench --random-weights --repeats 5 --model llama-2-7b --batch 1,8 --prompt-len 32 \
  --gen-len 32 2> /dev/null | grep -E "^\| [0-9]+ \| 32 \| 32" | cut -c1-120
echo "total $(( $(date +%s) - t0 )) s"
