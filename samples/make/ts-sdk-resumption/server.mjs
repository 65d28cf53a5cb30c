// Official TypeScript SDK server: McpServer + StreamableHTTPServerTransport (sessions, SSE)
// with the SDK's own example InMemoryEventStore (ids <streamId>_<ms>_<rand>, priming events).
// A thin wrapper logs every event id minted and every replay (server-side truth), and the
// node:http handler logs every HTTP request it receives.
//
// usage: node server.mjs PORT LOG_JSONL
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
// The name it gives itself in initialize (the samples that share this server tell theirs).
const SERVER_NAME = process.argv[4] ?? 'mcpf-ts-resumption';
const note = (o) => fs.writeSync(logFd, JSON.stringify({ ...o, t: Date.now() / 1000 }) + '\n');

function describe(message) {
  if (!message || Object.keys(message).length === 0) return { priming: true };
  const d = { priming: false };
  if ('method' in message) d.method = message.method;
  if ('id' in message) d.id = message.id;
  d.kind = 'method' in message ? ('id' in message ? 'request' : 'notification') : ('result' in message ? 'response' : 'error');
  if (message.method === 'notifications/progress') d.progress = message.params.progress;
  return d;
}

class LoggingEventStore extends InMemoryEventStore {
  async storeEvent(streamId, message) {
    const eventId = await super.storeEvent(streamId, message);
    note({ ev: 'store', event_id: eventId, stream_id: streamId, ...describe(message) });
    return eventId;
  }
  async replayEventsAfter(lastEventId, { send }) {
    const replayed = [];
    const streamId = await super.replayEventsAfter(lastEventId, {
      send: async (eventId, message) => { replayed.push({ event_id: eventId, ...describe(message) }); await send(eventId, message); },
    });
    note({ ev: 'replay', last_event_id: lastEventId, stream_id: streamId, replayed });
    return streamId;
  }
}

function buildServer() {
  const server = new McpServer({ name: SERVER_NAME, version: '1.0.0' });
  server.registerTool('countdown', {
    description: 'Counts down, one progress notification every 300 ms, then answers.',
    inputSchema: { steps: z.number().int() },
  }, async ({ steps }, extra) => {
    const token = extra._meta?.progressToken;
    for (let i = 1; i <= steps; i++) {
      await new Promise((r) => setTimeout(r, 300));
      if (token !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress',
          params: { progressToken: token, progress: i, total: steps, message: `tick ${i}/${steps}` } });
      }
    }
    return { content: [{ type: 'text', text: `countdown of ${steps} done` }] };
  });
  server.registerTool('echo', {
    description: 'Echoes its input.',
    inputSchema: { text: z.string() },
  }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  return server;
}

const transports = {};
const eventStore = new LoggingEventStore();

const httpServer = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const raw = Buffer.concat(chunks).toString('utf8');
  const body = raw ? JSON.parse(raw) : undefined;
  const sid = req.headers['mcp-session-id'];
  const entry = { ev: 'http_request', method: req.method, url: req.url, peer_port: req.socket.remotePort,
    mcp_session_id: sid ?? null, last_event_id: req.headers['last-event-id'] ?? null,
    mcp_protocol_version: req.headers['mcp-protocol-version'] ?? null,
    body: body ?? null };
  res.on('close', () => note({ ...entry, ev: 'http_done', status: res.statusCode }));
  note(entry);
  try {
    let transport = sid ? transports[sid] : undefined;
    if (!transport && !sid && req.method === 'POST' && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore,
        retryInterval: 500,
        onsessioninitialized: (id) => { transports[id] = transport; note({ ev: 'session', session_id: id }); },
      });
      transport.onclose = () => { if (transport.sessionId) delete transports[transport.sessionId]; };
      // The transport's own errors (a 409 "Only one SSE stream is allowed per session").
      transport.onerror = (e) => note({ ev: 'transport_error', error: String(e?.message ?? e) });
      await buildServer().connect(transport);
    }
    if (!transport) {
      res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'no session' }, id: null }));
      return;
    }
    await transport.handleRequest(req, res, body);
  } catch (e) {
    note({ ev: 'error', error: String(e) });
    if (!res.headersSent) { res.writeHead(500); res.end(); }
  }
});
httpServer.listen(PORT, '127.0.0.1', () => note({ ev: 'listening', port: PORT }));
process.on('SIGTERM', () => { httpServer.closeAllConnections?.(); process.exit(0); });
