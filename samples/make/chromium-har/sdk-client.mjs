// The official TypeScript SDK client (Client + StreamableHTTPClientTransport) in a browser page:
// bundled for the page by make/chromium-har.sh, so that Chromium sends every request. It connects
// (initialize, initialized, the standalone GET stream), lists tools, calls slow_count with
// progress, calls add, terminates the session (DELETE) and closes. The fetch wrapper of
// fetchtap.mjs records what the transport sent and read: the client's truth, not the HAR's.
import { makeLoggingFetch } from '../fetchtap.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

async function scenario(note, steps) {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', location.href),
    { fetch: makeLoggingFetch(note) });
  transport.onerror = (e) => note({ ev: 'transport_error', error: String(e?.message ?? e) });
  const client = new Client({ name: 'mcpf-chromium-ts-client', version: '1.0.0' });
  await client.connect(transport);
  note({ ev: 'connected', session_id: transport.sessionId, protocol_version: transport.protocolVersion ?? null });
  const tools = await client.listTools();
  note({ ev: 'result', what: 'tools/list', tools: tools.tools.map((t) => t.name).sort() });
  const progress = [];
  const r = await client.callTool({ name: 'slow_count', arguments: { steps } }, CallToolResultSchema, {
    onprogress: (p) => { progress.push(p.progress); },
  });
  note({ ev: 'result', what: 'tools/call slow_count', content: r.content, progress });
  const a = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
  note({ ev: 'result', what: 'tools/call add', content: a.content });
  await transport.terminateSession();
  await client.close();
  note({ ev: 'closed' });
}

// Called by record.mjs through page.evaluate; the notes are returned even when the run fails.
window.runScenario = async (opts) => {
  const notes = [];
  const note = (o) => notes.push({ ...o, t: Date.now() / 1000 });
  let error = null;
  try { await scenario(note, opts.steps); } catch (e) { error = String(e?.stack ?? e); }
  return { truth: notes, error };
};
