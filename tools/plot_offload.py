#!/usr/bin/env python3
"""Plot the effective bandwidth (EB) of `dak bench` against the offload ratio: one line per
(model, device, batch, prompt, gen, mode) of the given JSON files, with the ideal EB of the same
points (step bytes / floor, floor = max(HBM step bytes / B_g, host step bytes / B_h)) and the
planner's (step bytes / predicted TPOT) next to it.

    dak bench --model llama-2-7b --random-weights --batch 8 --offload-ratio 0,0.1,0.3,0.6 --json b8.json
    tools/plot_offload.py b8.json [more.json ...] [-o offload.png] [--csv]

x = the achieved host fraction of the point (offload.host_ratio, in %), not the requested ratio.
y = EB in GB/s = step_bytes / TPOT median (log scale); error bars from the TPOT min / max.
Points without host bytes (ratio 0, or a ratio the planner kept all in HBM, or a JSON without an
"offload" object) sit at 0 % with the HBM floor.

Always prints a text table of the points (to stdout; to stderr with --csv, so that stdout is the
CSV only). Needs matplotlib: without it the script prints the table, says `pip install matplotlib`
and exits 1. A missing or unreadable file, or one without results, is an error (exit 1).
"""
import argparse
import json
import math
import sys
from collections import OrderedDict


class InputError(Exception):
    """A JSON file that is missing, unreadable or not a `dak bench --json` file."""


def _num(value, what, path, index):
    """`value` as a float; InputError naming the file, result and field when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{path}: results[{index}].{what} is {value!r}, not a number "
                         "(is this a `dak bench --json` file?)")
    return float(value)


def _gbps(bytes_, ms):
    """bytes / (ms / 1e3) in GB/s; NaN when the time is not positive."""
    return bytes_ / (ms * 1e-3) * 1e-9 if ms > 0 else math.nan


def load(path):
    """The points of one `dak bench --json` file: (header dict, list of point dicts)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file (write it with `dak bench ... --json {path}`)")
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}")
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e}); was the bench interrupted while writing it?")
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise InputError(f"{path}: no \"results\" list: not a `dak bench --json` file "
                         "(`dak bench gemm` writes CSV; plot that with tools/plot_gemm_eb.py)")
    hbm = doc.get("hbm") or {}
    host = doc.get("host") or {}
    header = {
        "file": path,
        "model": str(doc.get("model_name") or doc.get("model") or "?"),
        "device": str(doc.get("device") or "?"),
        "b_g_gbps": float(hbm["best_tb_s"]) * 1e3 if isinstance(hbm.get("best_tb_s"), (int, float)) else None,
        "b_h_gbps": float(host["gb_s"]) if isinstance(host.get("gb_s"), (int, float)) else None,
    }
    points = []
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict):
            raise InputError(f"{path}: results[{i}] is not an object")
        tpot = r.get("tpot_ms")
        if not isinstance(tpot, dict):
            raise InputError(f"{path}: results[{i}] has no tpot_ms object")
        step_bytes = _num(r.get("step_bytes"), "step_bytes", path, i)
        median = _num(tpot.get("median"), "tpot_ms.median", path, i)
        lo = _num(tpot.get("min", median), "tpot_ms.min", path, i)
        hi = _num(tpot.get("max", median), "tpot_ms.max", path, i)
        off = r.get("offload")
        if not isinstance(off, dict):
            off = {}
        planned = bool(off.get("planned", False))
        # An unplanned point is the all-HBM engine: its floor is the HBM floor and its prediction the
        # planner's cost model, which the bench writes into the offload object as well.
        floor_ms = off.get("floor_ms", r.get("floor_ms"))
        pred_ms = off.get("predicted_tpot_ms", r.get("model_tpot_ms"))
        points.append({
            "model": header["model"],
            "device": header["device"],
            "batch": int(_num(r.get("batch"), "batch", path, i)),
            "prompt_len": r.get("prompt_len"),
            "gen_len": r.get("gen_len"),
            "mode": str(off.get("mode", "direct")),
            "ratio": off.get("ratio"),
            "planned": planned,
            "x": 100.0 * _num(off.get("host_ratio", 0.0), "offload.host_ratio", path, i),
            "host_bytes": off.get("host_bytes", 0),
            "step_bytes": step_bytes,
            "tpot": median,
            "tpot_min": lo,
            "tpot_max": hi,
            "floor": _num(floor_ms, "offload.floor_ms", path, i) if floor_ms is not None else math.nan,
            "pred": _num(pred_ms, "offload.predicted_tpot_ms", path, i) if pred_ms is not None else math.nan,
            "file": path,
        })
    for p in points:
        p["eb"] = _gbps(p["step_bytes"], p["tpot"])
        p["eb_lo"] = _gbps(p["step_bytes"], p["tpot_max"])
        p["eb_hi"] = _gbps(p["step_bytes"], p["tpot_min"])
        p["ideal"] = _gbps(p["step_bytes"], p["floor"])
        p["planner"] = _gbps(p["step_bytes"], p["pred"])
        p["over_floor"] = p["tpot"] / p["floor"] if p["floor"] > 0 else math.nan
        p["over_pred"] = p["tpot"] / p["pred"] if p["pred"] > 0 else math.nan
    return header, points


def group(points):
    """Points keyed by (model, device, batch, prompt, gen, mode), each list sorted by x."""
    groups = OrderedDict()
    for p in points:
        key = (p["model"], p["device"], p["batch"], p["prompt_len"], p["gen_len"], p["mode"])
        groups.setdefault(key, []).append(p)
    for pts in groups.values():
        pts.sort(key=lambda p: (p["x"], p["tpot"]))
    return groups


def label(key, show_device):
    model, device, batch, prompt, gen, mode = key
    s = f"{model} b{batch}"
    if prompt is not None and gen is not None:
        s += f" p{prompt} g{gen}"
    s += f" {mode}"
    return s + (f" ({device})" if show_device else "")


def fmt_ratio(r):
    return "-" if r is None else f"{r:g}"


def print_table(groups, show_device, out):
    for key, pts in groups.items():
        print(label(key, show_device), file=out)
        print("  ratio  host %   TPOT ms [min, max]            EB GB/s  ideal GB/s  planner GB/s  TPOT/floor",
              file=out)
        for p in pts:
            tpot = f"{p['tpot']:.3f} [{p['tpot_min']:.3f}, {p['tpot_max']:.3f}]"
            kept = not p["planned"] and isinstance(p["ratio"], (int, float)) and p["ratio"] > 0
            note = "  (no plan: all in HBM)" if kept else ""
            print(f"  {fmt_ratio(p['ratio']):>5} {p['x']:7.2f}   {tpot:<29} {p['eb']:8.1f} {p['ideal']:11.1f} "
                  f"{p['planner']:13.1f} {p['over_floor']:11.3f}{note}", file=out)


def print_csv(groups):
    print("file,model,device,batch,prompt_len,gen_len,mode,ratio,planned,host_ratio_pct,tpot_ms,tpot_min_ms,"
          "tpot_max_ms,floor_ms,predicted_tpot_ms,step_bytes,eb_gb_s,ideal_gb_s,planner_gb_s,tpot_over_floor,"
          "tpot_over_predicted")
    for pts in groups.values():
        for p in pts:
            cells = [p["file"], p["model"], p["device"], p["batch"], p["prompt_len"], p["gen_len"], p["mode"],
                     "" if p["ratio"] is None else f"{p['ratio']:g}", int(p["planned"]), f"{p['x']:.4f}",
                     f"{p['tpot']:.4f}", f"{p['tpot_min']:.4f}", f"{p['tpot_max']:.4f}", f"{p['floor']:.4f}",
                     f"{p['pred']:.4f}", f"{p['step_bytes']:.0f}", f"{p['eb']:.2f}", f"{p['ideal']:.2f}",
                     f"{p['planner']:.2f}", f"{p['over_floor']:.4f}", f"{p['over_pred']:.4f}"]
            print(",".join('"' + str(c).replace('"', '""') + '"' if "," in str(c) or '"' in str(c) else str(c)
                           for c in cells))


def joined(values):
    seen = list(OrderedDict.fromkeys(str(v) for v in values))
    return ", ".join(seen)


def plot(groups, headers, output, show_device, plt):
    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    drawn = []  # legend labels in drawing order
    for n, (key, pts) in enumerate(groups.items()):
        c = colors[n % len(colors)]
        name = label(key, show_device)
        xs = [p["x"] for p in pts]
        ebs = [p["eb"] for p in pts]
        yerr = [[max(0.0, p["eb"] - p["eb_lo"]) for p in pts], [max(0.0, p["eb_hi"] - p["eb"]) for p in pts]]
        drawn += [f"{name}: measured", f"{name}: ideal (bytes / floor)", f"{name}: planner (bytes / predicted)"]
        ax.errorbar(xs, ebs, yerr=yerr, fmt="o-", color=c, capsize=3, lw=1.5, ms=5, label=f"{name}: measured")
        ideal = [(p["x"], p["ideal"]) for p in pts if math.isfinite(p["ideal"])]
        if ideal:
            ax.plot(*zip(*ideal), "x--", color=c, lw=1, ms=6, label=f"{name}: ideal (bytes / floor)")
        planner = [(p["x"], p["planner"]) for p in pts if math.isfinite(p["planner"])]
        if planner:
            ax.plot(*zip(*planner), "s:", color=c, lw=1, ms=4, mfc="none", alpha=0.8,
                    label=f"{name}: planner (bytes / predicted)")
    # The two tiers' bandwidths bound every EB: B_g at 0 % host, B_h at 100 %.
    for b_g in OrderedDict.fromkeys(h["b_g_gbps"] for h in headers if h["b_g_gbps"]):
        ax.axhline(b_g, color="grey", lw=0.7, ls="-.", label=f"B_g {b_g / 1e3:.3f} TB/s")
    for b_h in OrderedDict.fromkeys(h["b_h_gbps"] for h in headers if h["b_h_gbps"]):
        ax.axhline(b_h, color="grey", lw=0.7, ls=(0, (1, 3)), label=f"B_h {b_h:.2f} GB/s")
    ax.set_yscale("log")
    ax.set_xlim(left=-2)
    ax.set_xlabel("host fraction achieved (offload.host_ratio, %)")
    ax.set_ylabel("EB = step bytes / TPOT (GB/s)")
    models = joined(k[0] for k in groups)
    batches = joined(sorted({k[2] for k in groups}))
    devices = joined(k[1] for k in groups)
    ax.set_title(f"dak bench: EB vs offload ratio\n{models}, batch {batches}, {devices}", fontsize=10)
    ax.grid(True, which="both", lw=0.3)
    # Errorbar containers come last in matplotlib's default order; keep the order of drawing.
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: drawn.index(labels[i]) if labels[i] in drawn else len(drawn))
    ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+", metavar="FILE.json", help="JSON written by `dak bench --json FILE`")
    ap.add_argument("-o", "--output", default="offload.png", help="PNG to write (default: offload.png)")
    ap.add_argument("--csv", action="store_true",
                    help="also print the points as CSV to stdout (the text table then goes to stderr)")
    args = ap.parse_args()
    info = sys.stderr if args.csv else sys.stdout

    headers, points = [], []
    try:
        for path in args.json:
            h, pts = load(path)
            if not pts:
                print(f"plot_offload: {path}: no results (empty \"results\" list); skipped", file=sys.stderr)
                continue
            headers.append(h)
            points.extend(pts)
    except InputError as e:
        print(f"plot_offload: error: {e}", file=sys.stderr)
        return 1
    if not points:
        print("plot_offload: error: no results in " + ", ".join(args.json) + "; nothing to plot", file=sys.stderr)
        return 1
    if not any(p["planned"] for p in points):
        print("plot_offload: note: no offload points (no result has host bytes: run `dak bench` with "
              "--offload-ratio 0,0.1,... for a sweep); plotting the all-HBM points at 0 %", file=sys.stderr)

    groups = group(points)
    show_device = len({k[1] for k in groups}) > 1
    print_table(groups, show_device, info)
    if args.csv:
        print_csv(groups)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_offload: error: matplotlib is not installed, no plot written: pip install matplotlib",
              file=sys.stderr)
        return 1
    try:
        plot(groups, headers, args.output, show_device, plt)
    except OSError as e:
        print(f"plot_offload: error: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"wrote {args.output}", file=info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
