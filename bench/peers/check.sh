#!/usr/bin/env bash
# Checks that a notes benchmark server refuses what it must, beside answering the kit's four
# cases: the same contract for ours, rmcp-notes and the SDK peers (bench/README.md, "Peers").
#
# usage: bench/peers/check.sh URL        e.g. bench/peers/check.sh http://127.0.0.1:8792/mcp
# env:   BODIES=/work/shared/bench/perf-bodies   the kit's request bodies
# Prints one line per check and exits 1 if any failed. A refusal is a JSON-RPC error or a
# tool result with "isError":true (which of the two is each SDK's choice), never a deletion.
set -euo pipefail

URL=${1:?usage: check.sh URL}
case "$URL" in
  http://127.*|http://localhost*|http://\[::1\]*) ;;
  *) echo "refusing non-loopback target $URL" >&2; exit 2 ;;
esac
BODIES=${BODIES:-/work/shared/bench/perf-bodies}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

post() { # post METHOD NAME BODYFILE -> response body
  local hdr=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
             -H 'MCP-Protocol-Version: 2026-07-28' -H "Mcp-Method: $1")
  [ -n "$2" ] && hdr+=(-H "Mcp-Name: $2")
  curl -sS --max-time 5 "${hdr[@]}" --data-binary @"$3" "$URL"
}
FAILED=0
check() { # check NAME RESPONSE 'PATTERN' -> pass when RESPONSE matches the extended regex
  if grep -Eq -e "$3" <<<"$2"; then echo "ok   $1"; else echo "FAIL $1: ${2:0:300}"; FAILED=1; fi
}
refused() { # refused NAME RESPONSE -> pass when the call was not accepted: a JSON-RPC error, an
  # isError result, or the question asked again (ours re-asks an answer outside the choices),
  # and in no case a deletion
  if ! grep -q 'Deleted' <<<"$2" && grep -Eq -e '"error"|"isError":true|"input_required"' <<<"$2"; then
    echo "ok   $1"; else echo "FAIL $1: ${2:0:300}"; FAILED=1; fi
}

check tools_list "$(post tools/list "" "$BODIES/tools_list.json")" '"notes_delete"'
check echo "$(post tools/call echo "$BODIES/echo.json")" 'hello from the load generator'
first=$(post tools/call notes_delete "$BODIES/call_first.json")
check "first leg asks (input_required, delete_choice)" "$first" '"input_required".*"delete_choice"|"delete_choice".*"input_required"'
state=$(sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p' <<<"$first")
retry() { sed "s|__REQUEST_STATE__|$1|$2" "$BODIES/call_retry_template.json" >"$TMP/retry.json"; post tools/call notes_delete "$TMP/retry.json"; }
check "retry completes" "$(retry "$state" "")" '"complete".*Deleted note-14|Deleted note-14.*"complete"'
check "retry repeats (benchmark mode)" "$(retry "$state" "")" 'Deleted note-14'
# The last character of the token changed: its MAC or tag no longer matches.
last=${state: -1}; other=A; [ "$last" = A ] && other=B
refused "tampered requestState refused" "$(retry "${state%?}$other" "")"
refused "requestState of other arguments refused" "$(retry "$state" "; s|\"title\":\"TPS report\"|\"title\":\"TPS\"|")"
refused "answer not among the offered notes not accepted" "$(retry "$state" "; s|note-14|note-9|")"
sed 's|"elicitation":{"form":{}}||' "$BODIES/call_first.json" >"$TMP/nocap.json"
check "first leg without form elicitation refused (-32021)" "$(post tools/call notes_delete "$TMP/nocap.json")" '-32021'
exit "$FAILED"
