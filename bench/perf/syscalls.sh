#!/usr/bin/env bash
# System calls and CPU per request under load, split into user and kernel time: whether a
# server's kernel share comes from calls it could avoid or from the loopback TCP work every
# server on this stack pays (perf stat counting raw_syscalls:sys_enter, page faults and context
# switches of the server process while the kit's wrk load runs; /proc/PID/stat for user and
# system time).
#
# usage: bench/perf/syscalls.sh CASE [BIN_DIR]
#        CASE: tools_list call_first call_retry echo, or floor (bare-axum on echo)
# env:   CONNS=32 DURATION=3s PORT=8797
# Prints: case, req/s, syscalls, page faults and context switches per request, user us and
#         kernel us per request. The count itself adds a little kernel time (one tracepoint
#         hit per call): compare cases of this script with each other, and http.sh's figures
#         with http.sh's.
# Needs: perf (Debian package linux-perf), wrk, the shared kit's perf-load.sh.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
CASE=${1:?usage: syscalls.sh CASE [BIN_DIR]}
BIN_DIR=${2:-$TARGET/release}
KIT=${KIT:-/work/shared/bench}
CONNS=${CONNS:-32}; DURATION=${DURATION:-3s}; PORT=${PORT:-8797}
command -v perf >/dev/null || { echo "perf is missing: apt-get install -y linux-perf" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT

# shellcheck source-path=SCRIPTDIR source=case.sh
. "$HERE/case.sh"
server_bin "$CASE"
load=$CASE; [ "$CASE" = floor ] && load="echo"
start_server "$bin"

drive() { # drive SECONDS -> the kit's summary on stderr in $TMP/load.err
  CASES=$load CONNS=$CONNS DURATION=$1 WRK_CPUS=1 bash "$KIT/perf-load.sh" \
    "http://127.0.0.1:$PORT/mcp" >"$TMP/load.out" 2>"$TMP/load.err"
}
drive 1s # warm-up, uncounted
read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
perf stat -x, -e raw_syscalls:sys_enter,page-faults,context-switches -p "$pid" -o "$TMP/stat.txt" &
stat_pid=$!
drive "$DURATION"
kill -INT "$stat_pid"; wait "$stat_pid" 2>/dev/null || true
read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
n=$(sed -n 's/.* n=\([0-9]*\).*/\1/p' "$TMP/load.err")
calls=$(awk -F, '/sys_enter/ {print $1}' "$TMP/stat.txt")
faults=$(awk -F, '/page-faults/ {print $1}' "$TMP/stat.txt")
switches=$(awk -F, '/context-switches/ {print $1}' "$TMP/stat.txt")
[ -n "$n" ] && [ "$n" -gt 0 ] && [ -n "$calls" ] || { echo "no count: $(cat "$TMP/load.err")" >&2; exit 1; }
awk -v c="$CASE" -v n="$n" -v k="$calls" -v du=$((u1 - u0)) -v ds=$((s1 - s0)) \
  -v pf="${faults:-0}" -v cs="${switches:-0}" -v hz="$(getconf CLK_TCK)" -v rps="$(awk '{print $2}' "$TMP/load.out")" -v conns="$CONNS" \
  'BEGIN { printf "%-10s c=%s %8s req/s  %.2f syscalls/request  %.3f page faults  %.2f context switches  user %.2f us  kernel %.2f us per request\n",
           c, conns, rps, k / n, pf / n, cs / n, du * 1e6 / hz / n, ds * 1e6 / hz / n }'
