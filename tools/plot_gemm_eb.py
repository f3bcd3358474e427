#!/usr/bin/env python3
"""Plot EB(x) of `dak bench gemm` from its CSV: one panel per (model, method, op, N), the measured
effective bandwidth of the tiered GEMM, the ideal C / max((1-x) C / B_g, x C / B_h, T_comp) of the same
run, the prefetch baseline and cuBLAS at x = 0, against the offload ratio x (symlog axis: x = 0 shows).

    dak bench gemm --csv gemm.csv
    tools/plot_gemm_eb.py gemm.csv [-o gemm_eb.png]

Needs matplotlib; without it the script says so, prints the table it would plot, and exits 0.
"""
import argparse
import csv
import math
import sys
from collections import OrderedDict


def load(path):
    groups = OrderedDict()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["model"], r["method"], r["op"], int(r["N"]))
            bytes_ = float(r["bytes"])
            groups.setdefault(key, []).append({
                "x": float(r["x_pct"]),
                "eb": float(r["eb_gbps"]),
                "ideal": float(r["ideal_gbps"]),
                "prefetch": bytes_ / (float(r["prefetch_us"]) * 1e-6) * 1e-9 if float(r["prefetch_us"]) > 0 else 0.0,
                "cublas": bytes_ / (float(r["cublas_us"]) * 1e-6) * 1e-9 if float(r["cublas_us"]) > 0 else 0.0,
                "ratio": float(r["ratio"]),
                "bytes": bytes_,
                "t_comp": float(r["t_comp_us"]) * 1e-6 if r["compute_counted"] == "1" else 0.0,
                "bg": float(r["b_g_gbps"]),
                "bh": float(r["b_h_gbps"]),
            })
    for pts in groups.values():
        pts.sort(key=lambda p: p["x"])
    return groups


def ideal_gbps(x_pct, p, bg, bh):
    """C / max((1 - x) C / B_g, x C / B_h, T_comp) in GB/s, C and T_comp of the row `p`."""
    x = x_pct / 100
    c = p["bytes"]
    t = max((1 - x) * c / (bg * 1e9), x * c / (bh * 1e9), p["t_comp"])
    return c / t * 1e-9


def title(key):
    model, method, op, n = key
    return f"{model} {op} ({method}), N={n}"


def print_table(groups):
    for key, pts in groups.items():
        print(title(key))
        print("  x %      EB GB/s   ideal GB/s  ratio  prefetch GB/s")
        for p in pts:
            print(f"  {p['x']:<7g} {p['eb']:9.1f} {p['ideal']:11.1f} {p['ratio']:6.3f} {p['prefetch']:13.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="CSV written by dak bench gemm --csv")
    ap.add_argument("-o", "--output", default="gemm_eb.png", help="PNG to write (default: gemm_eb.png)")
    args = ap.parse_args()
    groups = load(args.csv)
    if not groups:
        print(f"{args.csv}: no rows", file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot written (pip install matplotlib); the data:")
        print_table(groups)
        return 0

    cols = min(3, len(groups))
    rows = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax, (key, pts) in zip(axes.flat, groups.items()):
        xs = [p["x"] for p in pts]
        bg, bh = pts[0]["bg"], pts[0]["bh"]
        curve = [100 * i / 400 for i in range(401)]
        ax.plot(curve, [ideal_gbps(x, pts[0], bg, bh) for x in curve], "k--", lw=1, label="ideal")
        ax.plot(xs, [p["ideal"] for p in pts], "kx", ms=5, label="ideal at the measured rows")
        ax.plot(xs, [p["eb"] for p in pts], "o-", color="tab:blue", label="tiered GEMM")
        ax.plot(xs, [p["prefetch"] for p in pts], "s:", color="tab:orange", label="prefetch (copy + GEMM)")
        ax.axhline(pts[0]["cublas"], color="tab:green", lw=0.8, label="cuBLAS, x = 0")
        ax.axvline(100 * bh / (bg + bh), color="grey", lw=0.6, ls=":", label="x* = B_h / (B_g + B_h)")
        ax.set_xscale("symlog", linthresh=0.5)
        ax.set_xlim(0, 110)
        ax.set_yscale("log")
        ax.set_xlabel("x: share of W in host memory (%)")
        ax.set_ylabel("EB (GB/s)")
        ax.set_title(title(key), fontsize=9)
        ax.grid(True, which="both", lw=0.3)
    for ax in list(axes.flat)[len(groups):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=8)
    first = next(iter(groups.values()))[0]
    fig.suptitle(f"dak bench gemm: EB vs offload ratio (B_g {first['bg']:.0f} GB/s, B_h {first['bh']:.1f} GB/s)")
    fig.tight_layout(rect=(0, 0.04, 1, 0.97))
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
