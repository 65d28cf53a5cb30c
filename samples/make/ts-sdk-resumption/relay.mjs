// A small TCP relay of our own between the MCP client and server. It forwards bytes both
// ways untouched, except for ONE connection: the first whose client->server bytes contain
// MATCH. On that connection it counts SSE event terminators ("\n\n") in the server->client
// bytes sent after the match; once CUT_AFTER events have been forwarded it stops forwarding,
// waits HOLD_MS (so the client has read them), then resets (RST) both the client side and
// the upstream side. Everything it did is logged as JSONL.
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

let cutDone = false;
let connSeq = 0;

const server = net.createServer((client) => {
  const id = ++connSeq;
  const info = { conn: id, client_port: client.remotePort, upstream_local_port: null, c2s: 0, s2c: 0,
                 request_lines: [], target: false, events_forwarded_after_match: 0, reset: false };
  let c2sText = '';
  let afterMatch = null; // server->client text after the match, for counting events
  let cut = false;
  const upstream = net.connect(UPSTREAM, '127.0.0.1', () => { info.upstream_local_port = upstream.localPort; });
  client.setNoDelay(true); upstream.setNoDelay(true);

  client.on('data', (d) => {
    info.c2s += d.length;
    c2sText += d.toString('latin1');
    for (const m of d.toString('latin1').matchAll(/(?:^|\r\n)((?:GET|POST|DELETE|PUT) \S+ HTTP\/1\.1)/g)) info.request_lines.push(m[1]);
    if (!cutDone && !info.target && c2sText.includes(MATCH)) {
      info.target = true; afterMatch = '';
      note({ ev: 'target', conn: id, client_port: client.remotePort });
    }
    if (!cut) upstream.write(d);
  });
  upstream.on('data', (d) => {
    if (cut) return; // swallowed after the cut
    info.s2c += d.length;
    client.write(d);
    if (afterMatch !== null) {
      afterMatch += d.toString('latin1');
      const n = afterMatch.split('\n\n').length - 1;
      info.events_forwarded_after_match = n;
      if (n >= CUT_AFTER && !cutDone) {
        cut = true; cutDone = true;
        note({ ev: 'cut_scheduled', conn: id, events_forwarded: n, s2c_bytes_forwarded: info.s2c,
               forwarded_tail: afterMatch.slice(-600) });
        setTimeout(() => {
          info.reset = true;
          note({ ev: 'reset', conn: id, client_port: client.remotePort, upstream_local_port: upstream.localPort });
          client.resetAndDestroy();
          upstream.resetAndDestroy();
        }, HOLD_MS);
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
