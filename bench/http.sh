#!/usr/bin/env bash
# HTTP load comparison, every server in the same run: our bench-server, the same server on the
# official Rust SDK (rmcp), on the official TypeScript SDK (@modelcontextprotocol/server 2.x,
# Node; bench/peers/typescript) and on the official Python SDK (mcp 2.x under uvicorn;
# bench/peers/python), and with FLOOR=1 the bare-axum floor.
#
# Builds what it needs (release Rust binaries; `npm ci` and a hashed `pip install` from the
# peers' lock files), starts each server pinned to the same core, drives them with the shared
# kit (perf-load.sh, wrk) case by case, alternating the order by round, and prints one table:
# one row per case, concurrency and server with req/s, p50, p99, server CPU us/request, each
# server's CPU per request and req/s against ours (medians of per-round ratios), errors
# (non-2xx responses / socket errors, summed over rounds; must be 0/0) and peak RSS (VmHWM).
# It also writes $RESULTS/http.tsv (one row per server, case and concurrency), http.md (the
# table in Markdown) and http.svg (bench/chart.py: req/s, p50, p99 and CPU per request per
# case, and peak RSS, every server). Redraw the chart from a saved run with:
#   python3 bench/chart.py bench/results/http.tsv
# Exits 3 (after writing everything) when any server had an error in any cell.
#
# usage: bench/http.sh
# env:   DURATION=10s         per wrk run (DURATION=3s for a quick run)
#        CONNS="1 32 256 1024"   concurrency levels (keep-alive connections). Every server takes
#                             1024 at once: bench-server sets max_connections 4096 (the
#                             HttpConfig default is 1024), rmcp-notes (axum::serve), node:http
#                             and uvicorn have no cap;
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
#        NO_BUILD=1           skip the Rust builds (use existing binaries; the allocator is checked)
#        PGO=1                the three Rust servers (ours, the floor, rmcp-notes) as
#                             profile-guided builds, each trained on its own load by
#                             bench/pgo.sh (needs `rustup component add llvm-tools`; about 15
#                             minutes more), from $CARGO_TARGET_DIR/pgo/release; needs the
#                             fair defaults OUR_ALLOC=system and RMCP_PROFILE=same. The
#                             TypeScript and Python peers run as always
#        BOLT=1               with PGO=1: the three profile-guided servers also laid out
#                             again after linking by LLVM BOLT, each on its own load
#                             (bench/pgo.sh BOLT=1; needs llvm-bolt), from
#                             $CARGO_TARGET_DIR/pgo/bolt
#        FLOOR=1              also run bare-axum (axum + serde_json alone, no MCP) on the echo
#                             request in every round, next to ours, and print its line (from
#                             the echo rounds) under the table: the HTTP stack's own cost and
#                             tail latency on this machine, in the same run. Each case's CPU
#                             ratio over the floor is the median of its per-round ratios, each
#                             against the floor round run beside it, so a machine that drifts
#                             between one case's minutes and another's does not skew it. Two
#                             more lines read the machine itself: the floor's req/s over
#                             rmcp's (the most any server on this HTTP stack can reach over
#                             rmcp here) and each server's kernel CPU per request.
#                             The same bare-axum also runs every other case on that case's own
#                             request, answering with ours' reply captured before the rounds
#                             (row "bytes"): the HTTP stack and a generic JSON round trip for
#                             those bytes. Ours' CPU above the floor is then split into the
#                             case's bytes (bytes - floor) and the MCP work (ours - bytes)
#        FLOOR_PORT=8789
#        PEERS="ts py"        the official-SDK peers to run besides rmcp (ts: TypeScript SDK on
#                             Node >= 20; py: Python SDK on Python >= 3.10). A peer whose
#                             runtime or packages are missing is skipped with the reason printed
#        REQUIRE_PEERS=1      fail instead of skipping a peer
#        TS_PORT=8792 PY_PORT=8793
#        NODE=node PYTHON=python3   the interpreters the peers are set up with
#        WRK_TIMEOUT=10s      wrk's per-request timeout, for every server (wrk's own default, 2 s,
#                             counts the slower peers' queueing at c=256 as socket errors: a
#                             slow answer belongs in p99, not in the errors). The kit's
#                             perf-load.sh does not set it, so a wrapper named wrk that adds
#                             --timeout goes first on its PATH
#        WARMUP=2s            before the first measured round, each server serves each case for
#                             this long at c=min(32, largest CONNS), unmeasured: Node's JIT (and
#                             every server's caches and allocator) start warm. WARMUP=0 skips it
#        NO_INSTALL=1         do not install the peers' packages (npm ci, pip), use what is
#                             there; without it they are installed only when missing or stale
#        DURABLE=1            afterwards also run bench/durable.sh (the durable path per store,
#                             with its ratio to the memory store) and append its table to http.md;
#                             DURABLE_ENV="NOTES=... CONNS=..." passes settings to it
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
PEERS=${PEERS-"ts py"}
REQUIRE_PEERS=${REQUIRE_PEERS:-}
TS_PORT=${TS_PORT:-8792}
PY_PORT=${PY_PORT:-8793}
NODE=${NODE:-node}
PYTHON=${PYTHON:-python3}
TS_DIR=$ROOT/bench/peers/typescript
PY_DIR=$ROOT/bench/peers/python
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
# Every connection is a file descriptor in wrk and in the server (inherited limit): room for
# the largest concurrency plus the servers' own files.
max_conns=$(tr ' ' '\n' <<<"$CONNS" | sort -n | tail -1)
need=$((max_conns + 256))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
  ulimit -n "$need" 2>/dev/null || { echo "open-file limit $(ulimit -n) < $need and cannot be raised (ulimit -Hn: $(ulimit -Hn))" >&2; exit 2; }
fi

PGO=${PGO:-}
BOLT=${BOLT:-}
[ -z "$BOLT" ] || [ -n "$PGO" ] || { echo "bench/http.sh: BOLT=1 lays out the profile-guided builds: set PGO=1 too" >&2; exit 2; }
if [ -n "$PGO" ]; then
  [ "$OUR_ALLOC" = system ] && [ "$RMCP_PROFILE" = same ] || {
    echo "bench/http.sh: PGO=1 builds with OUR_ALLOC=system and RMCP_PROFILE=same only" >&2; exit 2; }
  if [ -z "${NO_BUILD:-}" ]; then
    echo "profile-guided builds of ours, the floor and rmcp-notes (bench/pgo.sh) ..." >&2
    BOLT=$BOLT KIT=$KIT CARGO_TARGET_DIR=$TARGET nice -n 10 bash "$ROOT/bench/pgo.sh" >/dev/null
  fi
  PGO_DIR=$TARGET/pgo/release
  [ -z "$BOLT" ] || PGO_DIR=$TARGET/pgo/bolt
  OUR_BIN=$PGO_DIR/bench-server
  FLOOR_BIN=$PGO_DIR/bare-axum
  RMCP_BIN=$PGO_DIR/rmcp-notes
elif [ -z "${NO_BUILD:-}" ]; then
  echo "building bench-server (release, allocator: $OUR_ALLOC) ..." >&2
  (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET nice -n 10 cargo build --release -q -p mcp-bench --bin bench-server "${OUR_FEATURES[@]}")
  if [ -n "$FLOOR" ]; then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET nice -n 10 cargo build --release -q -p mcp-bench --bin bare-axum --no-default-features)
  fi
  echo "building rmcp-notes (release, cached-router, profile: $RMCP_PROFILE) ..." >&2
  env "${RMCP_ENV[@]}" CARGO_TARGET_DIR="$RMCP_TARGET" nice -n 10 cargo build --release -q \
    --manifest-path "$KIT/rmcp-notes/Cargo.toml" --features cached-router
fi
if [ -z "$PGO" ]; then
  OUR_BIN=$TARGET/release/bench-server
  FLOOR_BIN=$TARGET/release/bare-axum
  RMCP_BIN=$RMCP_TARGET/release/rmcp-notes
fi
[ -x "$OUR_BIN" ] && [ -x "$RMCP_BIN" ] || { echo "missing $OUR_BIN or $RMCP_BIN" >&2; exit 2; }

# The official-SDK peers. Each setup function installs the peer's pinned packages when they
# are missing or stale (unless NO_INSTALL) and checks it can start; on failure it leaves the
# reason in SKIP_REASON.
SKIP_REASON=
setup_ts() {
  command -v "$NODE" >/dev/null || { SKIP_REASON="$NODE not found (Node >= 20 needed)"; return 1; }
  local major
  major=$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null) || major=0
  [ "$major" -ge 20 ] || { SKIP_REASON="Node $("$NODE" --version 2>/dev/null) is older than 20"; return 1; }
  # npm keeps a copy of the lock it installed from in node_modules/.package-lock.json: a
  # newer package-lock.json means the install is stale.
  if [ -z "${NO_INSTALL:-}" ] && { [ ! -f "$TS_DIR/node_modules/.package-lock.json" ] ||
       [ "$TS_DIR/package-lock.json" -nt "$TS_DIR/node_modules/.package-lock.json" ]; }; then
    command -v npm >/dev/null || { SKIP_REASON="npm not found"; return 1; }
    echo "installing the TypeScript peer's packages (npm ci, from package-lock.json) ..." >&2
    (cd "$TS_DIR" && timeout 600 npm ci --no-audit --no-fund --loglevel=error >"$TMP/npm.log" 2>&1) || {
      SKIP_REASON="npm ci failed: $(tail -3 "$TMP/npm.log" | tr '\n' ' ')"; return 1; }
  fi
  [ -f "$TS_DIR/node_modules/@modelcontextprotocol/server/package.json" ] || {
    SKIP_REASON="$TS_DIR/node_modules is not installed (run without NO_INSTALL, or: cd bench/peers/typescript && npm ci)"; return 1; }
}
setup_py() {
  command -v "$PYTHON" >/dev/null || { SKIP_REASON="$PYTHON not found (Python >= 3.10 needed)"; return 1; }
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || {
    SKIP_REASON="$("$PYTHON" --version 2>&1) is older than 3.10"; return 1; }
  local venv=$PY_DIR/.venv
  # The venv remembers the lock it was installed from; a different lock means reinstall.
  if [ -z "${NO_INSTALL:-}" ] && ! cmp -s "$PY_DIR/requirements.lock" "$venv/installed.lock"; then
    echo "installing the Python peer's packages (pip --require-hashes, from requirements.lock) ..." >&2
    { [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"; } >"$TMP/pip.log" 2>&1 &&
      timeout 600 "$venv/bin/python" -m pip install -q --disable-pip-version-check --require-hashes \
        --no-deps -r "$PY_DIR/requirements.lock" >>"$TMP/pip.log" 2>&1 || {
      SKIP_REASON="venv or pip install failed: $(tail -3 "$TMP/pip.log" | tr '\n' ' ')"; return 1; }
    cp "$PY_DIR/requirements.lock" "$venv/installed.lock"
  fi
  [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import mcp, uvicorn, uvloop, httptools' 2>/dev/null || {
    SKIP_REASON="$venv lacks the locked packages (run without NO_INSTALL, or see bench/README.md)"; return 1; }
}

TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

WRK_TIMEOUT=${WRK_TIMEOUT:-10s}
mkdir -p "$TMP/bin"
printf '#!/bin/sh\nexec %q --timeout %q "$@"\n' "$(command -v wrk)" "$WRK_TIMEOUT" >"$TMP/bin/wrk"
chmod +x "$TMP/bin/wrk"
export PATH=$TMP/bin:$PATH

# SERVERS: the MCP servers measured on every case, in table order; floor is apart.
SERVERS=(ours rmcp)
SKIPPED=()
for peer in $PEERS; do
  case "$peer" in
    ts|py) ;;
    *) echo "unknown peer $peer (PEERS takes ts and py)" >&2; exit 2 ;;
  esac
  if "setup_$peer"; then
    SERVERS+=("$peer")
  else
    [ -n "$REQUIRE_PEERS" ] && { echo "peer $peer: $SKIP_REASON (REQUIRE_PEERS is set)" >&2; exit 2; }
    echo "skipping peer $peer: $SKIP_REASON" >&2
    SKIPPED+=("$peer: $SKIP_REASON")
  fi
done

declare -A PORT=([ours]=$OUR_PORT [rmcp]=$RMCP_PORT [floor]=$FLOOR_PORT [ts]=$TS_PORT [py]=$PY_PORT)
declare -A CMD=([ours]="$OUR_BIN" [rmcp]="$RMCP_BIN" [floor]="$FLOOR_BIN"
                [ts]="$NODE $TS_DIR/server.mjs" [py]="$PY_DIR/.venv/bin/python $PY_DIR/server.py")
declare -A PID
start() { # start NAME: the server's command with its address, pinned; waits until it answers
  local name=$1 port=${PORT[$1]} pid
  # shellcheck disable=SC2086 # CMD holds a program and its script, no spaces inside either
  taskset -c "$SERVER_CPUS" ${CMD[$name]} "127.0.0.1:$port" 2>"$TMP/$name.log" &
  pid=$!
  PIDS+=("$pid")
  PID[$name]=$pid
  # Interpreted peers take a few seconds to import their SDK on a busy machine.
  for _ in $(seq 300); do
    if curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/mcp" -X POST -d '{}' 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || { echo "$name exited:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$name did not come up on port $port" >&2; exit 1
}
for s in "${SERVERS[@]}"; do start "$s"; done
grep -q "allocator: $OUR_ALLOC" "$TMP/ours.log" || {
  echo "bench-server was not built with OUR_ALLOC=$OUR_ALLOC: $(head -1 "$TMP/ours.log")" >&2; exit 2; }
if [ -n "$FLOOR" ]; then
  [ -x "$FLOOR_BIN" ] || { echo "missing $FLOOR_BIN (build: cargo build --release -p mcp-bench --bin bare-axum)" >&2; exit 2; }
  # The floor on each case's own bytes: ours' replies, captured now, for bare-axum to send back.
  # shellcheck source-path=SCRIPTDIR source=replies.sh
  . "$ROOT/bench/replies.sh"
  capture_replies "http://127.0.0.1:$OUR_PORT/mcp" "$KIT/perf-bodies" "$TMP/replies" || exit 1
  CMD[floor]="$FLOOR_BIN --replies $TMP/replies"
  start floor
fi
declare -A BANNER
for s in "${SERVERS[@]}" ${FLOOR:+floor}; do
  BANNER[$s]=$(grep -m1 'listening' "$TMP/$s.log" || true)
  echo "$s: pid ${PID[$s]} (${BANNER[$s]:-no banner})" >&2
done

ticks() { awk '{print $14 + $15, $15}' "/proc/$1/stat"; } # user + system CPU, system CPU, in clock ticks

run_one() { # run_one NAME CASE CONNS -> "rps p99 cpu_us non2xx sockerr sys_us p50"
  local pid=${PID[$1]} out err t1 t2 k1 k2
  read -r t1 k1 < <(ticks "$pid")
  out=$(SERVER_PID=$pid CONNS=$3 CASES=$2 bash "$KIT/perf-load.sh" "http://127.0.0.1:${PORT[$1]}/mcp" 2>"$TMP/err") || {
    echo "perf-load failed for $1 $2 c=$3:" >&2; cat "$TMP/err" >&2; exit 1; }
  read -r t2 k2 < <(ticks "$pid")
  err=$(cat "$TMP/err")
  local rps p50 p99 cpu sys n non2xx sockerr
  read -r _ rps p50 p99 <<<"$out"
  # Server CPU per request to 0.1 us (the kit rounds to whole microseconds, too coarse for
  # ratios near 10 us): ticks over the whole call (its few probe requests are noise) over
  # wrk's request count. Every thread of the process counts (Node's and V8's helper threads,
  # uvicorn's loop), all pinned to the same core(s).
  n=$(sed -n 's/.* n=\([0-9]*\) .*/\1/p' <<<"$err")
  cpu=$(awk -v d=$((t2 - t1)) -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (n > 0) printf "%.1f", d * 1000000 / hz / n; else print "?" }')
  # The kernel's share of it (system time: on loopback mostly TCP, both ends' receive path
  # and waking the peer), which no server code above the socket can remove.
  sys=$(awk -v d=$((k2 - k1)) -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { if (n > 0) printf "%.1f", d * 1000000 / hz / n; else print "?" }')
  non2xx=$(sed -n 's/.*non2xx=\([0-9]*\).*/\1/p' <<<"$err")
  sockerr=$(sed -n 's/.*sockerr=\([0-9]*\).*/\1/p' <<<"$err")
  grep -q 'non2xx=0 sockerr=0' <<<"$err" || echo "warning: $1 $2 c=$3: $err" >&2
  echo "$rps $p99 ${cpu:-?} ${non2xx:-?} ${sockerr:-?} ${sys:-?} $p50"
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

WARMUP=${WARMUP:-2s}
if [ "$WARMUP" != 0 ]; then
  warm_conns=$(( max_conns < 32 ? max_conns : 32 ))
  echo "warming up every server: $WARMUP per case at c=$warm_conns, not measured ..." >&2
  for s in "${SERVERS[@]}" ${FLOOR:+floor}; do
    for k in $CASES; do
      DURATION=$WARMUP CONNS=$warm_conns CASES=$k bash "$KIT/perf-load.sh" "http://127.0.0.1:${PORT[$s]}/mcp" \
        >/dev/null 2>"$TMP/err" || { echo "warm-up failed for $s $k:" >&2; cat "$TMP/err" >&2; exit 1; }
    done
  done
fi

# Order of a round: the floor next to ours (its ratio is taken against ours' round), the rest
# after; reversed every other round so drift on a shared machine hits every server alike.
FORWARD=(${FLOOR:+floor} ${FLOOR:+bytes} "${SERVERS[@]}")
round=0
declare -A RES
for c in $CONNS; do
  for k in $CASES; do
    for r in $(seq "$ROUNDS"); do
      round=$((round + 1))
      if [ $((round % 2)) -eq 1 ]; then order="${FORWARD[*]}"; else order=$(printf '%s\n' "${FORWARD[@]}" | tac | tr '\n' ' '); fi
      for s in $order; do
        # The floor is bare-axum on echo whatever the case: its figure for case k, round r is
        # RES[floor,k,c,r]. "bytes" is the same process on case k's own request and reply;
        # on echo the two are one run.
        load=$k; proc=$s
        case $s in
          floor) load="echo" ;;
          bytes) proc=floor; [ "$k" = echo ] && continue ;;
        esac
        RES[$s,$k,$c,$r]=$(run_one "$proc" "$load" "$c")
        echo "  $s $load c=$c round $r: ${RES[$s,$k,$c,$r]}" >&2
      done
      if [ -n "$FLOOR" ] && [ "$k" = echo ]; then RES[bytes,$k,$c,$r]=${RES[floor,$k,$c,$r]}; fi
    done
  done
done

hwm() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$1/status"; }
declare -A RSS
for s in "${SERVERS[@]}" ${FLOOR:+floor}; do RSS[$s]=$(hwm "${PID[$s]}"); done

col() { # col SERVER CASE CONC FIELD -> the median over rounds
  for r in $(seq "$ROUNDS"); do awk -v i="$4" '{print $i}' <<<"${RES[$1,$2,$3,$r]}"; done | median
}
errs() { # errs SERVER CASE CONC -> "non2xx/sockerr", summed over rounds
  for r in $(seq "$ROUNDS"); do echo "${RES[$1,$2,$3,$r]}"; done | awk '{n += $4; s += $5} END {printf "%d/%d", n, s}'
}
ratio() { # ratio A B CASE CONC FIELD -> A's FIELD over B's, the median over rounds of the
  # per-round ratios (each pair from the same round, so drift between rounds cancels)
  local r x
  x=$(for r in $(seq "$ROUNDS"); do
    awk -v a="$(awk -v i="$5" '{print $i}' <<<"${RES[$1,$3,$4,$r]}")" \
      -v b="$(awk -v i="$5" '{print $i}' <<<"${RES[$2,$3,$4,$r]}")" 'BEGIN {printf "%.4f\n", (b > 0 ? a / b : 0)}'
  done | median)
  awk -v x="$x" 'BEGIN {printf "%.2fx", x}'
}
ratios() { # ratios A B FIELD CONC -> " case 1.23x ..." per case
  local k out=""
  for k in $CASES; do out+=" $k $(ratio "$1" "$2" "$k" "$4" "$3")"; done
  echo "$out"
}
declare -A NAME=([ours]="ours (mcp-runtime)" [rmcp]="rmcp 3.11.0" [floor]="floor: bare axum, echo"
                 [bytes]="floor on this case's bytes"
                 [ts]="TypeScript SDK" [py]="Python SDK")
mkdir -p "$RESULTS"
TSV=$RESULTS/http.tsv MD=$RESULTS/http.md
printf 'server\tcase\tconc\trps\tp99_ms\tcpu_us\tnon2xx\tsockerr\tsys_us\tp50_ms\trss_mb\n' >"$TSV"
{
  echo "| case | conc | server | req/s | p50 | p99 | CPU/req | CPU/req over ours | ours' req/s over this | errors | peak RSS |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} >"$MD"
printf '\n%-11s %4s %-6s %9s %8s %8s %8s %9s %9s %7s %9s\n' \
  case conc server rps p50 p99 cpu_us cpu/ours ours/rps errors rss
ERRORS=()
for c in $CONNS; do
  for k in $CASES; do
    rows=("${SERVERS[@]}")
    # The floor's row sits under echo (from the echo rounds); under every other case, the
    # floor carrying that case's own request and reply.
    if [ -n "$FLOOR" ]; then if [ "$k" = echo ]; then rows+=(floor); else rows+=(bytes); fi; fi
    for s in "${rows[@]}"; do
      rps=$(col "$s" "$k" "$c" 1); p99=$(col "$s" "$k" "$c" 2); cpu=$(col "$s" "$k" "$c" 3)
      p50=$(col "$s" "$k" "$c" 7); e=$(errs "$s" "$k" "$c")
      [ "$e" = 0/0 ] || ERRORS+=("$s $k c=$c: $e")
      if [ "$s" = ours ]; then vcpu=-; vrps=-; else vcpu=$(ratio "$s" ours "$k" "$c" 3); vrps=$(ratio ours "$s" "$k" "$c" 1); fi
      # bytes is the floor's process: its peak RSS is the floor's, shown once.
      rss=${RSS[$s]:-}
      printf '%-11s %4s %-6s %9s %6sms %6sms %8s %9s %9s %7s %7sMB\n' \
        "$k" "$c" "$s" "$rps" "$p50" "$p99" "$cpu" "$vcpu" "$vrps" "$e" "${rss:--}"
      printf '| %s | %s | %s | %s | %s ms | %s ms | %s us | %s | %s | %s | %s MB |\n' \
        "$k" "$c" "${NAME[$s]}" "$rps" "$p50" "$p99" "$cpu" "$vcpu" "$vrps" "$e" "${rss:--}" >>"$MD"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$k" "$c" "$rps" "$p99" "$cpu" \
        "$(tr '/' '\t' <<<"$e")" "$(col "$s" "$k" "$c" 6)" "$p50" "$rss" >>"$TSV"
    done
  done
done
echo >>"$MD"
for c in $CONNS; do
  # The headline: every peer's CPU per request over ours, per case.
  line="Server CPU per request over ours at c=$c (median of per-round ratios):"
  for s in "${SERVERS[@]}"; do [ "$s" = ours ] || line+=" $s:$(ratios "$s" ours 3 "$c");"; done
  echo "$line"
  echo "$line  " >>"$MD"
done
if [ -n "$FLOOR" ]; then
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
    # The goals, checked: CPU per request at most 1.5x the floor's for the MRTR legs and 1.1x
    # for the others; at c=1 also p50 within 10% of the floor's.
    line="Goals at c=$c:"
    for k in $CASES; do
      limit=1.10; case $k in call_*) limit=1.50 ;; esac
      x=$(ratio ours floor "$k" "$c" 3); x=${x%x}
      line+=" $k CPU ${x}x (<= ${limit}x $(awk -v x="$x" -v l="$limit" 'BEGIN {print (x <= l ? "met" : "NOT met")}'))"
      if [ "$c" = 1 ]; then
        x=$(ratio ours floor "$k" "$c" 7); x=${x%x}
        line+=" p50 ${x}x ($(awk -v x="$x" 'BEGIN {print (x <= 1.10 ? "met" : "NOT met")}'));"
      else
        line+=";"
      fi
    done
    echo "$line"
    echo "$line  " >>"$MD"
    # Where ours' CPU above the floor goes: the floor on the case's own bytes costs what the
    # HTTP stack and a generic JSON round trip cost for that request and reply; the rest of
    # ours is the MCP work (checks, state, digests, the tool). Medians over rounds, us.
    line="Ours' CPU per request over the floor on the same bytes at c=$c (median of per-round ratios):$(ratios ours bytes 3 "$c")"
    echo "$line"
    echo "$line  " >>"$MD"
    line="Ours' CPU per request above the floor at c=$c, us, split into the case's bytes through the stack + the MCP work (medians over rounds):"
    for k in $CASES; do
      line+=" $k $(awk -v o="$(col ours "$k" "$c" 3)" -v f="$(col floor "$k" "$c" 3)" -v b="$(col bytes "$k" "$c" 3)" \
        'BEGIN {printf "%.1f = %.1f + %.1f;", o - f, b - f, o - b}')"
    done
    echo "$line"
    echo "$line  " >>"$MD"
    if [ "$c" = 1 ]; then
      line="Ours' p50 over the floor on the same bytes at c=1 (median of per-round ratios):$(ratios ours bytes 7 1)"
      echo "$line"
      echo "$line  " >>"$MD"
    fi
    line="Kernel (system) CPU per request at c=$c, us, $(IFS=/; echo "${SERVERS[*]}")/floor/floor on the case's bytes (medians over rounds):"
    for k in $CASES; do
      v=""; for s in "${SERVERS[@]}" floor bytes; do v+="${v:+/}$(col "$s" "$k" "$c" 6)"; done
      line+=" $k $v"
    done
    echo "$line"
    echo "$line  " >>"$MD"
  done
fi
{
  echo
  echo "ours = bench-server (allocator: $OUR_ALLOC; benchmark mode: one-time replay claim skipped; all other checks run)"
  [ -n "$PGO" ] && echo "PGO=1: ours, the floor and rmcp are profile-guided builds (bench/pgo.sh), each trained on its own load${BOLT:+, then laid out by LLVM BOLT on it (BOLT=1)}"
  [ -n "$FLOOR" ] && echo "floor = bare-axum: axum + serde_json alone, no MCP checks, on the echo request;" \
    "bytes = the same bare-axum on each case's own request, answering with ours' reply captured before the run"
  echo "rmcp = rmcp-notes (rmcp 3.11.0, cached-router, build profile: $RMCP_PROFILE${PGO:+, profile-guided}${BOLT:+, BOLT})"
  [ -n "${BANNER[ts]:-}" ] && echo "ts = bench/peers/typescript: ${BANNER[ts]#*(}" | sed 's/)$//'
  [ -n "${BANNER[py]:-}" ] && echo "py = bench/peers/python: ${BANNER[py]#*(}" | sed 's/)$//'
  for x in "${SKIPPED[@]}"; do echo "skipped peer $x"; done
  echo "servers on core(s) $SERVER_CPUS, wrk on $WRK_CPUS ($THREADS thread(s), --timeout $WRK_TIMEOUT); DURATION=$DURATION ROUNDS=$ROUNDS;" \
       "rss = peak VmHWM over the whole run; CPU/req = server CPU (user + system, every thread) per request;" \
       "ratios are medians of per-round ratios; errors = non-2xx responses/socket errors (connect, read, write, timeout), summed over rounds"
} | tee -a "$MD"
CHART_NOTE=${PGO:+"PGO=1${BOLT:+ BOLT=1}: ours, the floor and rmcp built profile-guided${BOLT:+ and laid out by BOLT} (bench/pgo.sh)"} \
  python3 "$ROOT/bench/chart.py" "$TSV" "$RESULTS/http.svg"
echo "results: $TSV, $MD, $RESULTS/http.svg" >&2
if [ -n "${DURABLE:-}" ]; then
  # The durable path in the same report: accepted confirmations per second and p99 per store,
  # each with its ratio to the memory store (bench/durable.sh).
  echo >&2; echo "durable path (bench/durable.sh) ..." >&2
  # shellcheck disable=SC2086 # DURABLE_ENV is a list of NAME=value words
  env ${DURABLE_ENV:-} OUT="$RESULTS/durable.md" NO_BUILD=${NO_BUILD:-} bash "$ROOT/bench/durable.sh" >/dev/null
  { echo; echo "Durable path (bench/durable.sh):"; echo; cat "$RESULTS/durable.md"; } | tee -a "$MD"
fi
if [ "${#ERRORS[@]}" -gt 0 ]; then
  echo "ERRORS (every server must answer every request; non-2xx/socket errors): ${ERRORS[*]}" >&2
  exit 3
fi
