#!/usr/bin/env python3
"""Summarize a kernel timeline written by libdak_timeline.so (tools/timeline/cupti_timeline.cc).

For every CUDA graph replayed at least --min-replays times (dak's decode steps), per replay: the
kernels in capture order, each one's duration (end - start) and its *increment* (its end minus the
previous kernel's end: the time it adds to the critical path of a dependent chain; with PDL a
kernel starts early and waits, so duration overstates its cost and the increment is what counts).
Medians over replays, in microseconds. Prints the step span, the increments summed per kernel name,
and one steady-state layer (the repeating period of kernel names) kernel by kernel. Replays whose
kernel count differs from the most common one (a replay cut off when the program exited) are left
out and counted.

usage: summarize.py TIMELINE.csv [--min-replays 5] [--layer K]
Exit status 1 with a message for a file that cannot be read or is not such a CSV, or one with no
graph replayed often enough.
"""
import argparse
import collections
import csv
import re
import statistics
import sys

COLUMNS = ["start_ns", "end_ns", "correlation", "graph_id", "graph_node", "grid", "block", "smem", "stream", "name"]
INT_COLUMNS = COLUMNS[:-1]


def fail(msg):
    sys.exit(f"summarize.py: {msg}")


def short_name(name):
    name = re.sub(r"^void ", "", name).replace("(anonymous namespace)", "anon")
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # drop the parameter list: the first '(' at template depth 0
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    name = name[:cut]
    base = re.sub(r"<.*", "", name).split("::")[-1]
    targs = re.search(r"<(.*)>$", name)
    return base + (f"<{targs.group(1)}>" if targs and len(targs.group(1)) < 24 else "")


def period_of(names):
    """Smallest p (2..80) with names[i] == names[i + p] for >= 95 % of i, and the first index of the run."""
    n = len(names)
    for p in range(2, min(81, n // 3)):
        same = [names[i] == names[i + p] for i in range(n - p)]
        if sum(same) >= 0.95 * (n - p) - p:
            first = next((i for i in range(n - p) if all(same[i:i + p])), None)
            if first is not None:
                return p, first
    return None, None


def read_rows(path):
    """The CSV's rows with integer columns parsed; exits with a message naming what is wrong."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None:
                fail(f"{path} is empty (expected the CSV of libdak_timeline.so)")
            missing = [c for c in COLUMNS if c not in reader.fieldnames]
            if missing:
                fail(f"{path} lacks the columns {', '.join(missing)} (expected {','.join(COLUMNS)})")
            rows = []
            for line, r in enumerate(reader, start=2):
                try:
                    rows.append({**r, **{c: int(r[c]) for c in INT_COLUMNS}})
                except (TypeError, ValueError):
                    fail(f"{path}:{line}: not a row of integers and a name: {','.join(str(r.get(c)) for c in COLUMNS)}")
            return rows
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror or e}")
    except UnicodeDecodeError:
        fail(f"{path} is not a text CSV")
    except csv.Error as e:
        fail(f"{path} is not a valid CSV: {e}")


def main():
    ap = argparse.ArgumentParser(description="Summarize a libdak_timeline.so CSV (tools/timeline/).")
    ap.add_argument("csv")
    ap.add_argument("--min-replays", type=int, default=5, help="graphs replayed fewer times are skipped (default 5)")
    ap.add_argument("--layer", type=int, default=None, help="period to list (default: the middle one)")
    a = ap.parse_args()
    by_launch = collections.defaultdict(list)
    for r in read_rows(a.csv):
        if r["graph_id"] != 0:
            by_launch[(r["graph_id"], r["correlation"])].append(r)
    by_graph = collections.defaultdict(list)
    for (g, _), ks in by_launch.items():
        ks.sort(key=lambda r: r["graph_node"])
        by_graph[g].append(ks)
    if not by_graph:
        fail(f"no CUDA graph replays in {a.csv} (kernels launched outside graphs are not summarized)")
    shown = 0
    for g, replays in sorted(by_graph.items()):
        n = collections.Counter(len(r) for r in replays).most_common(1)[0][0]
        whole = [r for r in replays if len(r) == n]
        if len(whole) < a.min_replays:
            print(f"graph {g}: {len(whole)} replays of {n} kernels, fewer than --min-replays {a.min_replays}: skipped")
            continue
        shown += 1
        replays = whole
        names = [short_name(r["name"]) for r in replays[0]]
        dur = [[] for _ in range(n)]
        inc = [[] for _ in range(n)]
        spans = []
        for ks in replays:
            prev = None
            for i, r in enumerate(ks):
                s, e = r["start_ns"], r["end_ns"]
                dur[i].append((e - s) / 1e3)
                inc[i].append((e - (prev if prev is not None else s)) / 1e3)
                prev = e if prev is None else max(prev, e)
            spans.append((max(r["end_ns"] for r in ks) - min(r["start_ns"] for r in ks)) / 1e3)
        med_inc = [statistics.median(v) for v in inc]
        med_dur = [statistics.median(v) for v in dur]
        grids = [replays[0][i]["grid"] for i in range(n)]
        dropped = len(by_graph[g]) - len(replays)
        print(f"graph {g}: {len(replays)} replays of {n} kernels"
              + (f" ({dropped} with another kernel count left out)" if dropped else "")
              + f", span median {statistics.median(spans):.1f} us [{min(spans):.1f}, {max(spans):.1f}]")
        tot = collections.OrderedDict()
        for i, nm in enumerate(names):
            t = tot.setdefault(nm, [0.0, 0.0, 0])
            t[0] += med_inc[i]
            t[1] += med_dur[i]
            t[2] += 1
        print(f"  {'kernel':<40} {'count':>5} {'sum incr us':>12} {'sum dur us':>11} {'incr/launch':>11}")
        for nm, (si, sd, c) in sorted(tot.items(), key=lambda kv: -kv[1][0]):
            print(f"  {nm:<40} {c:>5} {si:>12.1f} {sd:>11.1f} {si / c:>11.2f}")
        p, first = period_of(names)
        if not p:
            print("  no repeating period of kernels (no layer table)")
            continue
        layers = (n - first) // p
        k = a.layer if a.layer is not None else layers // 2
        if not 0 <= k < layers:
            fail(f"--layer {k}: graph {g} has periods 0 to {layers - 1}")
        lo = first + k * p
        print(f"  layer period {p} kernels from kernel {first} ({layers} periods); period {k}, "
              f"sum of increments {sum(med_inc[lo:lo + p]):.1f} us:")
        print(f"    {'#':>4} {'kernel':<40} {'grid':>5} {'incr us':>8} {'dur us':>8}")
        for i in range(lo, lo + p):
            print(f"    {i:>4} {names[i]:<40} {grids[i]:>5} {med_inc[i]:>8.2f} {med_dur[i]:>8.2f}")
        print(f"    before the layers: {sum(med_inc[:first]):.1f} us; after them: "
              f"{sum(med_inc[first + layers * p:]):.1f} us ({', '.join(names[first + layers * p:])})")
    if shown == 0:
        fail(f"no graph of {a.csv} has --min-replays {a.min_replays} replays (lower it to see the others)")


if __name__ == "__main__":
    main()
