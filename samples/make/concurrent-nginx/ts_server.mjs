// Official TypeScript SDK server: McpServer + StreamableHTTPServerTransport (sessions, SSE
// responses) with the SDK's example InMemoryEventStore, one store per session as the SDK's own
// example server (simpleStreamableHttp) does. A thin wrapper logs every event id minted and every
// replay, and the node:http handler logs every HTTP request (peer port, MCP headers, JSON-RPC
// body) and when its response ended (server-side truth, not from a capture).
//
// Tools: add, echo, countdown (progress on the POST stream), touch (tools/list_changed on the
// standalone GET stream).
//
// usage: node ts_server.mjs PORT LOG_JSONL
import http from 'node:http';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';

const PORT = Number(process.argv[2]);
const logFd = fs.openSync(process.argv[3], 'a');
const note = (o) => fs.writeSync(logFd, JSON.stringify({ ...o, t: Date.now() / 1000 }) + '\n');

function describe(m) {
  if (!m || Object.keys(m).length === 0) return { priming: true };
  const d = { priming: false, message: {} };
  const x = d.message;
  if ('method' in m) { x.method = m.method; x.kind = 'id' in m ? 'request' : 'notification'; }
  else x.kind = 'result' in m ? 'response' : ('error' in m ? 'error' : 'other');
  if ('id' in m) x.id = m.id;
  if (m.method === 'notifications/progress') { x.progressToken = m.params.progressToken; x.progress = m.params.progress; }
  return d;
}

function describeBody(b) {
  if (b === undefined || b === null) return null;
  if (Array.isArray(b)) return { kind: 'batch' };
  const x = {};
  if ('method' in b) { x.method = b.method; x.kind = 'id' in b ? 'request' : 'notification'; }
  else x.kind = 'result' in b ? 'response' : ('error' in b ? 'error' : 'other');
  if ('id' in b) x.id = b.id;
  if (b.method === 'tools/call') {
    x.tool = b.params?.name;
    if (b.params?._meta?.progressToken !== undefined) x.progressToken = b.params._meta.progressToken;
  }
  return x;
}

class LoggingEventStore extends InMemoryEventStore {
  constructor() { super(); this.sessionId = null; }
  async storeEvent(streamId, message) {
    const eventId = await super.storeEvent(streamId, message);
    note({ ev: 'store', session_id: this.sessionId, event_id: eventId, stream_id: streamId, ...describe(message) });
    return eventId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const replayed = [];
    const streamId = await super.replayEventsAfter(lastEventId, {
      send: async (eventId, message) => { replayed.push(eventId); await send(eventId, message); },
    });
    note({ ev: 'replay', session_id: this.sessionId, last_event_id: lastEventId, stream_id: streamId, replayed });
    return streamId;
  }
}

function buildServer() {
  const server = new McpServer({ name: 'mcpf-ts-server', version: '1.0.0' });
  server.registerTool('add', { description: 'Adds two integers.', inputSchema: { a: z.number().int(), b: z.number().int() } },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));
  server.registerTool('echo', { description: 'Echoes its input.', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }));
  server.registerTool('countdown', {
    description: 'Counts down, one progress notification every 250 ms, then answers.',
    inputSchema: { steps: z.number().int() },
  }, async ({ steps }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      await new Promise((r) => setTimeout(r, 250));
      if (token !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress',
          params: { progressToken: token, progress: i, total: steps, message: `tick ${i}/${steps}` } });
      }
    }
    return { content: [{ type: 'text', text: `countdown of ${steps} done` }] };
  });
  server.registerTool('touch', { description: 'Sends tools/list_changed (standalone GET stream).', inputSchema: {} },
    async () => { server.sendToolListChanged(); return { content: [{ type: 'text', text: 'touched' }] }; });
  return server;
}

const transports = {};
let seq = 0;

const httpServer = http.createServer(async (req, res) => {
  const mySeq = ++seq;
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString('utf8');
  let body;
  try { body = raw ? JSON.parse(raw) : undefined; } catch { body = undefined; }
  const sid = req.headers['mcp-session-id'];
  note({ ev: 'http_request', seq: mySeq, method: req.method, path: req.url, peer_port: req.socket.remotePort,
    mcp_session_id: sid ?? null, last_event_id: req.headers['last-event-id'] ?? null,
    mcp_protocol_version: req.headers['mcp-protocol-version'] ?? null, user_agent: req.headers['user-agent'] ?? null,
    jsonrpc: describeBody(body) });
  let respSid = null;
  const writeHead = res.writeHead.bind(res);
  res.writeHead = (status, ...rest) => {
    const hs = rest.find((x) => x && typeof x === 'object') ?? {};
    for (const [k, v] of Object.entries(hs)) if (k.toLowerCase() === 'mcp-session-id') respSid = v;
    note({ ev: 'http_response', seq: mySeq, status, mcp_session_id: respSid ?? res.getHeader('mcp-session-id') ?? null,
      content_type: Object.entries(hs).find(([k]) => k.toLowerCase() === 'content-type')?.[1] ?? res.getHeader('content-type') ?? null });
    return writeHead(status, ...rest);
  };
  res.on('close', () => note({ ev: 'http_end', seq: mySeq, status: res.statusCode,
    outcome: res.writableFinished ? 'complete' : 'client_disconnected' }));
  try {
    let transport = sid ? transports[sid] : undefined;
    if (!transport && !sid && req.method === 'POST' && isInitializeRequest(body)) {
      const eventStore = new LoggingEventStore();
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore,
        onsessioninitialized: (id) => { transports[id] = transport; eventStore.sessionId = id; note({ ev: 'session_admitted', session_id: id }); },
      });
      transport.onclose = () => { if (transport.sessionId) { note({ ev: 'session_closed', session_id: transport.sessionId }); delete transports[transport.sessionId]; } };
      await buildServer().connect(transport);
    }
    if (!transport) {
      res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no session' }, id: null }));
      return;
    }
    await transport.handleRequest(req, res, body);
  } catch (e) {
    note({ ev: 'error', seq: mySeq, error: String(e) });
    if (!res.headersSent) { res.writeHead(500); res.end(); }
  }
});
httpServer.listen(PORT, '127.0.0.1', () => note({ ev: 'listening', port: PORT }));
process.on('SIGTERM', () => { httpServer.closeAllConnections?.(); process.exit(0); });
