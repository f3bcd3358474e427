#!/usr/bin/env python3
"""Prints the per-launch rows of `dak bench gemm --json` files as one table (op, N, x, time, EB,
ratio, and the schedule: host CTAs x stages, HBM CTAs, cluster). Usage: summarize_gemm.py LABEL=FILE..."""
import json
import sys

print("| run | method | op | N | x % | time us | EB GB/s | ideal GB/s | ratio | host CTAs x stages | HBM CTAs | cluster |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
for arg in sys.argv[1:]:
    label, path = arg.split("=", 1)
    try:
        rows = json.load(open(path))["rows"]
    except (OSError, ValueError, KeyError) as e:
        print(f"| {label} | (no results: {e}) |")
        continue
    for r in rows:
        s = r["schedules"][0] if len(r["schedules"]) == 1 else None
        sched = (f"{s['host_ctas']} x {s['host_stages']} | {s['hbm_ctas']} | {s['cluster']}" if s else "- | - | -")
        print(f"| {label} | {r['method']} | {r['op']} | {r['N']} | {r['x_pct']:g} | {r['time_us']['median']:.1f} | "
              f"{r['eb_gbps']:.1f} | {r['ideal_gbps']:.1f} | {r['ratio']:.3f} | {sched} |")
