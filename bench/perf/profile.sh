#!/usr/bin/env bash
# Where a request's CPU time goes on real hardware: a sampling profile (perf, cpu-clock) of
# bench-server or bare-axum under wrk load, kernel included, grouped by component.
# Complements bench/callgrind/count.sh, which counts user-space instructions on a CPU without
# SHA-NI; this one measures time, with the host's SHA-NI, the kernel's loopback TCP and the
# scheduler in it.
#
# usage: bench/perf/profile.sh [BIN_DIR]   (default: $CARGO_TARGET_DIR/release or target/release)
# env:   CASES="tools_list call_first call_retry echo floor"   (floor: bare-axum on echo)
#        CONNS=32 SAMPLE=6 (seconds sampled) WARM=2 (seconds of load before sampling) FREQ=4999
#        PORT=8791 OUT=<dir> to keep perf.data and the reports   TOP=25 symbols listed
# Prints per case: the share of samples per component and the top symbols.
# Needs: perf (Debian package linux-perf), wrk, the shared kit's perf-load.sh.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN_DIR=${1:-$TARGET/release}
KIT=${KIT:-/work/shared/bench}
CASES=${CASES:-"tools_list call_first call_retry echo floor"}
CONNS=${CONNS:-32}; SAMPLE=${SAMPLE:-6}; WARM=${WARM:-2}; FREQ=${FREQ:-4999}
PORT=${PORT:-8791}; TOP=${TOP:-25}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
command -v perf >/dev/null || { echo "perf is missing: apt-get install -y linux-perf" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }

wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "server did not come up on $PORT" >&2; return 1
}

for c in $CASES; do
  bin=$BIN_DIR/bench-server; kit_case=$c
  [ "$c" = floor ] && { bin=$BIN_DIR/bare-axum; kit_case="echo"; }
  [ -x "$bin" ] || { echo "no $bin (build: cargo build --release -p mcp-bench --bins --no-default-features)" >&2; exit 2; }
  taskset -c 0 "$bin" "127.0.0.1:$PORT" 2>"$OUT/$c.server.log" &
  pid=$!
  wait_port || { kill "$pid" 2>/dev/null; cat "$OUT/$c.server.log" >&2; exit 1; }
  DURATION=$((WARM + SAMPLE + 2))s CONNS=$CONNS CASES=$kit_case WRK_CPUS=1 \
    bash "$KIT/perf-load.sh" "http://127.0.0.1:$PORT/mcp" >"$OUT/$c.load.txt" 2>"$OUT/$c.load.err" &
  load=$!
  sleep "$WARM"
  perf record -q -e cpu-clock -F "$FREQ" -p "$pid" -o "$OUT/$c.perf.data" -- sleep "$SAMPLE" 2>/dev/null
  wait "$load" || { echo "load failed for $c:" >&2; cat "$OUT/$c.load.err" >&2; }
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  perf report -i "$OUT/$c.perf.data" --stdio --no-children --sort dso,sym 2>/dev/null \
    | grep -E '^ +[0-9.]+%' >"$OUT/$c.symbols.txt"
  echo "== $c (c=$CONNS; $(awk '{print $2" req/s"}' "$OUT/$c.load.txt" | head -1))"
  python3 "$HERE/group.py" "$OUT/$c.symbols.txt" "$TOP"
done
echo "perf data and reports: $OUT"
