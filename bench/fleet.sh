#!/usr/bin/env bash
# A fleet under faults, for a chosen duration: three `notes-example serve --http` instances
# behind HAProxy (round robin, health checks, retries 0), sharing one PostgreSQL database (notes,
# claims, tasks) and then one Redis (claims, tasks; notes in a shared directory), with AGENTS
# concurrent agents running whole notes_delete flows through the proxy (form, then the
# confirmation, resending the same retry after any error or timeout, at most 8 sends per leg).
# Every 16 s of load: one instance SIGKILLed and restarted (+2 s, +3 s), the store down for 1 s
# (+6 s: PostgreSQL refuses connections to the fleet's database and terminates the servers'
# connections; Redis, a server of the run's own, is stopped and started again), another
# instance SIGSTOPped for 3 s (+10 s). The scenario is tests/src/fleet.rs, the same as
# tests/tests/fleet_haproxy.rs; this script runs it longer, on release builds.
#
# Prints per store: flows started, confirmed and completed (and flows/s), confirmations lost,
# double deletions, untruthful replies, non-retryable errors, the errors seen by kind, and the
# longest time without a completed flow; exits non-zero if any of the four counts is not 0.
#
# usage: bench/fleet.sh
# env:   DURATION=60          seconds of load per store (at least 14 for one fault cycle)
#        STORES="postgres redis"
#        AGENTS=16
#        FAULTS=1             0: the same load without faults (the throughput baseline)
#        MCP_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test  (a database of the run's
#                             own is created there and dropped afterwards)
#        HAPROXY=haproxy REDIS_SERVER=redis-server
#        NO_BUILD=1           use existing release binaries
#        CARGO_TARGET_DIR=<repo>/target
# Needs haproxy and redis-server (Debian: apt-get install haproxy redis-server) and a reachable
# PostgreSQL. Loopback only.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
DURATION=${DURATION:-60}
STORES=${STORES:-"postgres redis"}
AGENTS=${AGENTS:-16}
FAULTS=${FAULTS:-1}

command -v "${HAPROXY:-haproxy}" >/dev/null || { echo "no haproxy (apt-get install haproxy)" >&2; exit 2; }

if [ -z "${NO_BUILD:-}" ]; then
  echo "building notes-example and fleet-faults (release) ..." >&2
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET nice -n 10 cargo build --release -q \
    -p notes-example -p mcp-tests --bin notes-example --bin fleet-faults)
fi
SERVER_BIN=$TARGET/release/notes-example
FLEET_BIN=$TARGET/release/fleet-faults
[ -x "$SERVER_BIN" ] && [ -x "$FLEET_BIN" ] || { echo "missing $SERVER_BIN or $FLEET_BIN" >&2; exit 2; }

args=(--duration "$DURATION" --agents "$AGENTS")
[ "$FAULTS" = 0 ] && args+=(--no-faults)
for s in $STORES; do args+=(--store "$s"); done

echo "fleet: $DURATION s of load per store, $AGENTS agents, faults=$FAULTS, stores: $STORES" >&2
NOTES_EXAMPLE_BIN=$SERVER_BIN "$FLEET_BIN" "${args[@]}"
