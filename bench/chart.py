#!/usr/bin/env python3
"""Draws bench/http.sh's results as an SVG bar chart (Python standard library only).

usage: bench/chart.py RESULTS.tsv [OUT.svg]     (default OUT: RESULTS with .svg)

RESULTS.tsv is what bench/http.sh writes: a header line, then one row per server, case and
concurrency:  server  case  conc  rps  p99_ms  cpu_us  non2xx  sockerr
One row of panels per concurrency: requests per second (higher is better) on the left, p99
latency (lower is better) on the right; in each panel one group of bars per case, one bar per
server (ours, rmcp, and the bare-axum floor where it ran).
"""

import csv
import math
import sys
from html import escape

COLORS = {"ours": "#2b6cb0", "rmcp": "#dd6b20", "floor": "#8a8a8a"}
LABELS = {"ours": "ours (mcp-runtime)", "rmcp": "rmcp 3.11", "floor": "floor: bare axum"}
PANEL_W, PANEL_H, GAP = 430, 190, 50
LEFT, TOP = 60, 70


def compact(value, unit):
    if unit == "rps":
        return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def nice_max(value):
    """A round axis maximum at or above value."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def panel(out, x0, y0, title, unit, cases, servers, values):
    top = nice_max(max([v for v in values.values()] + [0]) * 1.1)
    out.append(f'<text x="{x0}" y="{y0 - 8}" class="t">{escape(title)}</text>')
    for i in range(5):
        y = y0 + PANEL_H - PANEL_H * i / 4
        tick = top * i / 4
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" class="g"/>')
        out.append(f'<text x="{x0 - 4}" y="{y + 3:.1f}" class="a" text-anchor="end">'
                   f'{compact(tick, unit)}</text>')
    group_w = PANEL_W / max(len(cases), 1)
    bar_w = min(28.0, (group_w - 14) / max(len(servers), 1))
    for ci, case in enumerate(cases):
        present = [s for s in servers if (s, case) in values]
        gx = x0 + ci * group_w + (group_w - bar_w * len(present)) / 2
        for si, server in enumerate(present):
            value = values[(server, case)]
            h = PANEL_H * value / top
            x, y = gx + si * bar_w, y0 + PANEL_H - h
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                       f'fill="{COLORS.get(server, "#444")}"><title>{escape(server)} {escape(case)}: '
                       f'{value:g}</title></rect>')
            out.append(f'<text x="{x + (bar_w - 2) / 2:.1f}" y="{y - 3:.1f}" class="v" '
                       f'text-anchor="middle">{compact(value, unit)}</text>')
        out.append(f'<text x="{x0 + ci * group_w + group_w / 2:.1f}" y="{y0 + PANEL_H + 14}" '
                   f'class="a" text-anchor="middle">{escape(case)}</text>')


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    source = sys.argv[1]
    target = sys.argv[2] if len(sys.argv) == 3 else source.rsplit(".", 1)[0] + ".svg"
    with open(source, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows:
        sys.exit(f"{source}: no results")
    concs = sorted({int(r["conc"]) for r in rows})
    cases = list(dict.fromkeys(r["case"] for r in rows))
    servers = [s for s in ("ours", "rmcp", "floor") if any(r["server"] == s for r in rows)]
    width = LEFT + 2 * PANEL_W + GAP + 20
    height = TOP + len(concs) * (PANEL_H + 60) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           '<style>.t{font-size:13px;font-weight:bold}.a{font-size:10px;fill:#333}'
           '.v{font-size:9px;fill:#222}.g{stroke:#ddd;stroke-width:1}</style>',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="22" class="t">bench/http.sh: req/s (higher is better) and '
           f'p99 latency (lower is better), same run</text>']
    lx = LEFT
    for s in servers:
        out.append(f'<rect x="{lx}" y="34" width="12" height="12" fill="{COLORS[s]}"/>')
        out.append(f'<text x="{lx + 16}" y="44" class="a">{escape(LABELS[s])}</text>')
        lx += 30 + 7 * len(LABELS[s])
    for ri, conc in enumerate(concs):
        y0 = TOP + 20 + ri * (PANEL_H + 60)
        at = [r for r in rows if int(r["conc"]) == conc]
        rps = {(r["server"], r["case"]): float(r["rps"]) for r in at}
        p99 = {(r["server"], r["case"]): float(r["p99_ms"]) for r in at}
        panel(out, LEFT, y0, f"c={conc}: requests/s", "rps", cases, servers, rps)
        panel(out, LEFT + PANEL_W + GAP, y0, f"c={conc}: p99 latency (ms)", "ms", cases,
              servers, p99)
    out.append("</svg>")
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"chart written to {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
