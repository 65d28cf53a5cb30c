// The official TypeScript SDK client (Client + StreamableHTTPClientTransport) in a browser page:
// bundled for the page by make/chromium-har.sh, so that Chromium sends every request. Several
// sessions run at once (opts.sessions, started opts.staggerMs apart), each its own Client and
// transport sharing the page's connections: each connects (initialize, initialized, the
// standalone GET stream), lists tools, calls slow_count with progress, calls add, terminates the
// session (DELETE) and closes. The fetch wrapper of fetchtap.mjs records what each transport sent
// and read, tagged with its session: the clients' truth, not the HAR's.
import { makeLoggingFetch } from '../fetchtap.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

async function scenario(note, steps, index) {
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', location.href),
    { fetch: makeLoggingFetch(note) });
  transport.onerror = (e) => note({ ev: 'transport_error', error: String(e?.message ?? e) });
  const name = `mcpf-chromium-ts-client-${String(index).padStart(2, '0')}`;
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  note({ ev: 'connected', session_id: transport.sessionId, protocol_version: transport.protocolVersion ?? null });
  const tools = await client.listTools();
  note({ ev: 'result', what: 'tools/list', tools: tools.tools.map((t) => t.name).sort() });
  const progress = [];
  const r = await client.callTool({ name: 'slow_count', arguments: { steps } }, CallToolResultSchema, {
    onprogress: (p) => { progress.push(p.progress); },
  });
  note({ ev: 'result', what: 'tools/call slow_count', content: r.content, progress });
  const a = await client.callTool({ name: 'add', arguments: { a: index, b: 3 } });
  note({ ev: 'result', what: 'tools/call add', content: a.content });
  await transport.terminateSession();
  await client.close();
  note({ ev: 'closed' });
}

// Called by record.mjs through page.evaluate; the notes are returned even when the run fails.
window.runScenario = async (opts) => {
  const notes = [];
  const errors = [];
  const one = async (i) => {
    const session = `ts-${String(i).padStart(2, '0')}`;
    const note = (o) => notes.push({ ...o, session, t: Date.now() / 1000 });
    await new Promise((r) => setTimeout(r, i * (opts.staggerMs ?? 0)));
    try { await scenario(note, opts.steps, i); } catch (e) { errors.push(`${session}: ${e?.stack ?? e}`); }
  };
  await Promise.all(Array.from({ length: opts.sessions ?? 1 }, (_, i) => one(i)));
  return { truth: notes, error: errors.length ? errors.join('\n') : null };
};
