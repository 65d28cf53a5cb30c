#!/usr/bin/env python3
"""Tiny raw-socket HTTP/1.1 server for the http-basic capture.

Logs, per accepted connection (keyed by the client's port), every byte it wrote
(s2c) and every byte it read (c2s), plus the requests it parsed and the statuses
it answered, to a JSON file given on the command line. Serves exactly N
connections, then exits.
"""
import base64
import gzip
import json
import socket
import sys
import threading
import time

PORT = int(sys.argv[1])
LOG = sys.argv[2]
NCONN = int(sys.argv[3])

INDEX = b"<!doctype html><title>mcpf</title><p>hello from http-basic</p>\n"
BIG_TEXT = b"".join(b"line %03d: the quick brown fox jumps over the lazy dog\n" % i for i in range(60))


class Conn:
    def __init__(self, sock, addr):
        self.sock, self.addr = sock, addr
        self.c2s = bytearray()
        self.s2c = bytearray()
        self.requests = []
        self.responses = []
        self.buf = b""
        self.closed_by = None

    def write(self, data):
        self.sock.sendall(data)
        self.s2c += data

    def read_more(self):
        d = self.sock.recv(65536)
        self.c2s += d
        self.buf += d
        return d

    def next_request(self):
        while b"\r\n\r\n" not in self.buf:
            if not self.read_more():
                return None
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
        headers = {}
        for ln in lines[1:]:
            k, v = ln.split(":", 1)
            headers[k.strip().lower()] = v.strip()
        n = int(headers.get("content-length", "0"))
        while len(self.buf) < n:
            if not self.read_more():
                raise RuntimeError("short body")
        body, self.buf = self.buf[:n], self.buf[n:]
        pipelined_behind = len(self.buf) > 0  # another request already waiting
        return method, target, headers, body, pipelined_behind


def respond(c, method, target, headers, body):
    """Returns True when the connection must be closed after this response."""
    def simple(status, reason, ctype, payload, extra=b""):
        h = (b"HTTP/1.1 %d %s\r\nServer: mcpf-http-basic\r\nContent-Type: %s\r\n"
             b"Content-Length: %d\r\n" % (status, reason, ctype, len(payload))) + extra + b"\r\n"
        c.write(h + (b"" if method == "HEAD" else payload))
        c.responses.append({"status": status, "framing": "none(HEAD)" if method == "HEAD" else "content-length",
                            "entity_len": len(payload), "content_encoding": None})

    if target in ("/", "/index.html") and method in ("GET", "HEAD"):
        simple(200, b"OK", b"text/html; charset=utf-8", INDEX)
    elif target == "/api/echo" and method == "POST":
        payload = json.dumps({"received_bytes": len(body), "echo": json.loads(body)}, separators=(",", ":")).encode()
        simple(200, b"OK", b"application/json", payload)
    elif target in ("/pipe/a", "/pipe/b"):
        simple(200, b"OK", b"text/plain", b"pipelined response for " + target.encode() + b"\n")
    elif target == "/chunked":
        c.write(b"HTTP/1.1 200 OK\r\nServer: mcpf-http-basic\r\nContent-Type: text/plain\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        pieces = [b"first chunk\n", b"second chunk, a little longer\n", BIG_TEXT[:700], b"last\n"]
        for p in pieces:
            time.sleep(0.05)
            c.write(b"%x\r\n" % len(p) + p + b"\r\n")
        time.sleep(0.05)
        c.write(b"0\r\n\r\n")
        c.responses.append({"status": 200, "framing": "chunked", "entity_len": sum(map(len, pieces)),
                            "content_encoding": None, "chunks": [len(p) for p in pieces]})
    elif target == "/gzip":
        assert "gzip" in headers.get("accept-encoding", "")
        z = gzip.compress(BIG_TEXT, mtime=0)
        c.write((b"HTTP/1.1 200 OK\r\nServer: mcpf-http-basic\r\nContent-Type: text/plain\r\n"
                 b"Content-Encoding: gzip\r\nVary: Accept-Encoding\r\nContent-Length: %d\r\n\r\n" % len(z)) + z)
        c.responses.append({"status": 200, "framing": "content-length", "entity_len": len(z),
                            "content_encoding": "gzip", "decoded_len": len(BIG_TEXT)})
    elif target == "/close":
        c.write(b"HTTP/1.1 200 OK\r\nServer: mcpf-http-basic\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
        body_parts = [b"this body has no length; ", b"it ends when the server closes.\n"]
        for p in body_parts:
            time.sleep(0.05)
            c.write(p)
        c.responses.append({"status": 200, "framing": "close", "entity_len": sum(map(len, body_parts)),
                            "content_encoding": None})
        return True
    else:
        simple(404, b"Not Found", b"text/plain", b"no such resource: " + target.encode() + b"\n")
    return False


def serve(c, done):
    try:
        while True:
            r = c.next_request()
            if r is None:
                c.closed_by = "client"
                break
            method, target, headers, body, pipelined_behind = r
            c.requests.append({"method": method, "target": target, "body_len": len(body),
                               "next_already_buffered": pipelined_behind})
            if respond(c, method, target, headers, body):
                c.closed_by = "server"
                break
    finally:
        c.sock.close()
        done.append(c)


def main():
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", PORT))
    ls.listen(8)
    done, threads = [], []
    for _ in range(NCONN):
        s, addr = ls.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t = threading.Thread(target=serve, args=(Conn(s, addr), done))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    ls.close()
    out = {str(c.addr[1]): {"client_port": c.addr[1], "s2c_b64": base64.b64encode(bytes(c.s2c)).decode(),
                            "c2s_read_b64": base64.b64encode(bytes(c.c2s)).decode(),
                            "requests": c.requests, "responses": c.responses, "closed_by": c.closed_by}
           for c in done}
    with open(LOG, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
