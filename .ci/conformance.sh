#!/usr/bin/env bash
# Official MCP conformance suites against our conformance-server: the 2026-07-28 server
# scenarios, then the 2025-11-25 ones (served through the runtime's legacy adapter, from the
# same fixture handlers).
#
# The 2026-07-28 run counts every scenario it runs (CONFORMANCE_ALL=1): the 37 scored ones,
# the pending ones and the ten tasks-* extension scenarios (SEP-2663) alike, and it fails
# unless all ten tasks-* scenarios reported a result.
#
# Builds the fixture server (debug), starts it on a free loopback port (port 0), runs
# ../shared/conformance/run-server-suite against it once per revision, stops it, and fails if
# either suite fails. Each suite's last line is "conformance: N passed, M failed"; per-scenario
# checks.json files land in $CONFORMANCE_OUT/<revision> (default: a fresh temp dir per suite,
# printed as "results: ...").
# Extra arguments go to both suite runs.
set -euo pipefail
cd "$(dirname "$0")/.."

# Override for local worktrees where shared/ is elsewhere (e.g. /work/shared/...).
SUITE=${MCP_CONFORMANCE_SUITE:-../shared/conformance/run-server-suite}
if [ ! -x "$SUITE" ]; then
  echo "conformance: $SUITE not found (CI expects shared/ beside the clone)" >&2
  exit 2
fi

# Ask cargo where the binary landed (honours CARGO_TARGET_DIR and workspace settings).
BIN=$(cargo build -q -p mcp-tests --bin conformance-server --message-format=json |
  sed -n 's/.*"executable":"\([^"]*conformance-server\)".*/\1/p' | tail -n1)
if [ ! -x "$BIN" ]; then
  echo "conformance: could not locate the built conformance-server binary" >&2
  exit 2
fi

# Port 0: the kernel picks a free loopback port (no race with other jobs); the server prints
# "listening on http://127.0.0.1:PORT/mcp" on stdout once it is bound.
LOG=$(mktemp "${TMPDIR:-/tmp}/conformance-server.XXXXXX.log")
"$BIN" --http 127.0.0.1:0 >"$LOG" 2>&1 &
SERVER_PID=$!
stop_server() {
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
}
trap stop_server EXIT

URL=
for _ in $(seq 100); do
  URL=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$LOG" | head -n1)
  [ -n "$URL" ] && break
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "conformance: server exited during startup; its log:" >&2
    cat "$LOG" >&2
    exit 2
  fi
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "conformance: server did not report its address within 10 s; its log:" >&2
  cat "$LOG" >&2
  exit 2
fi

# run_suite SPEC ARGS...: one suite against the running server; returns its exit code, or 1
# when it printed no summary (it crashed before counting).
run_suite() {
  local spec=$1 out_log rc
  shift
  echo "conformance: === $spec server suite ==="
  out_log=$(mktemp "${TMPDIR:-/tmp}/conformance-suite.XXXXXX.log")
  set +e
  # Every scenario counts for the 2026-07-28 run (the extension and pending ones too).
  local all=0
  [ "$spec" = 2026-07-28 ] && all=1
  CONFORMANCE_ALL=$all CONFORMANCE_SPEC=$spec CONFORMANCE_OUT=${CONFORMANCE_OUT:+$CONFORMANCE_OUT/$spec} "$SUITE" "$URL" "$@" 2>&1 | tee "$out_log"
  rc=${PIPESTATUS[0]}
  set -e
  # Every scored check must pass: there is no expected-failures list.
  if ! grep -q '^conformance: [0-9]* passed' "$out_log"; then
    echo "conformance: the $spec suite produced no summary; server log: $LOG" >&2
    return 1
  fi
  if [ "$rc" -ne 0 ]; then
    echo "conformance: the $spec suite exited with $rc; server log: $LOG" >&2
  fi
  SUMMARIES+=("$spec: $(grep '^conformance: [0-9]* passed' "$out_log" | tail -n1)")
  if [ "$spec" = 2026-07-28 ]; then
    # The tasks extension: each of its ten scenarios must have run (a harness that skipped
    # one would otherwise pass silently).
    local ran
    ran=$(grep -oE '^[^ ]+ tasks-[a-z-]+:' "$out_log" | sort -u | wc -l)
    if [ "$ran" -ne 10 ]; then
      echo "conformance: expected the 10 tasks-* scenarios to run, saw $ran; server log: $LOG" >&2
      return 1
    fi
  fi
  return "$rc"
}

SUMMARIES=()
RC=0
run_suite 2026-07-28 "$@" || RC=1
run_suite 2025-11-25 "$@" || RC=1
for line in "${SUMMARIES[@]}"; do echo "$line"; done
exit "$RC"
