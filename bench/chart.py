#!/usr/bin/env python3
"""Draws bench/http.sh's results as an SVG bar chart (Python standard library only).

usage: bench/chart.py RESULTS.tsv [OUT.svg]     (default OUT: RESULTS with .svg)
env:   CHART_NOTE="..."  a line under the legend saying how the run was made (bench/http.sh sets
       it for PGO=1)

RESULTS.tsv is what bench/http.sh writes: a header line, then one row per server, case and
concurrency:  server  case  conc  rps  p99_ms  cpu_us  non2xx  sockerr  sys_us  p50_ms  rss_mb
(files from before p50_ms and rss_mb were added still draw, without those panels).
Per concurrency, four panels: requests per second (higher is better), server CPU per request,
p50 and p99 latency (lower is better); in each panel one group of bars per case, one bar per
server (ours, rmcp, the TypeScript and Python SDKs, the bare-axum floor on echo and the same
floor on each other case's own bytes, where they ran). A panel whose values span more than 30x
is drawn on a log scale (said in its title), so the fastest servers stay readable next to the
slowest. Last, each server's peak RSS.
"""

import csv
import math
import os
import sys
from html import escape

ORDER = ("ours", "rmcp", "ts", "py", "floor", "bytes")
COLORS = {"ours": "#2b6cb0", "rmcp": "#dd6b20", "ts": "#2f855a", "py": "#b7791f", "floor": "#8a8a8a",
          "bytes": "#c4c4c4"}
LABELS = {"ours": "ours (mcp-runtime)", "rmcp": "rmcp 3.11 (Rust SDK)", "ts": "TypeScript SDK (Node)",
          "py": "Python SDK (uvicorn)", "floor": "floor: bare axum", "bytes": "floor on the case's bytes"}
PANEL_W, PANEL_H, GAP, ROW_GAP = 470, 170, 70, 62
LEFT, TOP = 60, 70
LOG_SPAN = 30.0


def compact(value, unit):
    if unit == "rps":
        return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"
    if unit == "MB":
        return f"{value:.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def nice_max(value):
    """A round axis maximum at or above value."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def panel(out, x0, y0, title, unit, groups, servers, values):
    """One bar panel: values[(server, group)] -> number; linear, or log when it spans > LOG_SPAN."""
    positive = [v for v in values.values() if v > 0]
    log = bool(positive) and max(positive) / min(positive) > LOG_SPAN
    if log:
        lo = 10 ** math.floor(math.log10(min(positive)))
        hi = 10 ** math.ceil(math.log10(max(positive) * 1.05))
        decades = max(1, round(math.log10(hi / lo)))
        ticks = [lo * 10 ** i for i in range(decades + 1)]

        def height(v):
            return PANEL_H * max(0.0, math.log10(max(v, lo) / lo)) / decades
    else:
        top = nice_max(max(positive + [0]) * 1.1)
        ticks = [top * i / 4 for i in range(5)]

        def height(v):
            return PANEL_H * v / top
    out.append(f'<text x="{x0}" y="{y0 - 8}" class="t">{escape(title)}{" (log scale)" if log else ""}</text>')
    for tick in ticks:
        y = y0 + PANEL_H - height(tick)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PANEL_W}" y2="{y:.1f}" class="g"/>')
        out.append(f'<text x="{x0 - 4}" y="{y + 3:.1f}" class="a" text-anchor="end">{compact(tick, unit)}</text>')
    group_w = PANEL_W / max(len(groups), 1)
    bar_w = min(28.0, (group_w - 10) / max(len(servers), 1))
    for gi, group in enumerate(groups):
        present = [s for s in servers if (s, group) in values]
        gx = x0 + gi * group_w + (group_w - bar_w * len(present)) / 2
        for si, server in enumerate(present):
            value = values[(server, group)]
            h = height(value)
            x, y = gx + si * bar_w, y0 + PANEL_H - h
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                       f'fill="{COLORS.get(server, "#444")}"><title>{escape(LABELS.get(server, server))} '
                       f'{escape(group)}: {value:g}</title></rect>')
            out.append(f'<text x="{x + (bar_w - 2) / 2:.1f}" y="{y - 3:.1f}" class="v" '
                       f'text-anchor="middle">{compact(value, unit)}</text>')
        out.append(f'<text x="{x0 + gi * group_w + group_w / 2:.1f}" y="{y0 + PANEL_H + 14}" '
                   f'class="a" text-anchor="middle">{escape(group)}</text>')


def number(row, key):
    try:
        return float(row[key])
    except (KeyError, TypeError, ValueError):
        return None


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
    seen = list(dict.fromkeys(r["server"] for r in rows))
    servers = [s for s in ORDER if s in seen] + [s for s in seen if s not in ORDER]
    metrics = [("rps", "requests/s", "rps"), ("cpu_us", "server CPU per request (us)", "us"),
               ("p50_ms", "p50 latency (ms)", "ms"), ("p99_ms", "p99 latency (ms)", "ms")]
    metrics = [m for m in metrics if any(number(r, m[0]) is not None for r in rows)]
    rss = {(r["server"], "peak RSS"): number(r, "rss_mb") for r in rows if number(r, "rss_mb") is not None}
    per_row = 2
    panel_rows = math.ceil(len(metrics) / per_row)
    width = LEFT + per_row * PANEL_W + (per_row - 1) * GAP + 20
    height = TOP + (len(concs) * panel_rows + (1 if rss else 0)) * (PANEL_H + ROW_GAP) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif">',
           '<style>.t{font-size:13px;font-weight:bold}.a{font-size:10px;fill:#333}'
           '.v{font-size:8px;fill:#222}.g{stroke:#ddd;stroke-width:1}</style>',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="22" class="t">bench/http.sh, one run: req/s (higher is better); '
           f'CPU per request, p50, p99 and peak RSS (lower is better)</text>']
    note = os.environ.get("CHART_NOTE")
    if note:
        # Between the legend (y 34-46) and the first panel's title (y 82).
        out.append(f'<text x="{LEFT}" y="64" class="a">{escape(note)}</text>')
    lx = LEFT
    for s in servers:
        label = LABELS.get(s, s)
        out.append(f'<rect x="{lx}" y="34" width="12" height="12" fill="{COLORS.get(s, "#444")}"/>')
        out.append(f'<text x="{lx + 16}" y="44" class="a">{escape(label)}</text>')
        lx += 30 + 6 * len(label)
    row = 0
    for conc in concs:
        at = [r for r in rows if int(r["conc"]) == conc]
        for mi, (key, title, unit) in enumerate(metrics):
            values = {(r["server"], r["case"]): number(r, key) for r in at if number(r, key) is not None}
            x0 = LEFT + (mi % per_row) * (PANEL_W + GAP)
            y0 = TOP + 20 + (row + mi // per_row) * (PANEL_H + ROW_GAP)
            panel(out, x0, y0, f"c={conc}: {title}", unit, cases, servers, values)
        row += panel_rows
    if rss:
        y0 = TOP + 20 + row * (PANEL_H + ROW_GAP)
        panel(out, LEFT, y0, "peak RSS over the whole run (MB)", "MB", ["peak RSS"], servers, rss)
    out.append("</svg>")
    with open(target, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"chart written to {target}", file=sys.stderr)


if __name__ == "__main__":
    main()
