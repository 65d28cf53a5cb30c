// Official TypeScript SDK client: Client + StreamableHTTPClientTransport, default reconnection
// options (maxRetries 2). It connects (initialize, initialized, standalone GET, which stays open),
// lists tools and calls `countdown` with progress and a 5 s timeout. The relay cuts that POST
// stream after 3 events; the transport resumes by itself with GET + Last-Event-ID; the relay cuts
// that resumed GET after its response head, before any event. What the transport does next is the
// subject of this sample (typescript-sdk issue #2499). Then the client calls `echo` (the session
// still works), terminates the session (DELETE) and closes.
// A fetch wrapper logs every HTTP request it sends, the response status, and every SSE event id it
// reads on each response (client-side truth); transport errors and the call's outcome are logged too.
//
// usage: node client.mjs URL LOG_JSONL
import { makeNote, makeLoggingFetch } from '../fetchlog.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const URL_ = new URL(process.argv[2]);
const note = makeNote(process.argv[3]);
const loggingFetch = makeLoggingFetch(note);
const CALL_TIMEOUT_MS = 5000;

const transport = new StreamableHTTPClientTransport(URL_, { fetch: loggingFetch });
transport.onerror = (e) => note({ ev: 'transport_error', error: String(e?.message ?? e), code: e?.code ?? null });
const client = new Client({ name: 'mcpf-ts-client', version: '1.0.0' });
await client.connect(transport);
note({ ev: 'connected', session_id: transport.sessionId, protocol_version: transport.protocolVersion ?? null });

const tools = await client.listTools();
note({ ev: 'result', what: 'tools/list', tools: tools.tools.map((t) => t.name).sort() });

const progress = [];
const tokens = [];
note({ ev: 'call_start', what: 'tools/call countdown', timeout_ms: CALL_TIMEOUT_MS });
try {
  const r = await client.callTool({ name: 'countdown', arguments: { steps: 7 } }, CallToolResultSchema, {
    onprogress: (p) => { progress.push(p.progress); note({ ev: 'progress', progress: p.progress }); },
    onresumptiontoken: (tok) => { tokens.push(tok); note({ ev: 'resumption_token', token: tok }); },
    timeout: CALL_TIMEOUT_MS,
  });
  note({ ev: 'result', what: 'tools/call countdown', content: r.content, progress, tokens });
} catch (e) {
  note({ ev: 'call_failed', what: 'tools/call countdown', error: String(e?.message ?? e), code: e?.code ?? null,
         progress, tokens });
}

const e = await client.callTool({ name: 'echo', arguments: { text: 'after the hang' } });
note({ ev: 'result', what: 'tools/call echo', content: e.content });

await transport.terminateSession();
await client.close();
note({ ev: 'closed' });
