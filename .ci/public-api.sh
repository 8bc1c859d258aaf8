#!/usr/bin/env bash
# Writes the public API of the library crates (all features) to docs/public-api/CRATE.txt,
# from nightly rustdoc JSON, so that a change to the public surface shows up in review.
#
#   .ci/public-api.sh          # regenerate the listings
#   .ci/public-api.sh --check  # fail if a listing is out of date (CI)
#
# Needs a nightly toolchain (`rustup toolchain install nightly`) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}"
out=docs/public-api
mkdir -p "$out"
status=0
# package:lib:listing (the packages' names on crates.io; the listings keep the directory names).
for entry in mcp-runtime-types:mcp_types:mcp-types mcp-runtime-macros:mcp_macros:mcp-macros \
    mcp-runtime:mcp_runtime:mcp-runtime; do
    IFS=: read -r package lib crate <<<"$entry"
    cargo +nightly rustdoc -q -p "$package" --all-features --lib -- \
        -Z unstable-options --output-format json
    json="$target/doc/$lib.json"
    if [[ "${1:-}" == "--check" ]]; then
        if ! python3 .ci/public_api.py "$json" | diff -u "$out/$crate.txt" -; then
            echo "error: $out/$crate.txt is out of date; run .ci/public-api.sh" >&2
            status=1
        fi
    else
        python3 .ci/public_api.py "$json" > "$out/$crate.txt"
        tail -n +1 "$out/$crate.txt" | grep '^#' | head -1
    fi
done
exit "$status"
