// A small TCP relay of our own between the MCP client and server (make/ts-sdk-resumption/relay.mjs
// with a second cut). It forwards bytes both ways untouched, except on TWO connections:
//  1. the POST stream: the first connection whose client->server bytes contain MATCH. It counts
//     SSE event terminators ("\n\n") in the server->client bytes sent after the match; once
//     CUT_AFTER events have been forwarded it stops forwarding, waits HOLD_MS (so the client has
//     read them), then resets (RST) both the client side and the upstream side;
//  2. the first resume after that cut: the first request (on any connection) whose head carries a
//     Last-Event-ID header. Of the server's answer it forwards the response head only (the bytes up
//     to the first CRLFCRLF), swallows everything after it (the replayed events), waits HOLD_MS,
//     then resets both sides: an "empty" resumed stream, cut before it carried any event.
// Everything it did, and what it swallowed, is logged as JSONL.
//
// usage: node relay.mjs LISTEN_PORT UPSTREAM_PORT LOG_JSONL MATCH CUT_AFTER [HOLD_MS]
import net from 'node:net';
import fs from 'node:fs';

const [LISTEN, UPSTREAM] = [Number(process.argv[2]), Number(process.argv[3])];
const logFd = fs.openSync(process.argv[4], 'a');
const MATCH = process.argv[5];
const CUT_AFTER = Number(process.argv[6]);
const HOLD_MS = Number(process.argv[7] ?? 200);
const note = (o) => fs.writeSync(logFd, JSON.stringify({ ...o, t: Date.now() / 1000 }) + '\n');

let postCutDone = false;   // cut 1 happened
let resumeCutDone = false; // cut 2 chosen
let connSeq = 0;

const server = net.createServer((client) => {
  const id = ++connSeq;
  const info = { conn: id, client_port: client.remotePort, upstream_local_port: null, c2s: 0, s2c: 0,
                 request_lines: [], target: null, events_forwarded_after_match: 0, reset: false };
  let c2sText = '';
  let afterMatch = null;  // cut 1: server->client text after the match, for counting events
  let resumeText = null;  // cut 2: server->client text after the resume request was seen
  let swallowed = '';
  let cut = false;
  const upstream = net.connect(UPSTREAM, '127.0.0.1', () => { info.upstream_local_port = upstream.localPort; });
  client.setNoDelay(true); upstream.setNoDelay(true);

  const resetBoth = (why) => setTimeout(() => {
    info.reset = true;
    note({ ev: 'reset', cut: why, conn: id, client_port: client.remotePort, upstream_local_port: upstream.localPort,
           s2c_bytes_swallowed: swallowed.length, swallowed_text: swallowed.slice(0, 4000) });
    client.resetAndDestroy();
    upstream.resetAndDestroy();
  }, HOLD_MS);

  client.on('data', (d) => {
    info.c2s += d.length;
    const from = c2sText.length;
    c2sText += d.toString('latin1');
    for (const m of d.toString('latin1').matchAll(/(?:^|\r\n)((?:GET|POST|DELETE|PUT) \S+ HTTP\/1\.1)/g)) info.request_lines.push(m[1]);
    if (!postCutDone && !info.target && c2sText.includes(MATCH)) {
      info.target = 'post_stream'; afterMatch = '';
      note({ ev: 'target', cut: 'post_stream', conn: id, client_port: client.remotePort });
    }
    if (postCutDone && !resumeCutDone && !info.target) {
      const m = /\r\nlast-event-id: *([^\r\n]*)\r\n/i.exec(c2sText.slice(Math.max(0, from - 200)));
      if (m) {
        info.target = 'resumed_get'; resumeCutDone = true; resumeText = '';
        note({ ev: 'target', cut: 'resumed_get', conn: id, client_port: client.remotePort, last_event_id: m[1] });
      }
    }
    if (!cut) upstream.write(d);
  });
  upstream.on('data', (d) => {
    if (cut) { swallowed += d.toString('latin1'); return; } // swallowed after the cut
    if (resumeText !== null) {
      // cut 2: forward the response head only, then nothing
      resumeText += d.toString('latin1');
      const end = resumeText.indexOf('\r\n\r\n');
      if (end < 0) { info.s2c += d.length; client.write(d); return; }
      const already = resumeText.length - d.length;          // head bytes forwarded before this chunk
      const fwd = Buffer.from(resumeText.slice(already, end + 4), 'latin1');
      info.s2c += fwd.length;
      client.write(fwd);
      swallowed = resumeText.slice(end + 4);
      cut = true;
      note({ ev: 'cut_scheduled', cut: 'resumed_get', conn: id, response_head: resumeText.slice(0, end),
             events_forwarded: 0, s2c_bytes_forwarded: info.s2c });
      resetBoth('resumed_get');
      return;
    }
    info.s2c += d.length;
    client.write(d);
    if (afterMatch !== null) {
      afterMatch += d.toString('latin1');
      const n = afterMatch.split('\n\n').length - 1;
      info.events_forwarded_after_match = n;
      if (n >= CUT_AFTER && !postCutDone) {
        cut = true; postCutDone = true;
        note({ ev: 'cut_scheduled', cut: 'post_stream', conn: id, events_forwarded: n, s2c_bytes_forwarded: info.s2c,
               forwarded_tail: afterMatch.slice(-1500) });
        resetBoth('post_stream');
      }
    }
  });
  const end = (who) => () => note({ ev: 'closed', by: who, ...info });
  client.on('end', () => { if (!cut) upstream.end(); });
  upstream.on('end', () => { if (!cut) client.end(); });
  client.on('close', end('client-side-close'));
  client.on('error', (e) => note({ ev: 'client_error', conn: id, error: String(e) }));
  upstream.on('error', (e) => note({ ev: 'upstream_error', conn: id, error: String(e) }));
  upstream.on('close', () => { if (!client.destroyed && !cut) client.destroy(); });
});
server.listen(LISTEN, '127.0.0.1', () => note({ ev: 'listening', port: LISTEN, upstream: UPSTREAM }));
process.on('SIGTERM', () => process.exit(0));
