#!/usr/bin/env python3
"""Group a flat `perf report --sort dso,sym` listing into components and list the top symbols.

usage: group.py SYMBOLS_FILE [TOP]
A sample is charged to the function it landed in (after inlining), so "mcp_runtime" holds
whatever the compiler inlined into the runtime's own functions.
"""
import re
import sys

GROUPS = [
    ("kernel (TCP loopback, epoll, scheduler)", lambda dso, sym: dso.startswith("[kernel")),
    ("malloc/free (glibc)", lambda dso, sym: dso.startswith("libc") and re.search(
        r"malloc|free|_int_|realloc|calloc|consolidate|unlink_chunk|tcache", sym)),
    ("memcpy/memmove/memset", lambda dso, sym: re.search(r"mem(cpy|move|set|cmp)|bcmp", sym)),
    ("other libc/vdso", lambda dso, sym: dso.startswith(("libc", "[vdso]", "ld-linux", "libgcc"))),
    ("sha2 (SHA-256)", lambda dso, sym: "sha2::" in sym or "sha256" in sym.lower()),
    ("serde_json / serde", lambda dso, sym: sym.startswith(("serde_json::", "serde::", "<serde", "ryu::", "itoa::"))
        or "serde_json" in sym),
    ("hyper / http / httparse", lambda dso, sym: re.search(r"\bhyper::|\bhttp::|httparse|h1::", sym)),
    ("tokio / mio", lambda dso, sym: re.search(r"\btokio::|\bmio::", sym)),
    ("axum / tower", lambda dso, sym: re.search(r"\baxum::|\btower|matchit", sym)),
    ("tracing", lambda dso, sym: re.search(r"\btracing", sym)),
    ("base64", lambda dso, sym: "base64" in sym),
    ("mcp_types", lambda dso, sym: "mcp_types" in sym),
    ("mcp_runtime", lambda dso, sym: "mcp_runtime" in sym),
    ("bench tool (mcp_bench) / bare_axum", lambda dso, sym: re.search(r"mcp_bench|bench_server|bare_axum", sym)),
    ("alloc / core / std", lambda dso, sym: re.search(r"\b(alloc|core|std)::|<alloc|<core|<std", sym)),
]

LINE = re.compile(r"^\s*([0-9.]+)%\s+(\S+)\s+\[(.)\]\s+(.*)$")


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    rows = []
    for line in open(path, encoding="utf-8", errors="replace"):
        m = LINE.match(line)
        if m:
            rows.append((float(m.group(1)), m.group(2), m.group(4).strip()))
    totals = {}
    for pct, dso, sym in rows:
        name = next((g for g, test in GROUPS if test(dso, sym)), "other")
        totals[name] = totals.get(name, 0.0) + pct
    for name, pct in sorted(totals.items(), key=lambda kv: -kv[1]):
        print(f"  {pct:6.2f}%  {name}")
    print(f"  top {top} symbols:")
    for pct, dso, sym in rows[:top]:
        print(f"    {pct:6.2f}%  {sym[:110]}")


if __name__ == "__main__":
    main()
