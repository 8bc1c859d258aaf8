# shellcheck shell=bash
# shellcheck disable=SC2034 # pid and args are set for the scripts that source this file
# Sourced by copies.sh, allocs.sh, syscalls.sh, bench/ab.sh and bench/pgo.sh: start one benchmark server and name one case's request.
#
# server_bin CASE       sets $bin to the binary under $BIN_DIR that serves CASE (bare-axum for
#                       floor, bench-server otherwise), or exits if it is not built
# start_server BIN [ARGS...]
#                       starts BIN ARGS on 127.0.0.1:$PORT pinned to core 0 (sets $pid), its
#                       stderr to $SERVER_LOG (default /dev/null), and waits for its port
# case_args CASE        sets $args to drive.py's METHOD NAME BODY EXPECT for CASE (tools_list,
#                       call_first, call_retry, echo; floor: echo for bare-axum); call_retry
#                       captures a fresh requestState into $TMP/retry.json first
# Needs $BIN_DIR, $PORT, $BODIES and $TMP set by the caller.

server_bin() {
  bin=$BIN_DIR/bench-server
  [ "$1" = floor ] && bin=$BIN_DIR/bare-axum
  [ -x "$bin" ] || { echo "no $bin (build: cargo build --release -p mcp-bench --bins --no-default-features)" >&2; exit 2; }
}

start_server() {
  taskset -c 0 "$@" "127.0.0.1:$PORT" 2>"${SERVER_LOG:-/dev/null}" &
  pid=$!
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0; sleep 0.1; done
  echo "server did not come up on $PORT" >&2; return 1
}

case_args() {
  local state
  case "$1" in
    call_first) args=(tools/call notes_delete "$BODIES/call_first.json" input_required) ;;
    call_retry)
      state=$(curl -sS --max-time 10 -H 'Content-Type: application/json' \
        -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
        -H 'Mcp-Method: tools/call' -H 'Mcp-Name: notes_delete' --data-binary @"$BODIES/call_first.json" \
        "http://127.0.0.1:$PORT/mcp" | sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p')
      [ -n "$state" ] || { echo "no requestState" >&2; return 1; }
      sed "s|__REQUEST_STATE__|$state|" "$BODIES/call_retry_template.json" >"$TMP/retry.json"
      args=(tools/call notes_delete "$TMP/retry.json" '"complete"') ;;
    echo|floor) args=(tools/call echo "$BODIES/echo.json" '"complete"') ;;
    tools_list) args=(tools/list - "$BODIES/tools_list.json" '"tools"') ;;
    *) echo "unknown case $1" >&2; return 2 ;;
  esac
}
