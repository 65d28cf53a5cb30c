// N concurrent sessions of the official TypeScript SDK client (Client +
// StreamableHTTPClientTransport) in one Node process: initialize, initialized, the SDK's own
// standalone GET, then a fixed schedule per session (seconds after its start): 1.0 tools/list,
// 2.5 add, 4.0 countdown (progress) or echo, 6.0 touch or echo, 8.5 add, 11.0 echo,
// 12.0 leave: terminateSession() (DELETE, even i) or just close() (odd i). Session i starts
// i*STAGGER s after the process. All sessions share Node's global fetch (one undici pool).
//
// usage: node ts_clients.mjs URL N STAGGER LOG_JSONL
import { makeNote, makeLoggingFetch } from './tap.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const URL_ = new URL(process.argv[2]);
const N = Number(process.argv[3]);
const STAGGER = Number(process.argv[4]);
const note = makeNote(process.argv[5]);
const T_START = performance.now();
const sleepUntil = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms - performance.now())));
const textOf = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text);

async function session(i) {
  const tag = `ts-${String(i).padStart(2, '0')}`;
  await sleepUntil(T_START + i * STAGGER * 1000);
  const t0 = performance.now();
  const at = (s) => sleepUntil(t0 + s * 1000);
  const del = i % 2 === 0;
  const transport = new StreamableHTTPClientTransport(URL_, { fetch: makeLoggingFetch(note, tag) });
  transport.onerror = (e) => note({ ev: 'transport_error', session: tag, error: String(e?.message ?? e) });
  const client = new Client({ name: `mcpf-ts-client-${String(i).padStart(2, '0')}`, version: '1.0.0' });
  await client.connect(transport);
  note({ ev: 'connected', session: tag, session_id: transport.sessionId, protocol_version: transport.protocolVersion ?? null });
  await at(1.0);
  const tools = await client.listTools();
  note({ ev: 'result', session: tag, what: 'tools/list', tools: tools.tools.map((t) => t.name).sort() });
  await at(2.5);
  let r = await client.callTool({ name: 'add', arguments: { a: i, b: 100 } });
  note({ ev: 'result', session: tag, what: 'tools/call add', content: textOf(r) });
  await at(4.0);
  if (i % 3 !== 2) {
    const progress = [];
    r = await client.callTool({ name: 'countdown', arguments: { steps: 3 } }, CallToolResultSchema, {
      onprogress: (p) => { progress.push(p.progress); note({ ev: 'progress', session: tag, progress: p.progress, total: p.total }); },
    });
    note({ ev: 'result', session: tag, what: 'tools/call countdown', content: textOf(r), progress });
  } else {
    r = await client.callTool({ name: 'echo', arguments: { text: `no progress for session ${i}` } });
    note({ ev: 'result', session: tag, what: 'tools/call echo', content: textOf(r) });
  }
  await at(6.0);
  if (i % 4 === 0) {
    r = await client.callTool({ name: 'touch', arguments: {} });
    note({ ev: 'result', session: tag, what: 'tools/call touch', content: textOf(r) });
  } else {
    r = await client.callTool({ name: 'echo', arguments: { text: `session ${i}` } });
    note({ ev: 'result', session: tag, what: 'tools/call echo', content: textOf(r) });
  }
  await at(8.5);
  r = await client.callTool({ name: 'add', arguments: { a: i, b: 200 } });
  note({ ev: 'result', session: tag, what: 'tools/call add', content: textOf(r) });
  await at(11.0);
  r = await client.callTool({ name: 'echo', arguments: { text: 'bye' } });
  note({ ev: 'result', session: tag, what: 'tools/call echo', content: textOf(r) });
  await at(12.0);
  note({ ev: 'leaving', session: tag, delete: del });
  if (del) await transport.terminateSession();
  await client.close();
  note({ ev: 'closed', session: tag, delete: del });
}

const results = await Promise.allSettled(Array.from({ length: N }, (_, i) => session(i)));
let bad = 0;
results.forEach((r, i) => {
  if (r.status === 'rejected') { bad++; note({ ev: 'session_failed', session: `ts-${String(i).padStart(2, '0')}`, error: String(r.reason) }); console.error(`session ${i} failed:`, r.reason); }
});
process.exit(bad ? 1 : 0);
