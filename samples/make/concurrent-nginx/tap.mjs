// Client-side truth for the TypeScript SDK clients: a fetch wrapper (passed to
// StreamableHTTPClientTransport as `fetch`) that logs every HTTP request the SDK sends, the
// response head, the local TCP port of the connection undici used for it (from undici's
// diagnostics channels, matched to the call through an AsyncLocalStorage), every SSE event read on
// the response and how the response ended. Several sessions share one process and one undici
// connection pool (global fetch): every line carries the session tag.
import fs from 'node:fs';
import dc from 'node:diagnostics_channel';
import { AsyncLocalStorage } from 'node:async_hooks';

export function makeNote(path) {
  const fd = fs.openSync(path, 'a');
  return (o) => fs.writeSync(fd, JSON.stringify({ ...o, t: Date.now() / 1000 }) + '\n');
}

const als = new AsyncLocalStorage();
const reqCtx = new WeakMap();
let globalNote = null;
dc.channel('undici:request:create').subscribe(({ request }) => {
  const ctx = als.getStore();
  if (ctx) reqCtx.set(request, ctx);
});
dc.channel('undici:client:sendHeaders').subscribe(({ request, socket }) => {
  const ctx = reqCtx.get(request);
  if (ctx && globalNote) globalNote({ ev: 'http_sent', session: ctx.session, seq: ctx.seq, local_port: socket.localPort });
});

// Every TCP connection undici opens (also those that never carry a request).
dc.channel('undici:client:connected').subscribe(({ socket }) => {
  const ctx = als.getStore();
  if (globalNote) globalNote({ ev: 'tcp_connected', local_port: socket.localPort, during: ctx ? `${ctx.session} seq ${ctx.seq}` : null });
});

function describe(m) {
  if (Array.isArray(m)) return { kind: 'batch' };
  const x = {};
  if ('method' in m) { x.method = m.method; x.kind = 'id' in m ? 'request' : 'notification'; }
  else x.kind = 'result' in m ? 'response' : ('error' in m ? 'error' : 'other');
  if ('id' in m) x.id = m.id;
  if (m.method === 'tools/call') {
    x.tool = m.params?.name;
    if (m.params?._meta?.progressToken !== undefined) x.progressToken = m.params._meta.progressToken;
  }
  if (m.method === 'notifications/progress') { x.progressToken = m.params?.progressToken; x.progress = m.params?.progress; }
  return x;
}

// WHATWG event-stream parsing (CR, LF, CRLF), logging one line per dispatched event (or id-only block).
function sseTap(note, session, seq) {
  let buf = '';
  let pendingCR = false;
  let data = null; let event = ''; let thisId = null; let lastId = ''; let retry = null; let n = 0;
  const dec = new TextDecoder();
  const line = (l) => {
    if (l === '') {
      if (data === null) {
        if (thisId !== null || retry !== null) { n++; note({ ev: 'sse_event', session, seq, n, id: thisId, last_event_id: lastId || null, retry: retry ?? undefined, dispatched: false }); }
      } else {
        n++;
        const rec = { ev: 'sse_event', session, seq, n, id: thisId, last_event_id: lastId || null, event: event || 'message' };
        if (retry !== null) rec.retry = retry;
        if (data === '') rec.priming = true;
        else { try { rec.message = describe(JSON.parse(data)); } catch { rec.message = { kind: 'unparsable' }; } }
        note(rec);
      }
      data = null; event = ''; thisId = null; retry = null;
      return;
    }
    if (l.startsWith(':')) return;
    const c = l.indexOf(':');
    const name = c < 0 ? l : l.slice(0, c);
    let value = c < 0 ? '' : l.slice(c + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'data') data = data === null ? value : data + '\n' + value;
    else if (name === 'event') event = value;
    else if (name === 'id' && !value.includes('\0')) { lastId = value; thisId = value; }
    else if (name === 'retry' && /^\d+$/.test(value)) retry = Number(value);
  };
  const scan = (text) => {
    if (pendingCR && text.startsWith('\n')) text = text.slice(1);
    pendingCR = false;
    buf += text;
    for (;;) {
      const m = buf.search(/[\r\n]/);
      if (m < 0) break;
      const l = buf.slice(0, m);
      if (buf[m] === '\r') {
        if (m + 1 < buf.length) buf = buf.slice(buf[m + 1] === '\n' ? m + 2 : m + 1);
        else { buf = ''; pendingCR = true; }
      } else buf = buf.slice(m + 1);
      line(l);
    }
  };
  return { scan: (chunk) => scan(dec.decode(chunk, { stream: true })), count: () => n };
}

export function makeLoggingFetch(note, session) {
  globalNote = note;
  let seq = 0;
  return async function loggingFetch(url, init = {}) {
    const mySeq = ++seq;
    const h = new Headers(init.headers);
    let body = null;
    if (typeof init.body === 'string') { try { body = describe(JSON.parse(init.body)); } catch { body = { kind: 'unparsable' }; } }
    const u = new URL(String(url));
    note({ ev: 'http_request', session, seq: mySeq, method: init.method ?? 'GET', path: u.pathname,
           mcp_session_id: h.get('mcp-session-id'), last_event_id: h.get('last-event-id'),
           mcp_protocol_version: h.get('mcp-protocol-version'), accept: h.get('accept'), jsonrpc: body });
    let res;
    try { res = await als.run({ session, seq: mySeq }, () => fetch(url, init)); }
    catch (e) { note({ ev: 'http_error', session, seq: mySeq, error: String(e?.name ?? e) }); throw e; }
    const ctype = res.headers.get('content-type');
    note({ ev: 'http_response', session, seq: mySeq, status: res.status, content_type: ctype,
           mcp_session_id: res.headers.get('mcp-session-id') });
    if (!res.body) { note({ ev: 'response_end', session, seq: mySeq, outcome: 'complete', bytes: 0, events: 0 }); return res; }
    const tap = (ctype ?? '').startsWith('text/event-stream') ? sseTap(note, session, mySeq) : null;
    let bytes = 0; let ended = false;
    const end = (outcome, extra = {}) => { if (!ended) { ended = true; note({ ev: 'response_end', session, seq: mySeq, outcome, bytes, events: tap ? tap.count() : 0, ...extra }); } };
    const reader = res.body.getReader();
    const stream = new ReadableStream({
      async pull(ctl) {
        try {
          const { done, value } = await reader.read();
          if (done) { end('complete'); ctl.close(); return; }
          bytes += value.length;
          if (tap) tap.scan(value);
          ctl.enqueue(value);
        } catch (e) { end('error', { error: String(e?.name ?? e) }); ctl.error(e); }
      },
      cancel(reason) { end('closed_by_client'); return reader.cancel(reason); },
    });
    return new Response(stream, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
