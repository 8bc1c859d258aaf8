#!/usr/bin/env bash
# A/B of server binaries over HTTP: interleaved rounds, each binary pinned to the same core,
# the kit's wrk load on another, server CPU per request from /proc. For a change whose effect
# is smaller than the drift of a shared host: compare per-round ratios, not one run's figures.
#
# usage: bench/ab.sh NAME=BINARY ...    e.g. old=/tmp/old/release/bench-server new=target/release/bench-server floor=target/release/bare-axum
#        A binary whose name starts with `floor` (bare-axum: floor, floor_pgo) is run on echo only.
#        A binary may be given with environment settings in front, e.g.
#        lean="env MCP_BENCH_TOOL=lean target/release/bench-server" (bench/src/lean.rs).
# env:   ROUNDS=5 CASES="call_first call_retry echo" CONNS="1 32" DURATION=4s PORT=8795
#        WRK_CPUS=1 KIT=/work/shared/bench (servers run on core 0, as in bench/perf/)
# Prints one line per round, binary, case and concurrency (round name case_cN req/s p50_ms
# p99_ms cpu_us_per_request), then each binary's median CPU per request and p50 over every
# other's, from per-round ratios (a case over a floor is read against the floor's echo).
# Needs: wrk, curl, python3, the kit's perf-load.sh.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
ROUNDS=${ROUNDS:-5}; CASES=${CASES:-"call_first call_retry echo"}; CONNS=${CONNS:-"1 32"}
DURATION=${DURATION:-4s}; PORT=${PORT:-8795}; WRK_CPUS=${WRK_CPUS:-1}
KIT=${KIT:-/work/shared/bench}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true' EXIT

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source-path=SCRIPTDIR source=perf/case.sh
. "$HERE/perf/case.sh"

for r in $(seq "$ROUNDS"); do
  for spec in "$@"; do
    name=${spec%%=*}
    # The command may start with `env VAR=VALUE ...` (which execs, so the pid is the server's).
    read -r -a cmd <<< "${spec#*=}"
    bin=${cmd[${#cmd[@]}-1]}
    [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 2; }
    cases=$CASES
    [[ "$name" == floor* ]] && cases="echo"
    start_server "${cmd[@]}"
    SERVER_PID=$pid CASES="$cases" CONNS="$CONNS" DURATION=$DURATION WRK_CPUS=$WRK_CPUS \
      bash "$KIT/perf-load.sh" "http://127.0.0.1:$PORT/mcp" >"$TMP/out" 2>"$TMP/err"
    kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
    # perf-load.sh prints "case_cN req/s p50 p99" on stdout and the CPU on stderr, in order.
    paste -d' ' "$TMP/out" <(grep -o 'srv_cpu_us_per_req=[0-9]*' "$TMP/err" | cut -d= -f2) |
      sed "s/^/r$r $name /" | tee -a "$TMP/all"
  done
done

python3 - "$TMP/all" <<'PY'
import statistics, sys
cell = {}
for line in open(sys.argv[1]):
    r, name, case, _rps, p50, _p99, cpu = line.split()
    cell[(r, name, case)] = (float(cpu), float(p50))
names = list(dict.fromkeys(k[1] for k in cell))
cases = list(dict.fromkeys(k[2] for k in cell))
rounds = list(dict.fromkeys(k[0] for k in cell))
floor = lambda name: name.startswith("floor")
print()
# Each later-listed binary over each earlier one (new over old), and every binary over each floor.
pairs = [(names[i], names[j]) for i in range(len(names)) for j in range(i)]
pairs = [(b, a) if floor(a) and not floor(b) else (a, b) for a, b in pairs]
for case in cases:
    for a, b in pairs:
        if floor(a) and not case.startswith("echo"):
            continue
        # A floor serves echo only: every case is read against its echo at the same concurrency.
        bc = "echo_" + case.rsplit("_", 1)[-1] if floor(b) else case
        line = []
        for i, what in ((0, "CPU"), (1, "p50")):
            ratios = [cell[(r, a, case)][i] / cell[(r, b, bc)][i] for r in rounds
                      if (r, a, case) in cell and (r, b, bc) in cell and cell[(r, b, bc)][i] > 0]
            if ratios:
                line.append(f"{what} {statistics.median(ratios):.2f} "
                            f"(rounds {min(ratios):.2f}-{max(ratios):.2f})")
        if line:
            print(f"{case:16} {a} over {b}: " + ", ".join(line))
PY
