// The part of fetchlog.mjs that runs anywhere fetch does (Node or a browser page, bundled by
// make/chromium-har.sh): a fetch wrapper that records every HTTP request the SDK transport sends,
// the response head, and every SSE event it reads, through a note(object) callback.
function sseTap(note, reqSeq) {
  let buf = '';
  const dec = new TextDecoder();
  const scan = () => {
    let idx;
    while ((idx = buf.search(/\r\n\r\n|\n\n|\r\r/)) >= 0) {
      const block = buf.slice(0, idx);
      buf = buf.slice(idx + (buf.startsWith('\r\n\r\n', idx) ? 4 : 2));
      const ev = { ev: 'sse_event', seq: reqSeq };
      for (const line of block.split(/\r\n|\n|\r/)) {
        if (line.startsWith(':')) { ev.comment = line; continue; }
        const c = line.indexOf(':');
        const name = c < 0 ? line : line.slice(0, c);
        const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
        if (name === 'id') ev.id = value;
        else if (name === 'event') ev.event = value;
        else if (name === 'retry') ev.retry = Number(value);
        else if (name === 'data') ev.data = (ev.data === undefined ? '' : ev.data + '\n') + value;
      }
      if (ev.data) {
        try {
          const m = JSON.parse(ev.data);
          ev.message = { method: m.method, id: m.id, progress: m.params?.progress };
        } catch { ev.data_text = ev.data; }
      }
      if (ev.data !== undefined) ev.data_len = ev.data.length;
      delete ev.data;
      note(ev);
    }
  };
  return new TransformStream({
    transform(chunk, ctl) { buf += dec.decode(chunk, { stream: true }); scan(); ctl.enqueue(chunk); },
    flush() { note({ ev: 'sse_end', seq: reqSeq, leftover: buf.length }); },
  });
}

export function makeLoggingFetch(note) {
  let seq = 0;
  return async function loggingFetch(url, init = {}) {
    const mySeq = ++seq;
    const h = new Headers(init.headers);
    let body = null;
    if (typeof init.body === 'string') body = JSON.parse(init.body);
    note({ ev: 'http_request', seq: mySeq, method: init.method ?? 'GET', url: String(url),
           mcp_session_id: h.get('mcp-session-id'), last_event_id: h.get('last-event-id'),
           mcp_protocol_version: h.get('mcp-protocol-version'), accept: h.get('accept'),
           authorization: h.get('authorization'), body });
    let res;
    try { res = await fetch(url, init); } catch (e) { note({ ev: 'http_error', seq: mySeq, error: String(e) }); throw e; }
    note({ ev: 'http_response', seq: mySeq, status: res.status, content_type: res.headers.get('content-type'),
           mcp_session_id: res.headers.get('mcp-session-id') });
    if (res.body && (res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const tapped = res.body.pipeThrough(sseTap(note, mySeq));
      return new Response(tapped, { status: res.status, statusText: res.statusText, headers: res.headers });
    }
    return res;
  };
}
