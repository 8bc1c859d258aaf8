#!/usr/bin/env bash
# HTTP load comparison: our bench-server vs the same server on the official Rust SDK (rmcp).
#
# Builds both in release mode, starts each pinned to one core, drives both with the shared kit
# (perf-load.sh, wrk) case by case, alternating which server goes first, and prints one table:
#   case, concurrency, req/s (ours, rmcp), ratio, p99 (ours, rmcp), server CPU us/request,
#   errors (non-2xx responses / socket errors, summed over rounds; must be 0/0),
#   peak RSS (VmHWM) of each process.
# It also writes $RESULTS/http.tsv (one row per server, case and concurrency), http.md (the
# table in Markdown) and http.svg (bench/chart.py: req/s and p99 per case, ours vs rmcp vs the
# floor). Redraw the chart from a saved run with: python3 bench/chart.py bench/results/http.tsv
#
# usage: bench/http.sh
# env:   DURATION=10s         per wrk run (DURATION=3s for a quick run)
#        CONNS="1 32 256 1024"   concurrency levels (keep-alive connections). Both servers take
#                             1024 at once: bench-server sets max_connections 4096 (the
#                             HttpConfig default is 1024), rmcp-notes (axum::serve) has no cap;
#                             the open-file limit is raised below as needed
#        WRK_THREADS=1        wrk threads (one event loop handles 1024 connections; more only
#                             help with more cores in WRK_CPUS)
#        RESULTS=bench/results  where http.tsv, http.md and http.svg go
#        CASES="tools_list call_first call_retry echo"
#        ROUNDS=1             runs per (case, concurrency, server); the median is reported
#        SERVER_CPUS=0        core(s) the servers are pinned to (taskset -c)
#        WRK_CPUS=1           core(s) wrk is pinned to
#        OUR_PORT=8788 RMCP_PORT=8787
#        KIT=/work/shared/bench          the benchmark kit (perf-load.sh, rmcp-notes/)
#        CARGO_TARGET_DIR=<repo>/target  rmcp-notes builds into $CARGO_TARGET_DIR/rmcp-notes[-kit]
#        RMCP_PROFILE=same    build rmcp-notes with the same release settings as ours (this
#                             workspace's [profile.release]: thin LTO, one codegen unit), the fair
#                             default; RMCP_PROFILE=kit builds it as the kit's README does (its own
#                             default release profile, no LTO), which favours ours
#        OUR_ALLOC=system     bench-server's allocator: system (the fair default: rmcp-notes uses the
#                             system allocator) or mimalloc (the `mimalloc` feature of mcp-bench)
#        NO_BUILD=1           skip both builds (use existing binaries; the allocator is checked)
#        FLOOR=1              also run bare-axum (axum + serde_json alone, no MCP) on the echo
#                             request in every round, next to ours, and print its line (from
#                             the echo rounds) under the table: the HTTP stack's own cost and
#                             tail latency on this machine, in the same run. Each case's CPU
#                             ratio over the floor is the median of its per-round ratios, each
#                             against the floor round run beside it, so a machine that drifts
#                             between one case's minutes and another's does not skew it. Two
#                             more lines read the machine itself: the floor's req/s over
#                             rmcp's (the most any server on this HTTP stack can reach over
#                             rmcp here) and each server's kernel CPU per request
#        FLOOR_PORT=8789
# Loopback only; every run is bounded by DURATION (and perf-load's 60 s timeout).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
KIT=${KIT:-/work/shared/bench}
[ -x "$KIT/perf-load.sh" ] || [ -f "$KIT/perf-load.sh" ] || { echo "no benchmark kit at $KIT (set KIT=...)" >&2; exit 2; }
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
RMCP_PROFILE=${RMCP_PROFILE:-same}
case "$RMCP_PROFILE" in
  same)
    # Mirror this workspace's [profile.release] so both servers get the same optimiser.
    grep -q '^lto = "thin"' "$ROOT/Cargo.toml" && grep -q '^codegen-units = 1' "$ROOT/Cargo.toml" || {
      echo "bench/http.sh: [profile.release] in Cargo.toml changed; update RMCP_PROFILE=same to match" >&2; exit 2; }
    RMCP_TARGET=$TARGET/rmcp-notes
    RMCP_ENV=(CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1) ;;
  kit)
    RMCP_TARGET=$TARGET/rmcp-notes-kit
    RMCP_ENV=() ;;
  *) echo "RMCP_PROFILE must be same or kit" >&2; exit 2 ;;
esac
OUR_ALLOC=${OUR_ALLOC:-system}
case "$OUR_ALLOC" in
  system) OUR_FEATURES=(--no-default-features) ;;
  mimalloc) OUR_FEATURES=() ;;
  *) echo "OUR_ALLOC must be system or mimalloc" >&2; exit 2 ;;
esac
export DURATION=${DURATION:-10s}
CONNS=${CONNS:-"1 32 256 1024"}
export THREADS=${WRK_THREADS:-1}
RESULTS=${RESULTS:-$ROOT/bench/results}
CASES=${CASES:-"tools_list call_first call_retry echo"}
ROUNDS=${ROUNDS:-1}
SERVER_CPUS=${SERVER_CPUS:-0}
export WRK_CPUS=${WRK_CPUS:-1}
OUR_PORT=${OUR_PORT:-8788}
RMCP_PORT=${RMCP_PORT:-8787}
FLOOR=${FLOOR:-}
FLOOR_PORT=${FLOOR_PORT:-8789}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
# Every connection is a file descriptor in wrk and in the server (inherited limit): room for
# the largest concurrency plus the servers' own files.
max_conns=$(tr ' ' '\n' <<<"$CONNS" | sort -n | tail -1)
need=$((max_conns + 256))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
  ulimit -n "$need" 2>/dev/null || { echo "open-file limit $(ulimit -n) < $need and cannot be raised (ulimit -Hn: $(ulimit -Hn))" >&2; exit 2; }
fi

if [ -z "${NO_BUILD:-}" ]; then
  echo "building bench-server (release, allocator: $OUR_ALLOC) ..." >&2
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET nice -n 10 cargo build --release -q -p mcp-bench --bin bench-server "${OUR_FEATURES[@]}")
  if [ -n "$FLOOR" ]; then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET nice -n 10 cargo build --release -q -p mcp-bench --bin bare-axum --no-default-features)
  fi
  echo "building rmcp-notes (release, cached-router, profile: $RMCP_PROFILE) ..." >&2
  env "${RMCP_ENV[@]}" CARGO_TARGET_DIR="$RMCP_TARGET" nice -n 10 cargo build --release -q \
    --manifest-path "$KIT/rmcp-notes/Cargo.toml" --features cached-router
fi
OUR_BIN=$TARGET/release/bench-server
FLOOR_BIN=$TARGET/release/bare-axum
RMCP_BIN=$RMCP_TARGET/release/rmcp-notes
[ -x "$OUR_BIN" ] && [ -x "$RMCP_BIN" ] || { echo "missing $OUR_BIN or $RMCP_BIN" >&2; exit 2; }

TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

start() { # start NAME BIN PORT -> sets PID_<NAME>
  taskset -c "$SERVER_CPUS" "$2" "127.0.0.1:$3" 2>"$TMP/$1.log" &
  local pid=$!
  PIDS+=("$pid")
  printf -v "PID_$1" '%s' "$pid"
  for _ in $(seq 100); do
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$3/mcp" -X POST -d '{}' 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "$1 exited:" >&2; cat "$TMP/$1.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$1 did not come up on port $3" >&2; exit 1
}
start ours "$OUR_BIN" "$OUR_PORT"
start rmcp "$RMCP_BIN" "$RMCP_PORT"
grep -q "allocator: $OUR_ALLOC" "$TMP/ours.log" || {
  echo "bench-server was not built with OUR_ALLOC=$OUR_ALLOC: $(head -1 "$TMP/ours.log")" >&2; exit 2; }
echo "ours: pid $PID_ours ($(head -1 "$TMP/ours.log"))" >&2
echo "rmcp: pid $PID_rmcp" >&2
if [ -n "$FLOOR" ]; then
  [ -x "$FLOOR_BIN" ] || { echo "missing $FLOOR_BIN (build: cargo build --release -p mcp-bench --bin bare-axum)" >&2; exit 2; }
  start floor "$FLOOR_BIN" "$FLOOR_PORT"
  echo "floor: pid $PID_floor ($(head -1 "$TMP/floor.log"))" >&2
fi

ticks() { awk '{print $14 + $15, $15}' "/proc/$1/stat"; } # user + system CPU, system CPU, in clock ticks

run_one() { # run_one NAME PORT CASE CONNS -> "rps p99 cpu_us non2xx sockerr sys_us"
  local pid_var="PID_$1" out err t1 t2 k1 k2
  read -r t1 k1 < <(ticks "${!pid_var}")
  out=$(SERVER_PID=${!pid_var} CONNS=$4 CASES=$3 bash "$KIT/perf-load.sh" "http://127.0.0.1:$2/mcp" 2>"$TMP/err") || {
    echo "perf-load failed for $1 $3 c=$4:" >&2; cat "$TMP/err" >&2; exit 1; }
  read -r t2 k2 < <(ticks "${!pid_var}")
  err=$(cat "$TMP/err")
  local rps p99 cpu sys n non2xx sockerr
  read -r _ rps _ p99 <<<"$out"
  # Server CPU per request to 0.1 us (the kit rounds to whole microseconds, too coarse for
  # ratios near 10 us): ticks over the whole call (its few probe requests are noise) over
  # wrk's request count.
  n=$(sed -n 's/.* n=\([0-9]*\) .*/\1/p' <<<"$err")
  cpu=$(awk -v d=$((t2 - t1)) -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (n > 0) printf "%.1f", d * 1000000 / hz / n; else print "?" }')
  # The kernel's share of it (system time: on loopback mostly TCP, both ends' receive path
  # and waking the peer), which no server code above the socket can remove.
  sys=$(awk -v d=$((k2 - k1)) -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (n > 0) printf "%.1f", d * 1000000 / hz / n; else print "?" }')
  non2xx=$(sed -n 's/.*non2xx=\([0-9]*\).*/\1/p' <<<"$err")
  sockerr=$(sed -n 's/.*sockerr=\([0-9]*\).*/\1/p' <<<"$err")
  grep -q 'non2xx=0 sockerr=0' <<<"$err" || echo "warning: $1 $3 c=$4: $err" >&2
  echo "$rps $p99 ${cpu:-?} ${non2xx:-?} ${sockerr:-?} ${sys:-?}"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

round=0
declare -A RES
for c in $CONNS; do
  for k in $CASES; do
    for r in $(seq "$ROUNDS"); do
      round=$((round + 1))
      # Alternate which server is loaded first, so drift on a shared machine hits both.
      if [ $((round % 2)) -eq 1 ]; then order="ours rmcp"; else order="rmcp ours"; fi
      # The floor runs beside ours in every case's rounds (always on echo, the one request
      # it answers): its figure for case k, round r is RES[floor,k,c,r].
      if [ -n "$FLOOR" ]; then
        if [ $((round % 2)) -eq 1 ]; then order="floor $order"; else order="$order floor"; fi
      fi
      for s in $order; do
        port_var=${s^^}_PORT; [ "$s" = ours ] && port_var=OUR_PORT
        load=$k; [ "$s" = floor ] && load=echo
        RES[$s,$k,$c,$r]=$(run_one "$s" "${!port_var}" "$load" "$c")
        echo "  $s $load c=$c round $r: ${RES[$s,$k,$c,$r]}" >&2
      done
    done
  done
done

hwm() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }
RSS_OURS=$(hwm "$PID_ours"); RSS_RMCP=$(hwm "$PID_rmcp")

col() { # col SERVER CASE CONC FIELD -> the median over rounds
  for r in $(seq "$ROUNDS"); do awk -v i="$4" '{print $i}' <<<"${RES[$1,$2,$3,$r]}"; done | median
}
errs() { # errs SERVER CASE CONC -> "non2xx/sockerr", summed over rounds
  for r in $(seq "$ROUNDS"); do echo "${RES[$1,$2,$3,$r]}"; done | awk '{n += $4; s += $5} END {printf "%d/%d", n, s}'
}
mkdir -p "$RESULTS"
TSV=$RESULTS/http.tsv MD=$RESULTS/http.md
printf 'server\tcase\tconc\trps\tp99_ms\tcpu_us\tnon2xx\tsockerr\tsys_us\n' >"$TSV"
{
  echo "| case | conc | ours req/s | rmcp req/s | ratio | ours p99 | rmcp p99 | ours CPU/req | rmcp CPU/req | ours errors | rmcp errors | ours peak RSS | rmcp peak RSS |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$MD"
printf '\n%-11s %4s %10s %10s %6s %9s %9s %8s %8s %9s %9s %10s %10s\n' \
  case conc ours_rps rmcp_rps ratio ours_p99 rmcp_p99 ours_us rmcp_us ours_err rmcp_err ours_rss rmcp_rss
for c in $CONNS; do
  for k in $CASES; do
    o_rps=$(col ours "$k" "$c" 1); r_rps=$(col rmcp "$k" "$c" 1)
    o_p99=$(col ours "$k" "$c" 2); r_p99=$(col rmcp "$k" "$c" 2)
    o_cpu=$(col ours "$k" "$c" 3); r_cpu=$(col rmcp "$k" "$c" 3)
    o_err=$(errs ours "$k" "$c"); r_err=$(errs rmcp "$k" "$c")
    ratio=$(awk -v a="$o_rps" -v b="$r_rps" 'BEGIN {printf "%.2fx", (b > 0 ? a / b : 0)}')
    printf '%-11s %4s %10s %10s %6s %7sms %7sms %8s %8s %9s %9s %8sMB %8sMB\n' \
      "$k" "$c" "$o_rps" "$r_rps" "$ratio" "$o_p99" "$r_p99" "$o_cpu" "$r_cpu" "$o_err" "$r_err" "$RSS_OURS" "$RSS_RMCP"
    printf '| %s | %s | %s | %s | %s | %s ms | %s ms | %s us | %s us | %s | %s | %s MB | %s MB |\n' \
      "$k" "$c" "$o_rps" "$r_rps" "$ratio" "$o_p99" "$r_p99" "$o_cpu" "$r_cpu" "$o_err" "$r_err" "$RSS_OURS" "$RSS_RMCP" >>"$MD"
    for s in ours rmcp; do
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$k" "$c" "$(col "$s" "$k" "$c" 1)" "$(col "$s" "$k" "$c" 2)" \
        "$(col "$s" "$k" "$c" 3)" "$(errs "$s" "$k" "$c" | tr '/' '\t')" "$(col "$s" "$k" "$c" 6)" >>"$TSV"
    done
  done
done
if [ -n "$FLOOR" ] && [[ " $CASES " == *" echo "* ]]; then
  for c in $CONNS; do
    f_err=$(errs floor echo "$c")
    printf '%-11s %4s %10s %10s %6s %7sms %9s %8s %8s %9s\n' "floor:echo" "$c" "$(col floor echo "$c" 1)" "-" "-" \
      "$(col floor echo "$c" 2)" "-" "$(col floor echo "$c" 3)" "-" "$f_err"
    printf '| floor: bare axum, echo | %s | %s | | | %s ms | | %s us | | %s | | | |\n' \
      "$c" "$(col floor echo "$c" 1)" "$(col floor echo "$c" 2)" "$(col floor echo "$c" 3)" "$f_err" >>"$MD"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' floor echo "$c" "$(col floor echo "$c" 1)" "$(col floor echo "$c" 2)" \
      "$(col floor echo "$c" 3)" "$(errs floor echo "$c" | tr '/' '\t')" "$(col floor echo "$c" 6)" >>"$TSV"
  done
fi
ratios() { # ratios A B FIELD CONC -> " case 1.23x ..." per case: the median over rounds of
  # A's FIELD over B's, each pair from the same round (so drift between rounds cancels)
  local k r x out=""
  for k in $CASES; do
    x=$(for r in $(seq "$ROUNDS"); do
      awk -v a="$(awk -v i="$3" '{print $i}' <<<"${RES[$1,$k,$4,$r]}")" \
        -v b="$(awk -v i="$3" '{print $i}' <<<"${RES[$2,$k,$4,$r]}")" 'BEGIN {printf "%.4f\n", (b > 0 ? a / b : 0)}'
    done | median)
    out+=$(awk -v x="$x" -v k="$k" 'BEGIN {printf " %s %.2fx", k, x}')
  done
  echo "$out"
}
if [ -n "$FLOOR" ]; then
  echo >>"$MD"
  for c in $CONNS; do
    # Issue 22's yardstick: each case's CPU per request over the floor round run beside it.
    line="CPU per request over the floor's at c=$c (median of per-round ratios):$(ratios ours floor 3 "$c")"
    echo "$line"
    echo "$line  " >>"$MD"
    # What 'N x rmcp' can mean on this machine: the floor's own req/s over rmcp's. A server
    # that cost exactly what the HTTP stack alone costs would reach this and no more, so a
    # goal above it is out of reach here whatever the MCP layer does.
    line="Floor req/s over rmcp's at c=$c (median of per-round ratios; the ceiling for any server on this stack here):$(ratios floor rmcp 1 "$c")"
    echo "$line"
    echo "$line  " >>"$MD"
    line="Kernel (system) CPU per request at c=$c, us, ours/rmcp/floor (medians over rounds):"
    for k in $CASES; do
      line+=" $k $(col ours "$k" "$c" 6)/$(col rmcp "$k" "$c" 6)/$(col floor "$k" "$c" 6)"
    done
    echo "$line"
    echo "$line  " >>"$MD"
  done
fi
echo
echo "ours = bench-server (allocator: $OUR_ALLOC; benchmark mode: one-time replay claim skipped; all other checks run)"
[ -n "$FLOOR" ] && echo "floor = bare-axum: axum + serde_json alone, no MCP checks (its line uses the ours_* columns)"
echo "rmcp = rmcp-notes (rmcp 3.11.0, cached-router, build profile: $RMCP_PROFILE); servers on core(s) $SERVER_CPUS, wrk on $WRK_CPUS ($THREADS thread(s));" \
     "DURATION=$DURATION ROUNDS=$ROUNDS; rss = peak VmHWM over the whole run; us = server CPU per request;" \
     "errors = non-2xx responses/socket errors (connect, read, write, timeout), summed over rounds"
python3 "$ROOT/bench/chart.py" "$TSV" "$RESULTS/http.svg"
echo "results: $TSV, $MD, $RESULTS/http.svg" >&2
