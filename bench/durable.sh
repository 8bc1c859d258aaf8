#!/usr/bin/env bash
# The durable path under load: accepted notes_delete retries per second and their latency,
# against the real notes server (`notes-example serve --http`, notes as real Markdown files in
# a temp workspace, a persistent replay store). Every measured request is a confirming retry
# that claims a fresh requestState and deletes one note (bench/src/bin/durable-load.rs checks
# each answer says "Deleted" and that every note file is gone afterwards).
#
# Stores are run case by case in the same run, alternating their order by round, each on a
# fresh temp workspace and store:
#   sqlite-nogroup  SQLite file, group commit off (MCP_SQLITE_GROUP_COMMIT=0): one
#                   transaction and one WAL fsync per claim and per outcome record
#   sqlite          SQLite file, group commit on (the default)
#   memory          in-process store (no disk): the ceiling of this path on this machine
#   postgres        $PG_URL (synchronous_commit as the server is configured)
#   redis           $REDIS_URL (durability as the Redis server is configured)
#
# The table gives, per store and concurrency, accepted confirmations per second (each one a
# retry that claimed its requestState and deleted its note) and p50/p99/max latency, and for
# every store its ratio to the memory store: accepted/s over memory's and p99 over memory's,
# each the median of per-round ratios against the memory run of the same round.
#
# usage: bench/durable.sh
# env:   NOTES=3000            retries (= notes deleted) per measurement
#        CONNS="1 32 256"      concurrent connections
#        STORES="sqlite-nogroup sqlite memory postgres redis"   postgres and redis are skipped,
#                              with the reason printed, when nothing answers at $PG_URL or
#                              $REDIS_URL's host and port; memory is always run (the ratios'
#                              divisor)
#        REQUIRE_STORES=1      fail instead of skipping an unreachable store
#        ROUNDS=1              runs per (store, concurrency); the median is reported
#        SERVER_CPUS=0 LOAD_CPUS=1   cores (taskset -c) of the server and of durable-load
#        PORT=8790
#        PG_URL=postgres://postgres@127.0.0.1:5432/test  REDIS_URL=redis://127.0.0.1:6379/0
#        OUT=bench/results/durable.md   where the table is also written
#        NO_BUILD=1            use existing release binaries
#        CARGO_TARGET_DIR=<repo>/target
# Loopback only; every run is bounded (NOTES requests, 30 s per request).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
NOTES=${NOTES:-3000}
CONNS=${CONNS:-"1 32 256"}
STORES=${STORES:-"sqlite-nogroup sqlite memory postgres redis"}
ROUNDS=${ROUNDS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
LOAD_CPUS=${LOAD_CPUS:-1}
PORT=${PORT:-8790}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/test}
REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/0}
OUT=${OUT:-$ROOT/bench/results/durable.md}

# A store whose server is down is skipped (or, with REQUIRE_STORES, fails the run) before
# anything is built: a TCP connect to the URL's host and port, bounded by 2 s.
reachable() { # reachable URL DEFAULT_PORT
  local hostport host port
  hostport=${1#*://}; hostport=${hostport#*@}; hostport=${hostport%%/*}
  host=${hostport%:*}; port=${hostport##*:}; [ "$port" = "$hostport" ] && port=$2
  timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}
RUN_STORES=""
SKIPPED=()
for s in $STORES; do
  case "$s" in
    postgres) url=$PG_URL; def=5432 ;;
    redis) url=$REDIS_URL; def=6379 ;;
    *) RUN_STORES+=" $s"; continue ;;
  esac
  if reachable "$url" "$def"; then RUN_STORES+=" $s"; continue; fi
  [ -n "${REQUIRE_STORES:-}" ] && { echo "store $s: nothing answers at $url (REQUIRE_STORES is set)" >&2; exit 2; }
  echo "skipping store $s: nothing answers at $url" >&2
  SKIPPED+=("$s (nothing answered at $url)")
done
# The memory store is every ratio's divisor.
[[ " $RUN_STORES " == *" memory "* ]] || RUN_STORES+=" memory"
STORES=${RUN_STORES# }

if [ -z "${NO_BUILD:-}" ]; then
  echo "building notes-example and durable-load (release) ..." >&2
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET nice -n 10 cargo build --release -q -p notes-example \
    -p mcp-bench --no-default-features --bin notes-example --bin durable-load)
fi
SERVER_BIN=$TARGET/release/notes-example
LOAD_BIN=$TARGET/release/durable-load
[ -x "$SERVER_BIN" ] && [ -x "$LOAD_BIN" ] || { echo "missing $SERVER_BIN or $LOAD_BIN" >&2; exit 2; }

TMP=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

store_args() { # store_args STORE DIR -> the --store flag and the environment of the server
  case "$1" in
    sqlite-nogroup) echo "MCP_SQLITE_GROUP_COMMIT=0 --store=sqlite:$2/replay.db" ;;
    sqlite)         echo "MCP_SQLITE_GROUP_COMMIT=1 --store=sqlite:$2/replay.db" ;;
    memory)         echo "MCP_SQLITE_GROUP_COMMIT=1 --store=memory" ;;
    postgres)       echo "MCP_SQLITE_GROUP_COMMIT=1 --store=$PG_URL" ;;
    redis)          echo "MCP_SQLITE_GROUP_COMMIT=1 --store=$REDIS_URL" ;;
    *) echo "unknown store $1 (sqlite-nogroup sqlite memory postgres redis)" >&2; exit 2 ;;
  esac
}

run_one() { # run_one STORE CONNS -> "accepted_per_s p50 p99 max errors rss_mb"
  local dir="$TMP/run" env flag out rss
  rm -rf "$dir"; mkdir -p "$dir/ws"
  read -r env flag <<<"$(store_args "$1" "$dir")"
  env "$env" RUST_LOG=${RUST_LOG:-warn} taskset -c "$SERVER_CPUS" "$SERVER_BIN" serve \
    --http "127.0.0.1:$PORT" --workspace "$dir/ws" --principal bench "$flag" \
    --max-connections 4096 2>"$TMP/server.log" &
  SERVER_PID=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PORT/mcp" -X POST -d '{}' 2>/dev/null && break
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "notes-example exited:" >&2; cat "$TMP/server.log" >&2; exit 1; }
    sleep 0.1
  done
  out=$(taskset -c "$LOAD_CPUS" "$LOAD_BIN" "http://127.0.0.1:$PORT/mcp" "$dir/ws" "$NOTES" "$2" 2>"$TMP/load.err") || {
    echo "durable-load failed for $1 c=$2:" >&2; cat "$TMP/load.err" >&2; tail -5 "$TMP/server.log" >&2; }
  rss=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$SERVER_PID/status")
  kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true; SERVER_PID=
  sed 's/^/    /' "$TMP/load.err" >&2
  local rps p50 p99 max errors
  read -r _ rps p50 p99 max _ errors _ <<<"$(grep '^RESULT' <<<"$out" || echo "RESULT 0 0 0 0 0 $NOTES 0")"
  echo "$rps $p50 $p99 $max $errors $rss"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A RES
round=0
for c in $CONNS; do
  for r in $(seq "$ROUNDS"); do
    round=$((round + 1))
    order=$STORES
    # Alternate the order, so drift on a shared machine hits every store.
    [ $((round % 2)) -eq 0 ] && order=$(tr ' ' '\n' <<<"$STORES" | tac | tr '\n' ' ')
    for s in $order; do
      RES[$s,$c,$r]=$(run_one "$s" "$c")
      echo "  $s c=$c round $r: ${RES[$s,$c,$r]}" >&2
    done
  done
done

field() { awk -v i="$1" '{print $i}' <<<"$2"; }
vs_memory() { # vs_memory STORE CONC FIELD -> the store's FIELD over memory's, median of per-round ratios
  local r
  for r in $(seq "$ROUNDS"); do
    awk -v a="$(field "$3" "${RES[$1,$2,$r]}")" -v b="$(field "$3" "${RES[memory,$2,$r]}")" \
      'BEGIN {printf "%.4f\n", (b > 0 ? a / b : 0)}'
  done | median | awk '{printf "%.2fx", $1}'
}
mkdir -p "$(dirname "$OUT")"
{
  echo "| store | conc | accepted confirmations/s | vs memory | p50 | p99 | p99 vs memory | max | errors | peak RSS |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  for c in $CONNS; do
    for s in $STORES; do
      col() { for r in $(seq "$ROUNDS"); do field "$1" "${RES[$s,$c,$r]}"; done | median; }
      errs=0; for r in $(seq "$ROUNDS"); do errs=$((errs + $(field 5 "${RES[$s,$c,$r]}"))); done
      printf '| %s | %s | %s | %s | %s ms | %s ms | %s | %s ms | %s | %s MB |\n' \
        "$s" "$c" "$(col 1)" "$(vs_memory "$s" "$c" 1)" "$(col 2)" "$(col 3)" "$(vs_memory "$s" "$c" 3)" \
        "$(col 4)" "$errs" "$(col 6)"
    done
  done
  echo
  echo "notes-example serve --http (fs notes, $NOTES notes deleted per cell, each by its own confirming retry); server on core(s) $SERVER_CPUS, durable-load on $LOAD_CPUS; ROUNDS=$ROUNDS (medians; errors summed; \"vs memory\" = median of per-round ratios to the memory store); RUST_LOG=${RUST_LOG:-warn}"
  for x in "${SKIPPED[@]}"; do echo "skipped store $x"; done
} | tee "$OUT"
echo "table written to $OUT" >&2
