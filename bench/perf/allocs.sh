#!/usr/bin/env bash
# Allocations per request: how many, and each one of 1 KiB or more with the function that made
# it. A uprobe on glibc's malloc (perf probe, root only) while bench/callgrind/drive.py sends
# exactly N requests of one case. An allocation of 1 KiB or more misses glibc's per-thread
# cache and first consolidates its fast bins (malloc_consolidate in the time profile), so a
# request's large allocations cost far more than their count suggests.
#
# usage: bench/perf/allocs.sh CASE [BIN_DIR]
#        CASE: tools_list call_first call_retry echo, or floor (bare-axum on echo)
# env:   N=200 requests counted (after 200 uncounted), PORT=8798, BIG=1024 bytes
# Needs: perf with uprobes (root), python3, curl; the kit's request bodies.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CASE=${1:?usage: allocs.sh CASE [BIN_DIR]}
BIN_DIR=${2:-$TARGET/release}
N=${N:-200}; PORT=${PORT:-8798}; BIG=${BIG:-1024}
BODIES=${BODIES:-/work/shared/bench/perf-bodies}
DRIVE=$ROOT/bench/callgrind/drive.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; perf probe -q -d "probe_libc:mcpalloc" 2>/dev/null || true; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT

# shellcheck source-path=SCRIPTDIR source=case.sh
. "$HERE/case.sh"
server_bin "$CASE"
LIBC=$(ldd "$bin" | awk '/libc\.so/ {print $3}')
perf probe -q -d 'probe_libc:mcpalloc' 2>/dev/null || true
perf probe -q -x "$LIBC" -a 'mcpalloc=malloc size=%di:u64'

start_server "$bin"
case_args "$CASE"
python3 "$DRIVE" "$PORT" "${args[@]}" 200 2 >/dev/null

# count: every malloc with its size, no stacks (cheap); callers: the large ones, with stacks
record() { # record OUT [perf record options...] -- runs N requests under the probe
  local out=$1; shift
  perf record -q -m 1024 -e probe_libc:mcpalloc "$@" -p "$pid" -o "$out" &
  local rec=$!
  sleep 1
  python3 "$DRIVE" "$PORT" "${args[@]}" "$N" 2 >/dev/null
  sleep 0.5
  kill -INT "$rec"; wait "$rec" 2>/dev/null || true
}
record "$TMP/count.data"
record "$TMP/big.data" --filter "size >= $BIG" --call-graph dwarf,8192
perf script -i "$TMP/count.data" -F trace 2>/dev/null >"$TMP/count.txt"
perf script -i "$TMP/big.data" -F trace,ip,sym 2>/dev/null >"$TMP/big.txt"
python3 - "$TMP/count.txt" "$TMP/big.txt" "$N" "$BIG" <<'PY'
import collections, re, sys
count_path, big_path, n, big = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sizes = [int(m.group(1)) for m in map(lambda l: re.search(r'size=(\d+)', l), open(count_path)) if m]
large = [s for s in sizes if s >= big]
print(f"per request: {len(sizes)/n:.1f} allocations, {len(large)/n:.2f} of {big} bytes or more")
# Each large allocation's first caller outside the allocator and the standard library.
skip = re.compile(r'malloc|^alloc::|^<alloc::|__rust|^core::|^<core::|^std::|^<std::|raw_vec|box_new')
callers = collections.Counter()
size, stack = None, []
def flush():
    global size, stack
    if size is not None:
        caller = next((s for s in stack if not skip.search(s)), '?')
        callers[(size, caller[:110])] += 1
    size, stack = None, []
for line in open(big_path, errors='replace'):
    m = re.search(r'size=(\d+)', line)
    if m:
        flush(); size = int(m.group(1)); continue
    p = line.strip().split(None, 1)
    if len(p) == 2 and re.match(r'^[0-9a-f]+$', p[0]):
        stack.append(re.sub(r'\+0x[0-9a-f]+$', '', p[1]))
flush()
for (s, caller), k in sorted(callers.items(), key=lambda kv: -kv[1]):
    print(f"  {k/n:5.2f} x {s:6d} B  {caller}")
PY
