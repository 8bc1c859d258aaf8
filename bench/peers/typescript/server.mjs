// The notes benchmark on the official TypeScript SDK (@modelcontextprotocol/server 2.x, its
// 2026-07-28 serving entry), for bench/http.sh. Plain ESM JavaScript so that no compile step
// sits between the lock file and the run; the SDK itself is the published build.
//
// Usage: node server.mjs [127.0.0.1:PORT]   (default 127.0.0.1:8790; loopback only)
//
// Wiring is the SDK's own idiom for the 2026-07-28 revision: createMcpHandler(factory) (one
// McpServer per HTTP request, stateless, JSON responses) adapted to node:http with
// toNodeHandler from @modelcontextprotocol/node.
//
// MRTR (multi round-trip request) is the SDK's: the first leg returns inputRequired({
// inputRequests, requestState }) and the retry reads ctx.mcpReq.inputResponses and the state
// verified by ServerOptions.requestState.verify before the handler runs. The state is sealed
// by the SDK's createRequestStateCodec: HMAC-SHA256 over the payload and expiry (10 min TTL),
// bound through its `bind` hook to the method and principal. The SDK's bind hook sees the
// request context, not the tool's arguments, so the payload also carries the arguments it was
// minted for and the handler refuses a retry whose arguments differ (same effect as our
// runtime's argument digest and rmcp-notes' associated data). The answer is re-checked
// against the candidates sealed in the state. The SDK checks that the client declared the
// form-elicitation capability before it sends an input request. Benchmark mode, as for every
// server in the run: nothing is deleted, so one accepted retry can be repeated.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  McpServer,
  ProtocolError,
  ProtocolErrorCode,
  createMcpHandler,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
} from '@modelcontextprotocol/server';
import * as z from 'zod';

const WORKSPACE = 'file:///workspaces/acme';
const INPUT_KEY = 'delete_choice';
// Fixed key so states survive a restart during a benchmark. A real server loads a secret.
const BENCH_KEY = 'mcp-bench-request-state-key-0123456789abcdef';

const NOTES = [
  { id: 'note-3', title: 'TPS report', body: 'Q2 TPS report, cover sheet missing.' },
  { id: 'note-14', title: 'TPS report', body: 'Q3 TPS report with the new cover sheet.' },
  { id: 'note-22', title: 'TPS report (draft)', body: 'Draft of the Q4 TPS report.' },
  { id: 'note-9', title: 'Lunch order', body: 'Friday: pizza.' },
].map((n) => ({ ...n, workspaceUri: WORKSPACE }));

const codec = createRequestStateCodec({
  key: BENCH_KEY,
  ttlSeconds: 600,
  // Principal: the benchmark runs without authentication, as for the other servers.
  bind: (ctx) => `${ctx.mcpReq.method}\0${ctx.http?.authInfo?.clientId ?? 'anonymous'}`,
});

// Schemas built once per process; the factory below runs per request.
const deleteArgs = z.object({
  workspaceUri: z.string().describe('File URI of the workspace, e.g. file:///workspaces/acme'),
  title: z.string().describe('Text the note title must contain (case-insensitive)'),
});
const echoArgs = z.object({ text: z.string().describe('Text to echo back') });

const text = (t) => ({ content: [{ type: 'text', text: t }] });
const invalid = (message) => new ProtocolError(ProtocolErrorCode.InvalidParams, message);

async function notesDelete({ workspaceUri, title }, ctx) {
  const state = ctx.mcpReq.requestState();
  if (state === undefined) return firstLeg(workspaceUri, title, ctx);
  // Verified by the codec (MAC, expiry, binding) before this handler ran.
  if (state.w !== workspaceUri || state.t !== title) throw invalid('requestState was issued for other arguments');
  const answer = inputResponse(ctx.mcpReq.inputResponses, INPUT_KEY);
  switch (answer.kind === 'elicit' ? answer.action : 'missing') {
    case 'accept': {
      const noteId = answer.content?.note_id;
      const confirm = answer.content?.confirm;
      if (typeof noteId !== 'string' || typeof confirm !== 'boolean') {
        throw invalid('delete_choice content needs note_id (string) and confirm (boolean)');
      }
      if (!state.c.includes(noteId)) throw invalid('note_id was not one of the offered notes');
      if (!confirm) return text(`Kept ${noteId}: deletion not confirmed.`);
      const note = NOTES.find((n) => n.id === noteId);
      if (!note) return { ...text('note no longer exists'), isError: true };
      // Benchmark mode: report the deletion without removing the note.
      return text(`Deleted ${note.id} (${JSON.stringify(note.title)}) from ${note.workspaceUri}.`);
    }
    case 'decline':
      return text('Deletion declined; nothing was deleted.');
    case 'cancel':
      return { ...text('Deletion cancelled; nothing was deleted.'), isError: true };
    default:
      throw invalid(`missing inputResponses.${INPUT_KEY}`);
  }
}

async function firstLeg(workspaceUri, title, ctx) {
  const needle = title.toLowerCase();
  const hits = NOTES.filter((n) => n.workspaceUri === workspaceUri && n.title.toLowerCase().includes(needle));
  if (hits.length === 0) return { ...text(`No note titled ${JSON.stringify(title)} in ${workspaceUri}`), isError: true };
  const requestState = await codec.mint({ c: hits.map((n) => n.id), w: workspaceUri, t: title }, ctx);
  return inputRequired({
    inputRequests: {
      [INPUT_KEY]: inputRequired.elicit({
        message: `${hits.length} notes match ${JSON.stringify(title)} in ${workspaceUri}. Which one should be deleted?`,
        requestedSchema: {
          type: 'object',
          properties: {
            note_id: {
              type: 'string',
              title: 'Note',
              description: 'Which note to delete',
              oneOf: hits.map((n) => ({ const: n.id, title: `${n.title} (${n.id}): ${n.body}` })),
            },
            confirm: { type: 'boolean', description: 'Yes, delete it' },
          },
          required: ['note_id', 'confirm'],
        },
      }),
    },
    requestState,
  });
}

function factory() {
  const server = new McpServer(
    { name: 'notes-bench', version: '0.1.0' },
    { requestState: { verify: codec.verify } },
  );
  server.registerTool(
    'notes_delete',
    {
      description: 'Delete a note by title. Asks the user which note when several match.',
      inputSchema: deleteArgs,
      annotations: { destructiveHint: true },
    },
    notesDelete,
  );
  server.registerTool(
    'echo',
    { description: 'Echo the given text back', inputSchema: echoArgs, annotations: { readOnlyHint: true } },
    async ({ text: t }) => text(t),
  );
  return server;
}

const addr = process.argv[2] ?? '127.0.0.1:8790';
const m = /^127\.0\.0\.1:(\d+)$/.exec(addr);
if (!m) {
  console.error(`refusing to bind ${addr}: the benchmark server is loopback only (127.0.0.1:PORT)`);
  process.exit(2);
}
const handler = createMcpHandler(factory, { responseMode: 'json', legacy: 'reject' });
const node = toNodeHandler(handler);
const http = createServer((req, res) => {
  if (req.url !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  node(req, res);
});
// Default keep-alive timeout (5 s) is shorter than a pause between wrk runs; the other
// servers keep idle connections, so keep them here too.
http.keepAliveTimeout = 75_000;
http.headersTimeout = 80_000;
// The SDK's version as installed (pinned by package-lock.json), for the run's log.
const sdkVersion = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/server/package.json', import.meta.url), 'utf8'),
).version;
http.listen(Number(m[1]), '127.0.0.1', () => {
  console.error(
    `ts-notes listening on http://${addr}/mcp (pid ${process.pid}, node ${process.version}, @modelcontextprotocol/server ${sdkVersion})`,
  );
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    http.close();
    handler.close().finally(() => process.exit(0));
  });
}
