#!/usr/bin/env bash
# Profile-guided builds of bench-server, bare-axum (the floor) and the kit's rmcp-notes, each
# trained on its own load: to compare them under the same build (bench/ab.sh; bench/http.sh
# with PGO=1) and to show what a PGO build of a server on this framework gains.
#
# usage: bench/pgo.sh
# env:   TRAIN=3s per case and concurrency, CONNS="1 32" (the training load, the kit's cases),
#        PORT=8796, KIT=/work/shared/bench, CARGO_TARGET_DIR (default target/),
#        BOLT=1 also lays each profile-guided binary out again after linking (LLVM BOLT,
#        instrumented and trained on the same load): the hot paths of all three servers packed
#        into fewer cache lines and pages. LLVM_BOLT=path (default: llvm-bolt on PATH, else the
#        newest /usr/lib/llvm-*/bin/llvm-bolt; Debian/Ubuntu package bolt-NN)
# Output: $TARGET/pgo/release/bench-server, bare-axum and rmcp-notes (each built in its own
#   target directory under $TARGET/pgo/; with BOLT=1 also $TARGET/pgo/bolt/ the same three laid
#   out by BOLT), then the bench/ab.sh command that compares ours and the floor with the
#   ordinary release builds.
# Steps: one instrumented release build of ours and the floor, one of rmcp-notes
#   (-Cprofile-generate); each binary serves the four cases (tools_list, call_first, call_retry,
#   echo; bare-axum answers the first three with bench-server's replies, as the floor on a
#   case's own bytes in bench/http.sh) and is stopped with the signal it shuts down on
#   (SIGTERM; rmcp-notes: SIGINT), so it writes its profile; llvm-profdata merges each binary's
#   profile alone; one release build per binary uses its own profile (-Cprofile-use), so none is
#   laid out by another's traffic. Same release profile (thin LTO, one codegen unit) and
#   allocator as http.sh with RMCP_PROFILE=same and OUR_ALLOC=system. The optimised builds
#   are linked with --emit-relocs (relocations kept in the file, the code unchanged), which
#   BOLT needs to move functions. BOLT=1 then, per binary: an instrumented copy
#   (llvm-bolt -instrument), the same training load, and the copy laid out by its own profile
#   (blocks by ext-tsp, functions by cache-directed sort, cold blocks split off, identical
#   functions folded).
# Needs: llvm-profdata of the toolchain's LLVM (`rustup component add llvm-tools`), wrk, curl;
#   BOLT=1: llvm-bolt.
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
BOLT=${BOLT:-}
if [ -n "$BOLT" ]; then
  LLVM_BOLT=${LLVM_BOLT:-$(command -v llvm-bolt || true)}
  if [ -z "$LLVM_BOLT" ]; then
    # The newest LLVM's (version order: llvm-9 before llvm-22).
    LLVM_BOLT=$(find /usr/lib -maxdepth 3 -path '/usr/lib/llvm-*/bin/llvm-bolt' 2>/dev/null | sort -V | tail -n 1)
  fi
  if [ -z "$LLVM_BOLT" ] || [ ! -x "$LLVM_BOLT" ]; then
    echo "bench/pgo.sh: BOLT=1 needs llvm-bolt (Debian/Ubuntu: apt-get install bolt-22, or set LLVM_BOLT)" >&2
    exit 2
  fi
fi

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

# serve BINARY SIGNAL ARGS...: serve the four cases with BINARY (an instrumented build; its
# log in $TMP/NAME.log), then stop it with SIGNAL (the one it shuts down cleanly on: profiles are
# written at exit).
serve() {
  local bin=$1 sig=$2 name; name=$(basename "$1"); shift 2
  export SERVER_LOG="$TMP/$name.log"
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
  unset SERVER_LOG
}

# train BINARY SIGNAL ARGS...: serve with the -Cprofile-generate BINARY, merge its profile.
train() {
  local name; name=$(basename "$1")
  mkdir -p "$TMP/raw/$name"
  LLVM_PROFILE_FILE="$TMP/raw/$name/%p.profraw" serve "$@"
  ls "$TMP/raw/$name"/*.profraw >/dev/null 2>&1 || {
    echo "bench/pgo.sh: $name wrote no profile; its log:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
  "$PROFDATA" merge -o "$TMP/$name.profdata" "$TMP/raw/$name"/*.profraw
}

train "$OUT/gen/release/bench-server" TERM
train "$OUT/gen/release/bare-axum" TERM --replies "$TMP/replies"
train "$OUT/gen-rmcp/release/rmcp-notes" INT

use_profile() { # use_profile NAME: RUSTFLAGS for the build that reads NAME's profile
  echo "-Cprofile-use=$TMP/$1.profdata -Cllvm-args=-pgo-warn-missing-function=false -Clink-arg=-Wl,--emit-relocs"
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
if [ -n "$BOLT" ]; then
  mkdir -p "$OUT/bolt" "$TMP/bolt"
  # lay_out NAME SIGNAL ARGS...: BOLT's instrumented copy of NAME, trained, then NAME laid out.
  lay_out() {
    local name=$1 sig=$2; shift 2
    echo "BOLT: instrumented $name ..." >&2
    "$LLVM_BOLT" "$OUT/release/$name" -instrument -instrumentation-file="$TMP/bolt/$name.fdata" \
      -o "$TMP/bolt/$name" >"$TMP/bolt/$name.instrument.log" 2>&1 ||
      { echo "bench/pgo.sh: llvm-bolt -instrument failed on $name:" >&2; cat "$TMP/bolt/$name.instrument.log" >&2; exit 1; }
    serve "$TMP/bolt/$name" "$sig" "$@"
    [ -s "$TMP/bolt/$name.fdata" ] || {
      echo "bench/pgo.sh: BOLT's $name wrote no profile; its log:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
    "$LLVM_BOLT" "$OUT/release/$name" -data="$TMP/bolt/$name.fdata" -o "$OUT/bolt/$name" \
      -reorder-blocks=ext-tsp -reorder-functions=cdsort -split-functions -split-all-cold \
      -split-eh -icf=all -use-gnu-stack >"$TMP/bolt/$name.log" 2>&1 ||
      { echo "bench/pgo.sh: llvm-bolt failed on $name:" >&2; cat "$TMP/bolt/$name.log" >&2; exit 1; }
    echo "$OUT/bolt/$name"
  }
  lay_out bench-server TERM
  lay_out bare-axum TERM --replies "$TMP/replies"
  lay_out rmcp-notes INT
fi
echo "compare: ROUNDS=5 CONNS=\"1 32\" bash bench/ab.sh ours=$TARGET/release/bench-server floor=$TARGET/release/bare-axum pgo=$OUT/release/bench-server floor_pgo=$OUT/release/bare-axum${BOLT:+ pgo_bolt=$OUT/bolt/bench-server floor_pgo_bolt=$OUT/bolt/bare-axum}" >&2
