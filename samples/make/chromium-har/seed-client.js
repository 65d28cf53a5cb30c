// seed-client in a browser page: the script of samples/make/seed-incident/client.py, with fetch()
// in place of raw sockets, so that Chromium itself sends, times and records every request.
//
// The page's origin is the nginx in front of seed-server, so no CORS preflight is sent. Chromium
// picks the sockets: "connection" below is the client's logical channel (A..D as in client.py),
// not a TCP connection. Everything the page sends and reads is recorded here, not from the HAR,
// in the shape client.py writes, and returned by run() for record.mjs to save.
'use strict';

const PROTOCOL_VERSION = '2025-06-18';
const CLIENT_INFO = { name: 'seed-client', version: '1.0.0' };

function summarize(msg) {
  if ('method' in msg) {
    const p = msg.params || {};
    if (msg.method === 'notifications/progress') {
      return { kind: 'progress', progressToken: p.progressToken, progress: p.progress, total: p.total };
    }
    if (msg.method === 'notifications/message') {
      return { kind: 'log', related_request_id: (p.data || {}).request };
    }
    return { kind: 'notification', method: msg.method };
  }
  if ('result' in msg || 'error' in msg) {
    return { kind: 'response', response_to_id: msg.id, is_error: 'error' in msg };
  }
  return { kind: 'other' };
}

// WHATWG event-stream parsing over decoded text (CR, LF or CRLF line ends).
class SseParser {
  constructor() { this.buf = ''; this.data = []; this.event = ''; this.lastId = ''; this.pendingCr = false; }

  feed(text) {
    if (this.pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.pendingCr = false;
    this.buf += text;
    const out = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buf);
      if (!m) break;
      if (m[0] === '\r' && m.index === this.buf.length - 1) this.pendingCr = true;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  line(line) {
    if (line === '') {
      if (this.data.length === 0) { this.event = ''; return null; }
      const ev = { id: this.lastId, event: this.event || 'message', data: this.data.join('\n') };
      this.data = []; this.event = '';
      return ev;
    }
    if (line.startsWith(':')) return null;
    const c = line.indexOf(':');
    const name = c < 0 ? line : line.slice(0, c);
    let value = c < 0 ? '' : line.slice(c + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') this.data.push(value);
    else if (name === 'event') this.event = value;
    else if (name === 'id' && !value.includes('\0')) this.lastId = value;
    return null;
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class SeedClient {
  constructor(opts) {
    this.o = opts;
    this.connections = [];
    this.httpRequests = [];
    this.sent = [];
    this.streams = [];
    this.responses = new Map();
    this.duplicates = [];
    this.pending = new Map();
    this.sid = null;
    this.notes = [];
    this.got7 = false;
  }

  channel(label, purpose) {
    const rec = { index: this.connections.length, label, purpose, requests: [], closed_by_client: null };
    this.connections.push(rec);
    return rec;
  }

  // One fetch; the record keeps the headers the analysis cares about, as client.py does.
  send(chan, method, headers, body, signal) {
    const rec = { seq: this.httpRequests.length + 1, connection: chan.index, method, path: '/mcp',
      headers: Object.fromEntries(headers.filter(([k]) =>
        ['accept', 'mcp-session-id', 'mcp-protocol-version', 'last-event-id'].includes(k.toLowerCase()))) };
    this.httpRequests.push(rec);
    chan.requests.push(rec.seq);
    if (body !== undefined) headers = headers.concat([['Content-Type', 'application/json']]);
    const p = fetch('/mcp', { method, headers, body, signal, cache: 'no-store' });
    return { rec, response: p };
  }

  recordSent(msg, rec) {
    const e = { seq: this.sent.length + 1, method: msg.method, kind: 'id' in msg ? 'request' : 'notification',
      http_request_seq: rec.seq, connection: rec.connection };
    if ('id' in msg) { e.id = msg.id; this.pending.set(JSON.stringify(msg.id), msg.method); }
    if (msg.method === 'tools/call') {
      e.tool = msg.params.name;
      const pt = (msg.params._meta || {}).progressToken;
      if (pt !== undefined) e.progressToken = pt;
    }
    this.sent.push(e);
    rec.jsonrpc = {};
    for (const k of ['method', 'id']) if (k in e) rec.jsonrpc[k] = e[k];
  }

  newStream(label, rec) {
    const s = { label, http_request_seq: rec.seq, connection: rec.connection, events: [] };
    this.streams.push(s);
    return s;
  }

  onEvent(stream, ev) {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { stream.events.push({ id: ev.id, summary: { kind: 'unparsable' } }); return; }
    const summary = summarize(msg);
    stream.events.push({ id: ev.id, summary });
    if (summary.kind !== 'response') return;
    const key = JSON.stringify(msg.id);
    const where = { stream: stream.label, event_id: ev.id };
    if (this.responses.has(key)) {
      this.duplicates.push({ response_to_id: msg.id, first: this.responses.get(key), again: where });
    } else {
      this.responses.set(key, where);
      this.pending.delete(key);
    }
    if (msg.id === 7) this.got7 = true;
  }

  // Reads an event stream until it ends or until stop(ev) says so; returns [bytes, stopped].
  async readStream(resp, stream, stop) {
    const reader = resp.body.getReader();
    const dec = new TextDecoder();
    const parser = new SseParser();
    let n = 0;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return [n, false];
      n += value.length;
      for (const ev of parser.feed(dec.decode(value, { stream: true }))) {
        this.onEvent(stream, ev);
        if (stop && stop(ev)) return [n, true];
      }
    }
  }

  postHeaders() {
    const h = [['Accept', 'application/json, text/event-stream']];
    if (this.sid) h.push(['Mcp-Session-Id', this.sid], ['MCP-Protocol-Version', PROTOCOL_VERSION]);
    return h;
  }

  async post(chan, msg, firstByteTimeoutMs) {
    const ctl = new AbortController();
    const { rec, response } = this.send(chan, 'POST', this.postHeaders(), JSON.stringify(msg), ctl.signal);
    this.recordSent(msg, rec);
    let resp;
    if (firstByteTimeoutMs === undefined) {
      resp = await response;
    } else {
      const timer = sleep(firstByteTimeoutMs).then(() => null);
      resp = await Promise.race([response, timer]);
      if (resp === null) {
        ctl.abort();
        response.catch(() => {});
        rec.status = null;
        rec.outcome = `no response byte within ${firstByteTimeoutMs / 1000} s; client gave up`;
        return [rec, null];
      }
    }
    rec.status = resp.status;
    rec.content_type = resp.headers.get('content-type');
    if (resp.headers.has('mcp-session-id')) rec.response_mcp_session_id = resp.headers.get('mcp-session-id');
    if ((rec.content_type || '').startsWith('text/event-stream')) {
      const stream = this.newStream(`post(id ${JSON.stringify(msg.id)})`, rec);
      [rec.body_bytes] = await this.readStream(resp, stream);
    } else {
      rec.body_bytes = (await resp.arrayBuffer()).byteLength;
    }
    rec.outcome = 'complete';
    return [rec, resp];
  }

  async getStream(chan, label, lastEventId) {
    const ctl = new AbortController();
    const h = [['Accept', 'text/event-stream'], ['Cache-Control', 'no-cache'],
      ['Mcp-Session-Id', this.sid], ['MCP-Protocol-Version', PROTOCOL_VERSION]];
    if (lastEventId !== undefined) h.push(['Last-Event-ID', lastEventId]);
    const { rec, response } = this.send(chan, 'GET', h, undefined, ctl.signal);
    const resp = await response;
    rec.status = resp.status;
    rec.content_type = resp.headers.get('content-type');
    rec.response_mcp_session_id = resp.headers.get('mcp-session-id');
    return { rec, resp, ctl, stream: this.newStream(label, rec) };
  }

  async run() {
    const a = this.channel('A', 'initialize, notifications/initialized, tools/call 7 (buffered)');
    const [, init] = await this.post(a, { jsonrpc: '2.0', id: 1, method: 'initialize', params: {
      protocolVersion: PROTOCOL_VERSION, capabilities: { roots: { listChanged: false } }, clientInfo: CLIENT_INFO } });
    this.sid = init.headers.get('mcp-session-id');
    await this.post(a, { jsonrpc: '2.0', method: 'notifications/initialized' });

    // The long tool call: nginx buffers its event stream, so not even the head arrives.
    const [rec7] = await this.post(a, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: {
      name: 'reindex', arguments: { collection: 'docs' }, _meta: { progressToken: 'reindex-7' } } },
    this.o.postTimeoutMs);
    if (rec7.status !== null) throw new Error('expected nginx to hold the POST response back');
    a.closed_by_client = 'fetch aborted (AbortController)';

    // SSE fallback: the standalone GET channel.
    const b = this.channel('B', 'GET /mcp fallback stream (aborted)');
    const g = await this.getStream(b, 'get#1 (fallback, no Last-Event-ID)');
    let seen = 0;
    let lastGetId;
    let startQuick;
    const quickGo = new Promise((r) => { startQuick = r; });
    const quick = this.quickCalls(quickGo);
    const [, dropped] = await this.readStream(g.resp, g.stream, (ev) => {
      seen += 1;
      lastGetId = ev.id;
      if (seen === 5) startQuick();
      return seen >= this.o.dropAfter;
    });
    if (!dropped) throw new Error('GET stream ended before the drop point');
    // Capitalised as client.py writes it: make/seed-incident/truth.py rejects a note ending in False.
    this.notes.push(`quick calls finished before the GET drop: ${this.quickDone === true ? 'True' : 'False'}`);
    g.ctl.abort();
    b.closed_by_client = 'fetch aborted (AbortController)';
    g.rec.outcome = `client aborted the fetch after GET event ${lastGetId}`;
    await quick;

    await sleep(this.o.reconnectDelayMs);
    const d = this.channel('D', 'GET /mcp resume with Last-Event-ID');
    this.lastEventIdSent = lastGetId;
    const r = await this.getStream(d, `get#2 (resume, Last-Event-ID ${lastGetId})`, lastGetId);
    const timedOut = sleep(this.o.resumeWaitMs).then(() => 'timeout');
    const got = this.readStream(r.resp, r.stream, () => this.got7).then(() => 'got', () => 'aborted');
    const how = await Promise.race([got, timedOut]);
    r.rec.outcome = how === 'got' ? 'client closed after the result of request 7 arrived'
      : `client gave up waiting ${this.o.resumeWaitMs / 1000} s for the result of request 7 and closed`;
    r.ctl.abort();
    d.closed_by_client = 'fetch aborted (AbortController)';
    await sleep(50);

    const h = [['Mcp-Session-Id', this.sid], ['MCP-Protocol-Version', PROTOCOL_VERSION]];
    const del = this.send(this.c, 'DELETE', h);
    const resp = await del.response;
    await resp.arrayBuffer();
    del.rec.status = resp.status;
    del.rec.outcome = 'complete';
  }

  async quickCalls(go) {
    await go;
    this.c = this.channel('C', 'tools/call 8..19 (keep-alive), DELETE');
    for (let i = 8; i < 20; i += 1) {
      await this.post(this.c, { jsonrpc: '2.0', id: i, method: 'tools/call', params: {
        name: 'lookup', arguments: { key: `doc-${i}` } } });
      await sleep(this.o.quickSpacingMs);
    }
    this.quickDone = true;
  }

  truth() {
    return {
      recorded_by: 'client (in the page, Chromium ' + navigator.userAgent.replace(/.*Chrome\/(\S+).*/, '$1') + ')',
      client_info: CLIENT_INFO,
      target: location.host,
      session_id: this.sid,
      sent_messages: this.sent,
      http_requests_sent: this.httpRequests.length,
      http_requests: this.httpRequests,
      connections: this.connections,
      streams: this.streams,
      last_event_id_sent: this.lastEventIdSent ?? null,
      responses_first_seen: Object.fromEntries(this.responses),
      duplicate_responses: this.duplicates,
      unanswered_requests: [...this.pending.keys()].map((k) => JSON.parse(k)),
      notes: this.notes,
    };
  }
}

// Called by record.mjs through page.evaluate; the truth is returned even when the script fails.
window.runScenario = async (opts) => {
  const c = new SeedClient(opts);
  let error = null;
  try { await c.run(); } catch (e) { error = String(e && e.stack || e); }
  return { truth: c.truth(), error };
};
