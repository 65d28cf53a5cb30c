// Official TypeScript SDK client using the SDK's documented backwards-compatible connect
// (examples/client/streamableHttpWithSseFallbackClient): try StreamableHTTPClientTransport
// on the URL first; when that fails (the legacy server answers the initialize POST with a
// 4xx), fall back to SSEClientTransport on the same URL (GET /sse, `endpoint` event, POSTs
// to the endpoint). Then tools/list and one tools/call, then close.
//
// usage: node client.mjs URL LOG_JSONL
import { makeNote, makeLoggingFetch } from '../fetchlog.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';

const url = new URL(process.argv[2]);
const note = makeNote(process.argv[3]);
const loggingFetch = makeLoggingFetch(note);

let client = new Client({ name: 'mcpf-ts-fallback-client', version: '1.0.0' });
let transport;
try {
  transport = new StreamableHTTPClientTransport(url, { fetch: loggingFetch });
  await client.connect(transport);
  note({ ev: 'connected', transport: 'streamable-http' });
} catch (error) {
  note({ ev: 'streamable_http_failed', error: String(error?.message ?? error), code: error?.code ?? null });
  transport = new SSEClientTransport(url, { fetch: loggingFetch });
  client = new Client({ name: 'mcpf-ts-fallback-client', version: '1.0.0' });
  await client.connect(transport);
  note({ ev: 'connected', transport: 'sse' });
}
const tools = await client.listTools();
note({ ev: 'result', what: 'tools/list', tools: tools.tools.map((t) => t.name).sort() });
const r = await client.callTool({ name: 'add', arguments: { a: 20, b: 22 } });
note({ ev: 'result', what: 'tools/call add', content: r.content });
await new Promise((res) => setTimeout(res, 200));
await client.close();
note({ ev: 'closed' });
