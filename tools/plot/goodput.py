#!/usr/bin/env python3
"""Draws goodput vs GPU count, manual vs automated recovery, as an SVG (no dependencies).

Runs `fabricsim goodput --scale-gpus ... --json` on Llama 3 405B (TP8 PP16) on DGX H100 for 30
days and writes docs/img/goodput.svg:

    python3 tools/plot/goodput.py [--fabricsim build/tools/fabricsim/fabricsim] [-o FILE]
"""
import argparse
import json
import math
import subprocess

GPUS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
ARGS = ["goodput", "--days", "30", "--model", "llama3-405b", "--system", "dgx-h100",
        "--gpus", "1024", "--tp", "8", "--pp", "16", "--cp", "1", "--global-batch", "1024",
        "--set", "/parallelism/balanced_pipeline=true", "--json",
        "--scale-gpus", ",".join(str(g) for g in GPUS)]

W, H = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 50, 60


def x_of(gpus):
    lo, hi = math.log2(GPUS[0]), math.log2(GPUS[-1])
    return LEFT + (math.log2(gpus) - lo) / (hi - lo) * (W - LEFT - RIGHT)


def y_of(fraction):
    return TOP + (1 - fraction) * (H - TOP - BOTTOM)


def series(rows, key, colour, label, dy):
    pts = " ".join(f"{x_of(r['gpus']):.1f},{y_of(r[key]):.1f}" for r in rows)
    out = [f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2.5"/>']
    for r in rows:
        out.append(f'<circle cx="{x_of(r["gpus"]):.1f}" cy="{y_of(r[key]):.1f}" r="3.5" '
                   f'fill="{colour}"/>')
    out.append(f'<text x="{LEFT + 15}" y="{H - BOTTOM - 40 + dy}" fill="{colour}" '
               f'font-size="13">{label}</text>')
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fabricsim", default="build/tools/fabricsim/fabricsim")
    parser.add_argument("-o", "--output", default="docs/img/goodput.svg")
    a = parser.parse_args()
    rows = json.loads(subprocess.run([a.fabricsim] + ARGS, check=True, capture_output=True,
                                     text=True).stdout)["rows"]
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="25" text-anchor="middle" font-size="15">Goodput of a 30-day '
           f'Llama 3 405B run vs GPU count (fabricsim goodput)</text>']
    for f in [0, 0.2, 0.4, 0.6, 0.8, 1.0]:
        y = y_of(f)
        svg.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" '
                   f'stroke="#ddd"/>')
        svg.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" '
                   f'font-size="12">{int(f * 100)}%</text>')
    for g in GPUS:
        x = x_of(g)
        svg.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{H - BOTTOM}" stroke="#eee"/>')
        label = f"{g // 1024}k"
        svg.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 18}" text-anchor="middle" '
                   f'font-size="12">{label}</text>')
    svg.append(f'<text x="{W / 2}" y="{H - 15}" text-anchor="middle" font-size="13">GPUs '
               f'(H100, Llama 3 failure rates)</text>')
    svg.append(f'<text x="18" y="{H / 2}" text-anchor="middle" font-size="13" '
               f'transform="rotate(-90 18 {H / 2})">goodput (useful / wall time)</text>')
    svg += series(rows, "goodput_automated", "#1f77b4", "automated recovery", 0)
    svg += series(rows, "goodput_manual", "#d62728", "manual recovery", 20)
    svg.append("</svg>")
    with open(a.output, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
