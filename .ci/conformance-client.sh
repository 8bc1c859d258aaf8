#!/usr/bin/env bash
# Official MCP conformance suite, client side (2026-07-28 scenarios), against our
# conformance-client (tests/src/bin/conformance-client.rs, built on mcp_runtime::client).
#
# Runs ../shared/conformance/run-client-suite with every scored scenario of 2026-07-28 (the
# OAuth `auth/*` ones included: the client authorizes through mcp_runtime::client::oauth) plus
# json-schema-2020-12-preservation. The suite starts a test server per scenario and runs the
# client with its URL. Exits non-zero if any check of any scenario fails. Per-scenario
# checks.json files land in $CONFORMANCE_OUT (default: a fresh temp dir, printed as "results:").
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE=${MCP_CONFORMANCE_CLIENT_SUITE:-../shared/conformance/run-client-suite}
if [ ! -x "$SUITE" ]; then
  echo "conformance-client: $SUITE not found (CI expects shared/ beside the clone)" >&2
  exit 2
fi

BIN=$(cargo build -q -p mcp-tests --bin conformance-client --message-format=json |
  sed -n 's/.*"executable":"\([^"]*conformance-client\)".*/\1/p' | tail -n1)
if [ ! -x "$BIN" ]; then
  echo "conformance-client: could not locate the built conformance-client binary" >&2
  exit 2
fi

# The scored client scenarios and the JSON Schema 2020-12 preservation scenario. Named
# explicitly so a scenario the suite adds later does not silently change what CI requires.
SCENARIOS=(
  tools_call
  request-metadata
  auth/metadata-default
  auth/metadata-var1
  auth/metadata-var2
  auth/metadata-var3
  auth/basic-cimd
  auth/scope-from-www-authenticate
  auth/scope-from-scopes-supported
  auth/scope-omitted-when-undefined
  auth/scope-step-up
  auth/scope-retry-limit
  auth/token-endpoint-auth-basic
  auth/token-endpoint-auth-post
  auth/token-endpoint-auth-none
  auth/pre-registration
  auth/resource-mismatch
  auth/offline-access-scope
  auth/offline-access-not-supported
  auth/authorization-server-migration
  auth/iss-supported
  auth/iss-not-advertised
  auth/iss-supported-missing
  auth/iss-wrong-issuer
  auth/iss-unexpected
  auth/iss-normalized
  auth/metadata-issuer-mismatch
  sep-2322-client-request-state
  http-standard-headers
  http-custom-headers
  http-invalid-tool-headers
  json-schema-ref-no-deref
  json-schema-2020-12-preservation
)

OUT_LOG=$(mktemp "${TMPDIR:-/tmp}/conformance-client.XXXXXX.log")
set +e
"$SUITE" "$BIN" "${SCENARIOS[@]}" 2>&1 | tee "$OUT_LOG"
RC=${PIPESTATUS[0]}
set -e
if ! grep -q '^conformance: [0-9]* passed, 0 failed' "$OUT_LOG"; then
  echo "conformance-client: some checks failed (see above)" >&2
  [ "$RC" -ne 0 ] || RC=1
fi
exit "$RC"
