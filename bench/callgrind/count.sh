#!/usr/bin/env bash
# Instructions per request of bench-server (and bare-axum), counted by callgrind: stable on a
# busy machine where wall-clock figures are not.
#
# usage: bench/callgrind/count.sh [BIN_DIR]    (default: $CARGO_TARGET_DIR/release or target/release)
# env:   N=2000 requests per case (after WARM=200 uncounted ones), K=4 keep-alive connections,
#        CASES="tools_list call_first call_retry echo floor", PORT=8790,
#        (also bytes_tools_list, bytes_call_first, bytes_call_retry: bare-axum on that case's
#        own request, answering with bench-server's reply captured first; see bench/http.sh),
#        OUT=<dir> to keep the callgrind files (for callgrind_annotate),
#        CACHE_SIM=1 to simulate the caches instead of counting the footprint: per request, the
#        instruction fetches that miss a 32 KiB L1 and those that miss a 512 KiB last level
#        (CACHES="--I1=32768,8,64 --D1=32768,8,64 --LL=524288,8,64": one core's L1 and L2 on
#        a Zen 3 or a Xeon, set it for another machine), and the data misses likewise. Only
#        user space is simulated, one request after another: the kernel's own use of the
#        caches between requests is not, so these are lower bounds
# Prints: case  instructions/request (user space only: the kernel's share is not counted), then
#   the SHA-256 compression share and the count without it, the allocator's share (glibc's
#   malloc, free, realloc and their internals), then the code footprint: the
#   distinct 64-byte lines and 4 KiB pages of machine code the requests executed (every
#   request of a case takes the same path, so this is one request's footprint;
#   bench/callgrind/footprint.py counts them), and among those lines the ones run on every
#   request (some instruction of the line ran N times or more: this leaves out what runs
#   now and then, such as the HTTP date renewed once a second). Per symbol, against the
#   floor: python3 bench/callgrind/footprint.py --by-symbol N OUT/call_retry.out.1 OUT/floor.out.1 On an otherwise idle core (c=1) a request finds
#   little of its code still cached, and its user time follows the footprint more than the
#   instruction count.
# valgrind hides SHA-NI from CPUID, so under callgrind `sha2` runs its portable code (~3,500
#   instructions per 64-byte block, against ~170 with SHA-NI on the real CPU): the MRTR legs'
#   HMAC and digests weigh ~20x what they weigh natively. Read the column without SHA-256 when
#   comparing with the floor; the portable code also adds ~170 code lines the real CPU does not
#   run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
BIN_DIR=${1:-$TARGET/release}
N=${N:-2000}; WARM=${WARM:-200}; K=${K:-4}; PORT=${PORT:-8790}
CASES=${CASES:-"tools_list call_first call_retry echo floor"}
BODIES=${BODIES:-/work/shared/bench/perf-bodies}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

wait_port() {
  for _ in $(seq 1 150); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$PORT),timeout=1)" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "server did not come up on $PORT" >&2; return 1
}

# The floor on a case's own bytes answers with bench-server's replies: capture them first.
if [[ " $CASES " == *" bytes_"* ]]; then
  # shellcheck source-path=SCRIPTDIR source=../replies.sh
  . "$ROOT/bench/replies.sh"
  "$BIN_DIR/bench-server" "127.0.0.1:$PORT" 2>"$TMP/capture.log" &
  pid=$!
  wait_port || { kill "$pid" 2>/dev/null; cat "$TMP/capture.log" >&2; exit 1; }
  capture_replies "http://127.0.0.1:$PORT/mcp" "$BODIES" "$TMP/replies" || { kill "$pid"; exit 1; }
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
fi

drive() { # case count
  case "${1#bytes_}" in
    tools_list) python3 "$HERE/drive.py" "$PORT" tools/list - "$BODIES/tools_list.json" '"tools"' "$2" "$K" ;;
    call_first) python3 "$HERE/drive.py" "$PORT" tools/call notes_delete "$BODIES/call_first.json" input_required "$2" "$K" ;;
    call_retry) python3 "$HERE/drive.py" "$PORT" tools/call notes_delete "$TMP/call_retry.json" '"complete"' "$2" "$K" ;;
    echo|floor) python3 "$HERE/drive.py" "$PORT" tools/call echo "$BODIES/echo.json" '"complete"' "$2" "$K" ;;
  esac
}

for c in $CASES; do
  bin=$BIN_DIR/bench-server; args=()
  [ "$c" = floor ] && bin=$BIN_DIR/bare-axum
  [[ "$c" == bytes_* ]] && { bin=$BIN_DIR/bare-axum; args=(--replies "$TMP/replies"); }
  [ -x "$bin" ] || { echo "no $bin (build: cargo build --release -p mcp-bench --bins --no-default-features)" >&2; exit 2; }
  file=$OUT/$c.out
  sim=()
  # shellcheck disable=SC2206 # CACHES is a list of valgrind options
  [ -n "${CACHE_SIM:-}" ] && sim=(--cache-sim=yes ${CACHES:---I1=32768,8,64 --D1=32768,8,64 --LL=524288,8,64})
  valgrind --tool=callgrind --dump-instr=yes --compress-pos=no "${sim[@]}" --callgrind-out-file="$file" "$bin" "${args[@]}" "127.0.0.1:$PORT" 2>"$TMP/vg.log" &
  pid=$!
  wait_port || { kill "$pid" 2>/dev/null; cat "$TMP/vg.log" >&2; exit 1; }
  if [ "${c#bytes_}" = call_retry ]; then
    state=$(curl -sS --max-time 30 -H 'Content-Type: application/json' \
      -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2026-07-28' \
      -H 'Mcp-Method: tools/call' -H 'Mcp-Name: notes_delete' --data-binary @"$BODIES/call_first.json" \
      "http://127.0.0.1:$PORT/mcp" | sed -n 's/.*"requestState":"\([^"]*\)".*/\1/p')
    [ -n "$state" ] || { echo "no requestState" >&2; kill "$pid"; exit 1; }
    sed "s|__REQUEST_STATE__|$state|" "$BODIES/call_retry_template.json" > "$TMP/call_retry.json"
  fi
  drive "$c" "$WARM"
  callgrind_control -z "$pid" >/dev/null
  drive "$c" "$N"
  callgrind_control -d "$pid" >/dev/null
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  # The dump after zeroing is the highest-numbered part file.
  # shellcheck disable=SC2010  # ls -v: the part files in numeric order
  part=$(ls -v "$file".* 2>/dev/null | grep -v '\.0*$' | tail -1 || true)
  # shellcheck disable=SC2012  # ls -v as above; the names are this script's own
  [ -n "$part" ] || part=$(ls -v "$file"* | tail -1)
  ir=$(grep -m1 '^summary:\|^totals:' "$part" | awk '{print $2}')
  if [ -n "${CACHE_SIM:-}" ]; then
    # The summary's counts in the order of the events line (Ir Dr Dw I1mr D1mr D1mw ILmr ...).
    awk -v c="$c" -v n="$N" '/^events:/ { for (i = 2; i <= NF; i++) ev[$i] = i }
      /^(summary|totals):/ { printf "%-16s %8d instructions/request  I1 misses %6.0f  LL instruction misses %5.0f  D1 misses %6.0f  LL data misses %5.0f\n",
        c, $2 / n, $(ev["I1mr"]) / n, $(ev["ILmr"]) / n, ($(ev["D1mr"]) + $(ev["D1mw"])) / n, ($(ev["DLmr"]) + $(ev["DLmw"])) / n; exit }' "$part"
    continue
  fi
  # Exclusive cost of sha2's block function (inlined core intrinsics included: callgrind names
  # them by the function they were inlined into).
  # And the allocator's: glibc's malloc.c (malloc, free, realloc and their internals, such as
  # malloc_consolidate), exclusive, so what the caller does with the memory is not in it.
  read -r sha alloc < <(callgrind_annotate --auto=no --inclusive=no --threshold=100 "$part" 2>/dev/null |
    awk '/:sha2::sha256::compress256/ { gsub(",", "", $1); s += $1 }
         /malloc\/malloc\.c:/ { gsub(",", "", $1); a += $1 }
         END { printf "%d %d\n", s, a }')
  # With --dump-instr and absolute positions every cost line starts with the instruction's
  # address: footprint.py counts the distinct lines and pages among them, per object.
  read -r lines pages every _ < <(python3 "$HERE/footprint.py" "$part" "$N")
  printf '%-12s %8d instructions/request  sha256 %6d  without sha256 %8d  malloc/free %6d  code lines %5d (every request %5d)  pages %4d  (%s)\n' \
    "$c" $((ir / N)) $((sha / N)) $(((ir - sha) / N)) $((alloc / N)) "$lines" "$every" "$pages" "$part"
done
