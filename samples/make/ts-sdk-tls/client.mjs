// Official TypeScript SDK client: Client + StreamableHTTPClientTransport. It connects
// (initialize, initialized, standalone GET), lists tools, calls `countdown` with progress
// (its POST stream gets cut by the relay; the transport resumes by itself with GET +
// Last-Event-ID), calls `echo`, then terminates the session (DELETE) and closes.
// A fetch wrapper logs every HTTP request it sends, the response status, and every SSE
// event id it reads on each response (client-side truth).
//
// usage: node client.mjs URL LOG_JSONL
import { makeNote, makeLoggingFetch } from '../fetchlog.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const URL_ = new URL(process.argv[2]);
const note = makeNote(process.argv[3]);
const loggingFetch = makeLoggingFetch(note);

const transport = new StreamableHTTPClientTransport(URL_, { fetch: loggingFetch });
transport.onerror = (e) => note({ ev: 'transport_error', error: String(e?.message ?? e) });
const client = new Client({ name: 'mcpf-ts-client', version: '1.0.0' });
await client.connect(transport);
note({ ev: 'connected', session_id: transport.sessionId, protocol_version: transport.protocolVersion ?? null });

const tools = await client.listTools();
note({ ev: 'result', what: 'tools/list', tools: tools.tools.map((t) => t.name).sort() });

const progress = [];
const tokens = [];
const r = await client.callTool({ name: 'countdown', arguments: { steps: 7 } }, CallToolResultSchema, {
  onprogress: (p) => { progress.push(p.progress); note({ ev: 'progress', progress: p.progress }); },
  onresumptiontoken: (tok) => { tokens.push(tok); note({ ev: 'resumption_token', token: tok }); },
  timeout: 30000,
});
note({ ev: 'result', what: 'tools/call countdown', content: r.content, progress, tokens });

const e = await client.callTool({ name: 'echo', arguments: { text: 'after resume' } });
note({ ev: 'result', what: 'tools/call echo', content: e.content });

await transport.terminateSession();
await client.close();
note({ ev: 'closed' });
