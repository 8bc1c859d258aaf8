"""The notes benchmark on the official Python SDK (`mcp` 2.x, MCPServer), for bench/http.sh.

Usage: python server.py [127.0.0.1:PORT]   (default 127.0.0.1:8791; loopback only)

Served the way the SDK's own `run_streamable_http_async` serves it: the Starlette app from
`MCPServer.streamable_http_app` (stateless, JSON responses) under uvicorn, here with uvicorn's
`standard` extras (uvloop, httptools: its faster event loop and HTTP parser) and without the
per-request access log, so the peer gets its best configuration.

MRTR (multi round-trip request) is the SDK's own. `notes_delete` returns an
`InputRequiredResult` (`inputRequests` with a form elicitation under the key `delete_choice`,
`requestState` with the offered candidates) on the first leg; on the retry it reads
`ctx.input_responses` and `ctx.request_state`. The SDK's `RequestStateBoundary` seals every
outgoing `requestState` and verifies every inbound one before the tool runs: AES-256-GCM (key
derived with HKDF-SHA256 from the configured secret), bound to the method, the tool name, a
SHA-256 digest of the canonical arguments, the audience (server name) and the principal
(none: the benchmark runs unauthenticated, as for every server), with a 10 minute expiry.
That is authenticated encryption where our runtime and the TypeScript SDK sign with
HMAC-SHA256; it is the SDK's built-in and only shipped codec, so it is what its users run.

The hand-written `InputRequiredResult` is used rather than the SDK's `Resolve(...)`/`Elicit`
resolvers because resolvers name their input request after the resolver's
`module:qualname`, while the benchmark's retry body (shared by every server) answers
`delete_choice`. The checks the resolver path would run are done here: the client must
declare form elicitation before it is asked (the SDK's -32021 error otherwise), and the answer
must be one of the sealed candidates. Benchmark mode, as for every server in the run: nothing
is deleted, so one accepted retry can be repeated.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from typing import Annotated

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolResult,
    ClientCapabilities,
    ElicitationCapability,
    ElicitRequest,
    ElicitRequestFormParams,
    FormElicitationCapability,
    InputRequiredResult,
    MissingRequiredClientCapabilityErrorData,
    TextContent,
    ToolAnnotations,
)
from pydantic import Field

WORKSPACE = "file:///workspaces/acme"
INPUT_KEY = "delete_choice"
# Fixed key so states survive a restart during a benchmark. A real server loads a secret.
BENCH_KEY = b"mcp-bench-request-state-key-0123456789abcdef"

NOTES = [
    {"id": "note-3", "title": "TPS report", "body": "Q2 TPS report, cover sheet missing."},
    {"id": "note-14", "title": "TPS report", "body": "Q3 TPS report with the new cover sheet."},
    {"id": "note-22", "title": "TPS report (draft)", "body": "Draft of the Q4 TPS report."},
    {"id": "note-9", "title": "Lunch order", "body": "Friday: pizza."},
]
for _n in NOTES:
    _n["workspaceUri"] = WORKSPACE

mcp = MCPServer(
    "notes-bench",
    version="0.1.0",
    request_state_security=RequestStateSecurity(keys=[BENCH_KEY], ttl=600.0),
)


def _text(text: str, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)


def _invalid(message: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message)


def _require_form_elicitation(ctx: Context) -> None:
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    # As the SDK's resolvers read it: a bare `elicitation: {}` counts as form support.
    if elicitation is not None and (elicitation.form is not None or elicitation.url is None):
        return
    required = ClientCapabilities(elicitation=ElicitationCapability(form=FormElicitationCapability()))
    data = MissingRequiredClientCapabilityErrorData(required_capabilities=required)
    raise MCPError(
        code=MISSING_REQUIRED_CLIENT_CAPABILITY,
        message="notes_delete asks which note to delete: the client must declare form elicitation",
        data=data.model_dump(by_alias=True, mode="json", exclude_none=True),
    )


@mcp.tool(annotations=ToolAnnotations(destructive_hint=True))
async def notes_delete(
    workspaceUri: Annotated[str, Field(description="File URI of the workspace, e.g. file:///workspaces/acme")],  # noqa: N803 (wire name)
    title: Annotated[str, Field(description="Text the note title must contain (case-insensitive)")],
    ctx: Context,
) -> CallToolResult | InputRequiredResult:
    """Delete a note by title. Asks the user which note when several match."""
    state = ctx.request_state
    if state is None:
        return _first_leg(workspaceUri, title, ctx)
    # Already unsealed and checked (expiry, method, tool, argument digest) by the SDK.
    candidates = json.loads(state)["c"]
    answer = (ctx.input_responses or {}).get(INPUT_KEY)
    action = getattr(answer, "action", None)
    if action == "accept":
        content = answer.content or {}
        note_id, confirm = content.get("note_id"), content.get("confirm")
        if not isinstance(note_id, str) or not isinstance(confirm, bool):
            raise _invalid("delete_choice content needs note_id (string) and confirm (boolean)")
        if note_id not in candidates:
            raise _invalid("note_id was not one of the offered notes")
        if not confirm:
            return _text(f"Kept {note_id}: deletion not confirmed.")
        note = next((n for n in NOTES if n["id"] == note_id), None)
        if note is None:
            return _text("note no longer exists", is_error=True)
        # Benchmark mode: report the deletion without removing the note.
        return _text(f"Deleted {note['id']} ({json.dumps(note['title'])}) from {note['workspaceUri']}.")
    if action == "decline":
        return _text("Deletion declined; nothing was deleted.")
    if action == "cancel":
        return _text("Deletion cancelled; nothing was deleted.", is_error=True)
    raise _invalid(f"missing inputResponses.{INPUT_KEY}")


def _first_leg(workspace_uri: str, title: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    needle = title.lower()
    hits = [n for n in NOTES if n["workspaceUri"] == workspace_uri and needle in n["title"].lower()]
    if not hits:
        return _text(f"No note titled {json.dumps(title)} in {workspace_uri}", is_error=True)
    _require_form_elicitation(ctx)
    schema = {
        "type": "object",
        "properties": {
            "note_id": {
                "type": "string",
                "title": "Note",
                "description": "Which note to delete",
                "oneOf": [{"const": n["id"], "title": f"{n['title']} ({n['id']}): {n['body']}"} for n in hits],
            },
            "confirm": {"type": "boolean", "description": "Yes, delete it"},
        },
        "required": ["note_id", "confirm"],
    }
    request = ElicitRequest(
        method="elicitation/create",
        params=ElicitRequestFormParams(
            message=f"{len(hits)} notes match {json.dumps(title)} in {workspace_uri}. Which one should be deleted?",
            requested_schema=schema,
        ),
    )
    # Plaintext here; the SDK's boundary seals it on the way out.
    state = json.dumps({"c": [n["id"] for n in hits]}, separators=(",", ":"))
    return InputRequiredResult(result_type="input_required", input_requests={INPUT_KEY: request}, request_state=state)


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
async def echo(text: Annotated[str, Field(description="Text to echo back")]) -> str:
    """Echo the given text back"""
    return text


def main() -> None:
    addr = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:8791"
    host, _, port = addr.rpartition(":")
    if host != "127.0.0.1" or not port.isdigit():
        sys.exit(f"refusing to bind {addr}: the benchmark server is loopback only (127.0.0.1:PORT)")
    app = mcp.streamable_http_app(stateless_http=True, json_response=True, host=host)
    print(
        f"py-notes listening on http://{addr}/mcp (mcp {version('mcp')}, uvicorn {uvicorn.__version__}, "
        f"python {sys.version.split()[0]})",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(app, host=host, port=int(port), log_level="warning", access_log=False, loop="uvloop", http="httptools")


if __name__ == "__main__":
    main()
