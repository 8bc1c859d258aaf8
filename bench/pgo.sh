#!/usr/bin/env bash
# Profile-guided builds of bench-server, bare-axum (the floor) and the kit's rmcp-notes, each
# trained on its own load: to compare them under the same build (bench/ab.sh; bench/http.sh
# with PGO=1) and to show what a PGO build of a server on this framework gains.
#
# usage: bench/pgo.sh
# env:   TRAIN=3s per case and concurrency, CONNS="1 32" (the training load, the kit's cases),
#        PORT=8796, KIT=/work/shared/bench, CARGO_TARGET_DIR (default target/)
# Output: $TARGET/pgo/release/bench-server, bare-axum and rmcp-notes (each built in its own
#   target directory under $TARGET/pgo/), then the bench/ab.sh command that compares ours and
#   the floor with the ordinary release builds.
# Steps: one instrumented release build of ours and the floor, one of rmcp-notes
#   (-Cprofile-generate); each binary serves the four cases (tools_list, call_first, call_retry,
#   echo; bare-axum answers the first three with bench-server's replies, as the floor on a
#   case's own bytes in bench/http.sh) and is stopped with the signal it shuts down on
#   (SIGTERM; rmcp-notes: SIGINT), so it writes its profile; llvm-profdata merges each binary's
#   profile alone; one release build per binary uses its own profile (-Cprofile-use), so none is
#   laid out by another's traffic. Same release profile (thin LTO, one codegen unit) and
#   allocator as http.sh with RMCP_PROFILE=same and OUR_ALLOC=system.
# Needs: llvm-profdata of the toolchain's LLVM (`rustup component add llvm-tools`), wrk, curl.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
KIT=${KIT:-/work/shared/bench}
TRAIN=${TRAIN:-3s}; CONNS=${CONNS:-"1 32"}; PORT=${PORT:-8796}
OUT=$TARGET/pgo
BUILD=(cargo build --release -q -p mcp-bench --no-default-features --manifest-path "$ROOT/Cargo.toml")
# rmcp-notes under this workspace's [profile.release], as bench/http.sh's RMCP_PROFILE=same.
RMCP_BUILD=(env CARGO_PROFILE_RELEASE_LTO=thin CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
  cargo build --release -q --manifest-path "$KIT/rmcp-notes/Cargo.toml" --features cached-router)

SYSROOT=$(rustc --print sysroot)
PROFDATA=
for candidate in "$SYSROOT"/lib/rustlib/*/bin/llvm-profdata; do
  [ -x "$candidate" ] && PROFDATA=$candidate && break
done
[ -n "$PROFDATA" ] || {
  echo "bench/pgo.sh: no llvm-profdata in $SYSROOT; install it with: rustup component add llvm-tools" >&2
  exit 2
}
command -v wrk >/dev/null || { echo "bench/pgo.sh: needs wrk (Debian package 'wrk')" >&2; exit 2; }

TMP=$(mktemp -d)
pid=
trap 'rm -rf "$TMP"; [ -n "$pid" ] && kill "$pid" 2>/dev/null || true' EXIT

echo "instrumented build (-Cprofile-generate) ..." >&2
# A fixed path (the runs below set LLVM_PROFILE_FILE): the same flags keep this build cached.
RUSTFLAGS="-Cprofile-generate=$OUT/gen/profiles" CARGO_TARGET_DIR="$OUT/gen" \
  "${BUILD[@]}" --bin bench-server --bin bare-axum
RUSTFLAGS="-Cprofile-generate=$OUT/gen-rmcp/profiles" CARGO_TARGET_DIR="$OUT/gen-rmcp" "${RMCP_BUILD[@]}"

# shellcheck source-path=SCRIPTDIR source=perf/case.sh
. "$HERE/perf/case.sh"

# train BINARY SIGNAL ARGS...: serve the four cases with the instrumented BINARY, then stop it
# with SIGNAL (the one it shuts down cleanly on: the profile is written at exit).
train() {
  local bin=$1 sig=$2 name; name=$(basename "$1"); shift 2
  mkdir -p "$TMP/raw/$name"
  export LLVM_PROFILE_FILE="$TMP/raw/$name/%p.profraw" SERVER_LOG="$TMP/$name.log"
  start_server "$bin" "$@" ||
    { echo "bench/pgo.sh: $name did not start; its log:" >&2; cat "$SERVER_LOG" >&2; exit 1; }
  if [ "$name" = bench-server ]; then
    # shellcheck source-path=SCRIPTDIR source=replies.sh
    . "$HERE/replies.sh"
    capture_replies "http://127.0.0.1:$PORT/mcp" "$KIT/perf-bodies" "$TMP/replies"
  fi
  echo "training $name: $TRAIN per case at c=$CONNS ..." >&2
  DURATION=$TRAIN CONNS=$CONNS WRK_CPUS=1 bash "$KIT/perf-load.sh" "http://127.0.0.1:$PORT/mcp" \
    >"$TMP/$name.load" 2>>"$TMP/$name.log"
  kill -"$sig" "$pid"
  wait "$pid" || true
  pid=
  unset LLVM_PROFILE_FILE SERVER_LOG
  ls "$TMP/raw/$name"/*.profraw >/dev/null 2>&1 || {
    echo "bench/pgo.sh: $name wrote no profile; its log:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
  "$PROFDATA" merge -o "$TMP/$name.profdata" "$TMP/raw/$name"/*.profraw
}
train "$OUT/gen/release/bench-server" TERM
train "$OUT/gen/release/bare-axum" TERM --replies "$TMP/replies"
train "$OUT/gen-rmcp/release/rmcp-notes" INT

use_profile() { # use_profile NAME: RUSTFLAGS for the build that reads NAME's profile
  echo "-Cprofile-use=$TMP/$1.profdata -Cllvm-args=-pgo-warn-missing-function=false"
}
for name in bench-server bare-axum; do
  echo "optimised build of $name with its own profile (-Cprofile-use) ..." >&2
  RUSTFLAGS=$(use_profile "$name") CARGO_TARGET_DIR="$OUT/$name" "${BUILD[@]}" --bin "$name"
done
echo "optimised build of rmcp-notes with its own profile (-Cprofile-use) ..." >&2
RUSTFLAGS=$(use_profile rmcp-notes) CARGO_TARGET_DIR="$OUT/rmcp-notes" "${RMCP_BUILD[@]}"

# All in one directory, as the tools that take a BIN_DIR expect (bench/callgrind/count.sh).
mkdir -p "$OUT/release"
for name in bench-server bare-axum rmcp-notes; do
  cp "$OUT/$name/release/$name" "$OUT/release/"
  echo "$OUT/release/$name"
done
echo "compare: ROUNDS=5 CONNS=\"1 32\" bash bench/ab.sh ours=$TARGET/release/bench-server floor=$TARGET/release/bare-axum pgo=$OUT/release/bench-server floor_pgo=$OUT/release/bare-axum" >&2
