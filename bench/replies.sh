# shellcheck shell=bash
# Sourced by bench/http.sh and bench/callgrind/count.sh: the replies the floor on each case's own
# bytes (bare-axum --replies DIR) sends back.
#
# capture_replies URL BODIES DIR   asks the MCP server at URL for tools/list, the first leg and
#                                  its retry (the retry with the requestState the first leg just
#                                  issued, as perf-load.sh builds it) with the kit's bodies in
#                                  BODIES, checks each is a result, and writes them to
#                                  DIR/tools_list.json, DIR/call_first.json, DIR/call_retry.json
capture_replies() {
  local url=$1 bodies=$2 dir=$3 state
  mkdir -p "$dir"
  _capture_one() { # CASE METHOD NAME BODYFILE
    local hdr=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
               -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $2")
    [ -n "$3" ] && hdr+=(-H "Mcp-Name: $3")
    curl -sS --max-time 30 "${hdr[@]}" --data-binary @"$4" "$url" >"$dir/$1.json" &&
      grep -q '"result"' "$dir/$1.json" || {
      echo "capturing the $1 reply from $url failed: $(head -c 300 "$dir/$1.json" 2>/dev/null)" >&2; return 1; }
  }
  _capture_one tools_list tools/list "" "$bodies/tools_list.json" || return 1
  _capture_one call_first tools/call notes_delete "$bodies/call_first.json" || return 1
  state=$(sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p' "$dir/call_first.json")
  sed "s|__REQUEST_STATE__|$state|" "$bodies/call_retry_template.json" >"$dir/retry_request.json"
  _capture_one call_retry tools/call notes_delete "$dir/retry_request.json" || return 1
  rm -f "$dir/retry_request.json"
}
