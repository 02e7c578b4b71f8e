#!/usr/bin/python3
"""Draws fabricsim's JSON outputs as PNG and SVG (Debian's python3-matplotlib).

    fabricsim_plot.py scale     SCALE.json|SCALE.jsonl  -o PREFIX   scaling efficiency per system
    fabricsim_plot.py breakdown RUN.json                -o PREFIX   step time by component, per stage
    fabricsim_plot.py plan      PLAN.json               -o PREFIX   plan search: throughput vs memory
    fabricsim_plot.py compare   COMPARE.json            -o PREFIX   what-ifs against the baseline
    fabricsim_plot.py sweep     DIR|results.jsonl       -o PREFIX   heatmap of a metric over two axes
                      [--x POINTER] [--y POINTER] [--metric KEY]
    fabricsim_plot.py links     LINKS.json              -o PREFIX   link utilisation over time
                                                                    (run --link-trace)
    fabricsim_plot.py validate  VALIDATE.json           -o PREFIX   throughput per GPU along each
                                                                    series of runs, predicted
                                                                    against measured

Each writes PREFIX.png and PREFIX.svg. The inputs are the --json (or scale --jsonl) outputs of the
fabricsim commands of the same names (docs/formats.md). Exits 77 when matplotlib is missing.
"""
import argparse
import json
import math
import os
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import patheffects
except ImportError:  # the ctest skips on 77
    print("fabricsim_plot: python3-matplotlib is not installed", file=sys.stderr)
    sys.exit(77)

COMPONENTS = [("compute_s", "compute"), ("exposed_tp_s", "TP"), ("exposed_cp_s", "CP"),
              ("exposed_ep_s", "EP"), ("exposed_pp_s", "PP"), ("bubble_s", "bubble"),
              ("exposed_dp_s", "DP"), ("optimizer_s", "optimizer")]


def load(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".jsonl"):
        return {"rows": [json.loads(line) for line in text.splitlines() if line.strip()]}
    return json.loads(text)


def save(fig, prefix):
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(f"{prefix}.{ext}", dpi=120)
    plt.close(fig)


def plot_scale(doc, prefix):
    rows = [r for r in doc["rows"] if r.get("feasible")]
    modes = sorted({r["mode"] for r in rows})
    fig, axes = plt.subplots(1, len(modes), figsize=(6 * len(modes), 4), squeeze=False)
    for ax, mode in zip(axes[0], modes):
        for system in dict.fromkeys(r["system"] for r in rows):
            pts = [(r["gpus"], 100 * r["scaling_efficiency"]) for r in rows
                   if r["system"] == system and r["mode"] == mode]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=system)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("GPUs")
        ax.set_ylabel("scaling efficiency (%)")
        ax.set_title(f"{mode} scaling")
        ax.axhline(90, color="grey", lw=0.5, ls="--")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, prefix)


def plot_breakdown(doc, prefix):
    stages = doc.get("stages") or [doc["breakdown"]]
    fig, ax = plt.subplots(figsize=(max(5, 0.6 * len(stages) + 3), 4))
    bottom = [0.0] * len(stages)
    x = list(range(len(stages)))
    for key, name in COMPONENTS:
        values = [s.get(key, 0.0) for s in stages]
        if any(v > 0 for v in values):
            ax.bar(x, values, bottom=bottom, label=name)
            bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(x, [f"stage {i}" for i in x], rotation=45 if len(x) > 8 else 0)
    ax.set_ylabel("seconds of the step")
    ax.set_title(f"step {doc['step_time_s']:.3f} s, MFU {100 * doc['mfu']:.1f}%")
    ax.legend(fontsize=8)
    save(fig, prefix)


def plot_plan(doc, prefix):
    ranked = doc["analytical_ranking"]
    fig, (ax, bars) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    ax.scatter([r["memory_GiB"] for r in ranked], [r["tokens_per_s_per_gpu"] for r in ranked],
               s=10, alpha=0.5, label=f"simulated ({len(ranked)})")
    best = doc["plans"]
    if best:
        ax.scatter([p["memory_GiB"] for p in best], [p["tokens_per_s_per_gpu"] for p in best],
                   s=40, color="red", label=f"top {len(best)} (flow)")
        ax.axvline(best[0]["capacity_GiB"], color="grey", ls="--", lw=0.8, label="HBM")
    ax.set_xlabel("memory per GPU (GiB)")
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title("feasible plans")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    rejected = doc["rejected"]
    names = sorted(rejected, key=rejected.get)
    bars.barh([n.replace("_", " ") for n in names], [rejected[n] for n in names], color="grey")
    bars.set_xlabel("plans rejected")
    bars.set_title(f"rejected ({sum(rejected.values())})")
    bars.tick_params(axis="y", labelsize=7)
    save(fig, prefix)


def plot_compare(doc, prefix):
    rows = [r for r in doc["rows"] if "throughput_change" in r]
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(rows) + 2), 4))
    x = list(range(len(rows)))
    values = [r["run"]["tokens_per_s_per_gpu"] for r in rows]
    colors = ["grey"] + ["tab:blue" if r["throughput_change"] >= 0 else "tab:red"
                         for r in rows[1:]]
    ax.bar(x, values, color=colors)
    for i, r in enumerate(rows):
        ax.annotate(f"{100 * r['throughput_change']:+.1f}%", (i, values[i]), ha="center",
                    va="bottom", fontsize=8)
    ax.set_xticks(x, [r["label"] for r in rows], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("tokens/s per GPU")
    ax.set_title(f"against {doc['baseline']}")
    save(fig, prefix)


def load_sweep(path):
    """The rows of a sweep's results.jsonl and its axes in spec order (from sweep.json beside it,
    else the order of the first row's assignments)."""
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    results = os.path.join(path, "results.jsonl") if os.path.isdir(path) else path
    with open(results, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    if not rows:
        raise ValueError("no rows")
    axes = list(rows[0]["assignments"])
    spec = os.path.join(folder, "sweep.json")
    if os.path.isfile(spec):
        with open(spec, encoding="utf-8") as f:
            axes = list(json.load(f)["sweep"]["axes"])
    return rows, axes


def label(value):
    return value if isinstance(value, str) else json.dumps(value)


def plot_sweep(doc, prefix, x=None, y=None, metric="tokens_per_s_per_gpu"):
    rows, axes = doc
    varied = [a for a in axes if len({json.dumps(r["assignments"][a]) for r in rows}) > 1]
    picked = [a for a in (x, y) if a]
    for a in picked:
        if a not in axes:
            raise ValueError(f"no axis {a} (axes: {', '.join(axes)})")
    rest = [a for a in varied + axes if a not in picked]
    picked += rest[:2 - len(picked)]
    if len(picked) < 2:
        raise ValueError("a heatmap needs two axes")
    x, y = picked
    others = [a for a in varied if a not in (x, y)]
    # Lower is better for times, higher for everything else; a cell over other axes keeps the best.
    lower = metric.endswith("_s") or metric.endswith("_days")
    xs = list(dict.fromkeys(json.dumps(r["assignments"][x]) for r in rows))
    ys = list(dict.fromkeys(json.dumps(r["assignments"][y]) for r in rows))
    cells = {}
    for r in rows:
        if not r.get("feasible") or metric not in r.get("metrics", {}):
            continue
        key = (json.dumps(r["assignments"][x]), json.dumps(r["assignments"][y]))
        v = r["metrics"][metric]
        if key not in cells or (v < cells[key] if lower else v > cells[key]):
            cells[key] = v
    grid = [[cells.get((cx, cy), math.nan) for cx in xs] for cy in ys]
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(xs) + 3), max(3.5, 0.5 * len(ys) + 2)))
    image = ax.imshow(grid, cmap="viridis_r" if lower else "viridis", aspect="auto", origin="lower")
    for j, cy in enumerate(ys):
        for i, cx in enumerate(xs):
            v = cells.get((cx, cy))
            text = ax.annotate("infeasible" if v is None else (f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"), (i, j), ha="center",
                               va="center", fontsize=7, color="black")
            # Readable on the dark and the light end of the colour map alike.
            text.set_path_effects([patheffects.withStroke(linewidth=2, foreground="white")])
    ax.set_xticks(range(len(xs)), [label(json.loads(v)) for v in xs], rotation=30, ha="right")
    ax.set_yticks(range(len(ys)), [label(json.loads(v)) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    fig.colorbar(image, ax=ax, label=metric)
    title = metric + (f" (best over {', '.join(others)})" if others else "")
    ax.set_title(title, fontsize=9)
    save(fig, prefix)


def plot_links(doc, prefix):
    if doc.get("format") != "fabricsim-link-trace-1":
        raise ValueError("no fabricsim-link-trace-1 format")
    fig, ax = plt.subplots(figsize=(9, 4))
    width = doc["bucket_s"]
    for link in doc["links"]:
        u = link["utilization"]
        ax.step([width * i for i in range(len(u) + 1)], [100 * v for v in u] + [100 * u[-1]],
                where="post", lw=1, label=f"{link['link']} ({link['usable_GBps']:.0f} GB/s)")
    ax.set_xlim(0, doc["step_time_s"])
    ax.set_ylim(0, 105)
    ax.set_xlabel("time in the step (s)")
    ax.set_ylabel("utilisation (% of usable)")
    ax.set_title(f"busiest links, {doc['buckets']} buckets of {1e3 * width:.3g} ms")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")
    save(fig, prefix)


def plot_validate(doc, prefix):
    points = [p for p in doc["scaling"] if p["measured_efficiency"] is not None]
    if not points:
        raise ValueError("no scaling points with efficiencies")
    series = list(dict.fromkeys(p["series"] for p in points))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for s in series:
        pts = sorted((p for p in points if p["series"] == s), key=lambda p: p["gpus"])
        parts = s.split(" | ")
        name = f"{parts[4] if len(parts) > 4 else s} from {pts[0]['baseline_gpus']}"
        left.scatter([p["measured_efficiency"] for p in pts],
                     [p["predicted_efficiency"] for p in pts], s=18, label=name)
        right.plot([p["gpus"] for p in pts], [100 * p["error"] for p in pts], marker="o", ms=3,
                   label=name)
    lo = min(min(p["measured_efficiency"], p["predicted_efficiency"]) for p in points) - 0.02
    hi = max(max(p["measured_efficiency"], p["predicted_efficiency"]) for p in points) + 0.02
    left.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    left.fill_between([lo, hi], [lo * 0.95, hi * 0.95], [lo * 1.05, hi * 1.05], color="grey",
                      alpha=0.15, lw=0)
    left.set_xlim(lo, hi)
    left.set_ylim(lo, hi)
    left.set_xlabel("measured throughput per GPU / the series' fewest-GPU run")
    left.set_ylabel("predicted")
    left.set_title("along each series (band: within 5%)")
    right.axhline(0, color="black", lw=0.8)
    right.set_xscale("log", base=2)
    right.set_xlabel("GPUs")
    right.set_ylabel("error of the predicted change (%), > 0 optimistic")
    summary = doc.get("summary", {}).get("scaling", {})
    if summary:
        right.set_title(f"{summary['points']} points, median |error| "
                        f"{100 * summary['median_abs_error']:.1f}%, "
                        f"p90 {100 * summary['p90_abs_error']:.1f}%")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    right.legend(fontsize=7, ncol=2)
    save(fig, prefix)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["scale", "breakdown", "plan", "compare", "sweep", "links",
                                         "validate"])
    parser.add_argument("input", help="fabricsim --json (or scale --jsonl) output")
    parser.add_argument("-o", "--output", required=True, help="output prefix (.png and .svg)")
    parser.add_argument("--x", help="sweep: the axis (JSON pointer) across (default: the first)")
    parser.add_argument("--y", help="sweep: the axis up (default: the next)")
    parser.add_argument("--metric", default="tokens_per_s_per_gpu",
                        help="sweep: the metrics key coloured (default tokens_per_s_per_gpu)")
    args = parser.parse_args()
    plotters = {"scale": plot_scale, "breakdown": plot_breakdown, "plan": plot_plan,
                "compare": plot_compare, "links": plot_links, "validate": plot_validate}
    try:
        if args.kind == "sweep":
            plot_sweep(load_sweep(args.input), args.output, args.x, args.y, args.metric)
        else:
            plotters[args.kind](load(args.input), args.output)
    except OSError as e:
        print(f"fabricsim_plot: {e}", file=sys.stderr)
        sys.exit(2)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        print(f"fabricsim_plot: {args.input}: not a fabricsim {args.kind} output ({e})",
              file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
