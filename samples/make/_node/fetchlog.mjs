// Shared by the TS capture clients: a JSONL logger and a fetch wrapper that records every
// HTTP request the SDK transport sends, the response head, and every SSE event it reads
// (client-side truth, independent of the pcap). The wrapper is in fetchtap.mjs, which has no
// Node import so that a browser page can bundle it too.
import fs from 'node:fs';

export { makeLoggingFetch } from './fetchtap.mjs';

export function makeNote(path) {
  const fd = fs.openSync(path, 'a');
  return (o) => fs.writeSync(fd, JSON.stringify({ ...o, t: Date.now() / 1000 }) + '\n');
}
