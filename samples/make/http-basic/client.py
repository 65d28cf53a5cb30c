#!/usr/bin/env python3
"""Raw-socket HTTP/1.1 client for the http-basic capture.

Opens three connections one after the other and logs, per connection (its own
local port), every byte it wrote (c2s) and every byte it read (s2c), and the
requests it sent, to a JSON file.
"""
import base64
import gzip
import json
import socket
import sys
import time

PORT = int(sys.argv[1])
LOG = sys.argv[2]


class Conn:
    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", PORT))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.port = self.sock.getsockname()[1]
        self.c2s = bytearray()
        self.s2c = bytearray()
        self.buf = b""
        self.requests = []
        self.statuses = []
        self.eof = False

    def send(self, *reqs):
        """Send one or more requests in ONE write (several = pipelined)."""
        data = b""
        for method, target, headers, body in reqs:
            h = "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUser-Agent: mcpf-http-basic-client/1\r\n" % (method, target, PORT)
            for k, v in headers:
                h += "%s: %s\r\n" % (k, v)
            if body is not None:
                h += "Content-Length: %d\r\n" % len(body)
            data += h.encode() + b"\r\n" + (body or b"")
            self.requests.append({"method": method, "target": target, "pipelined": len(reqs) > 1,
                                  "body_len": len(body or b"")})
        self.sock.sendall(data)
        self.c2s += data

    def fill(self):
        d = self.sock.recv(65536)
        if not d:
            self.eof = True
        self.s2c += d
        self.buf += d
        return d

    def read_response(self, head_request=False):
        while b"\r\n\r\n" not in self.buf:
            if not self.fill():
                raise RuntimeError("eof in headers")
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        hdr = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
        if head_request:
            body = b""
        elif hdr.get("transfer-encoding") == "chunked":
            body = b""
            while True:
                while b"\r\n" not in self.buf:
                    self.fill()
                size_line, self.buf = self.buf.split(b"\r\n", 1)
                n = int(size_line, 16)
                while len(self.buf) < n + 2:
                    self.fill()
                body += self.buf[:n]
                self.buf = self.buf[n + 2:]
                if n == 0:
                    break
        elif "content-length" in hdr:
            n = int(hdr["content-length"])
            while len(self.buf) < n:
                self.fill()
            body, self.buf = self.buf[:n], self.buf[n:]
        else:  # close-delimited
            while self.fill():
                pass
            body, self.buf = self.buf, b""
        if hdr.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        self.statuses.append(status)
        return status, hdr, body

    def close(self):
        self.sock.close()

    def record(self, closed_by):
        return {"client_port": self.port, "c2s_b64": base64.b64encode(bytes(self.c2s)).decode(),
                "s2c_read_b64": base64.b64encode(bytes(self.s2c)).decode(),
                "requests": self.requests, "statuses": self.statuses, "closed_by": closed_by}


def main():
    out = []
    pause = 0.1
    # Connection 1: keep-alive, a POST with a body, a chunked response, a pipelined pair.
    c = Conn()
    c.send(("GET", "/index.html", [("Accept", "text/html")], None))
    assert c.read_response()[0] == 200
    time.sleep(pause)
    body = json.dumps({"jsonrpc": "2.0", "note": "not MCP, just a JSON body", "n": [1, 2, 3]}).encode()
    c.send(("POST", "/api/echo", [("Content-Type", "application/json")], body))
    assert c.read_response()[0] == 200
    time.sleep(pause)
    c.send(("GET", "/chunked", [], None))
    st, hdr, b = c.read_response()
    assert st == 200 and hdr["transfer-encoding"] == "chunked"
    time.sleep(pause)
    c.send(("GET", "/pipe/a", [], None), ("GET", "/pipe/b", [], None))
    assert c.read_response()[0] == 200
    assert c.read_response()[0] == 200
    time.sleep(pause)
    c.close()
    out.append(c.record("client"))
    time.sleep(pause)
    # Connection 2: gzip response, then a Connection: close response with a close-delimited body.
    c = Conn()
    c.send(("GET", "/gzip", [("Accept-Encoding", "gzip")], None))
    st, hdr, b = c.read_response()
    assert st == 200 and hdr["content-encoding"] == "gzip" and b.startswith(b"line 000")
    time.sleep(pause)
    c.send(("GET", "/close", [], None))
    st, hdr, b = c.read_response()
    assert st == 200 and hdr["connection"] == "close" and c.eof
    c.close()
    out.append(c.record("server"))
    time.sleep(pause)
    # Connection 3: a 404 and a HEAD (Content-Length but no body).
    c = Conn()
    c.send(("GET", "/missing", [], None))
    assert c.read_response()[0] == 404
    time.sleep(pause)
    c.send(("HEAD", "/index.html", [], None))
    st, hdr, b = c.read_response(head_request=True)
    assert st == 200 and int(hdr["content-length"]) > 0 and b == b""
    time.sleep(pause)
    c.close()
    out.append(c.record("client"))
    with open(LOG, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
