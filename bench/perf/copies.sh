#!/usr/bin/env bash
# Bytes copied per request, by the function that called memmove: a uprobe on glibc's memmove
# (perf probe, root only) while bench/callgrind/drive.py sends N requests of one case.
# Large copies on the request path are moves of big values (a future, a struct passed by
# value); the sampling profile (profile.sh) only shows them as memmove time.
#
# usage: bench/perf/copies.sh CASE [BIN_DIR]   CASE: tools_list call_first call_retry echo
# env:   N=100 requests counted (after 200 uncounted), TOP=15 callers listed, PORT=8797,
#        MEMMOVE=<glibc symbol to probe>
# Needs: perf with uprobes (root), python3, curl; the kit's request bodies.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CASE=${1:?usage: copies.sh CASE [BIN_DIR]}
BIN_DIR=${2:-$TARGET/release}
N=${N:-100}; TOP=${TOP:-15}; PORT=${PORT:-8797}
BODIES=${BODIES:-/work/shared/bench/perf-bodies}
DRIVE=$ROOT/bench/callgrind/drive.py
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT

LIBC=$(ldd "$BIN_DIR/bench-server" | awk '/libc\.so/ {print $3}')
# The memmove (and memcpy: same body) glibc picks for this CPU, as profile.sh names it; set
# MEMMOVE=<symbol> if the profile shows another.
if grep -qw avx512f /proc/cpuinfo; then SYM=__memmove_avx512_unaligned_erms; else SYM=__memmove_avx_unaligned_erms; fi
SYM=${MEMMOVE:-$SYM}
perf probe -q -d 'probe_libc:mcpcopy' 2>/dev/null || true
perf probe -q -x "$LIBC" -a "mcpcopy=$SYM len=%dx:u64"

# shellcheck source-path=SCRIPTDIR source=case.sh
. "$HERE/case.sh"
start_server "$BIN_DIR/bench-server"
case_args "$CASE"
python3 "$DRIVE" "$PORT" "${args[@]}" 200 2 >/dev/null
perf record -q -m 1024 -e probe_libc:mcpcopy --call-graph dwarf,8192 -p "$pid" -o "$TMP/perf.data" &
rec=$!
sleep 1
python3 "$DRIVE" "$PORT" "${args[@]}" "$N" 2 >/dev/null
sleep 0.5
kill -INT "$rec"; wait "$rec" 2>/dev/null || true
perf probe -q -d 'probe_libc:mcpcopy' || true
perf script -i "$TMP/perf.data" -F trace,ip,sym --no-inline 2>/dev/null >"$TMP/script.txt"
python3 - "$TMP/script.txt" "$N" "$TOP" <<'PY'
import collections, re, sys
path, n, top = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
calls, size = collections.Counter(), collections.Counter()
cur, stack = None, []
def flush():
    global cur, stack
    if cur is not None:
        caller = next((s for s in stack[1:] if 'memmove' not in s and 'memcpy' not in s), '?')
        calls[caller[:100]] += 1
        size[caller[:100]] += cur
    cur, stack = None, []
for line in open(path, errors='replace'):
    m = re.search(r'len=(\d+)', line)
    if m:
        flush(); cur = int(m.group(1)); continue
    p = line.strip().split(None, 1)
    if len(p) == 2 and re.match(r'^[0-9a-f]+$', p[0]):
        stack.append(re.sub(r'\+0x[0-9a-f]+$', '', p[1]))
flush()
print(f"per request: {sum(calls.values())/n:.1f} memmove calls, {sum(size.values())/n:.0f} bytes")
for k, v in size.most_common(top):
    print(f"  {v/n:7.0f} B  {calls[k]/n:5.1f} calls  {k}")
PY
