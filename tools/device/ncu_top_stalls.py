#!/usr/bin/env python3
"""Top SASS instructions by sampled warp stalls from `ncu --page source --print-source sass --csv`.
Usage: ncu_top_stalls.py FILE [COUNT]"""
import csv
import sys

rows = list(csv.reader(open(sys.argv[1], errors="replace")))
count = int(sys.argv[2]) if len(sys.argv) > 2 else 20
head_i = next((i for i, r in enumerate(rows) if any("Warp Stall Sampling (All" in c for c in r)), None)
if head_i is None:
    print("no stall-sampling column; first lines:")
    for r in rows[:8]:
        print(",".join(r)[:300])
    sys.exit(0)
head = rows[head_i]
col = next(i for i, c in enumerate(head) if "Warp Stall Sampling (All" in c)
src = next((i for i, c in enumerate(head) if c.strip() in ("Source", "SASS")), 1)
addr = next((i for i, c in enumerate(head) if "Address" in c), 0)
data = []
for r in rows[head_i + 1:]:
    try:
        data.append((float(r[col].replace(",", "")), r[addr], r[src]))
    except (ValueError, IndexError):
        pass
total = sum(d[0] for d in data) or 1.0
print(f"stall samples: {total:.0f} over {len(data)} instructions; columns: {[c for c in head if 'Stall' in c][:6]}")
for v, a, s in sorted(data, reverse=True)[:count]:
    print(f"{100 * v / total:5.1f}%  {a:>8}  {s[:110]}")
