#!/usr/bin/env python3
"""A hostile etcd v3 JSON gateway on 127.0.0.1 for the etcd store tests
(issue 38).  It passes every request on to a real etcd (UPSTREAM, a
"http://127.0.0.1:PORT" of the test's own server) and answers
/v3/maintenance/status as that server does, so dlock's open succeeds; the
requests whose path contains WHERE ("all": every other path) it answers
per MODE:

  garbage    HTTP 200 with a body that is not JSON
  half       HTTP 200, chunked, half a chunk of JSON, then silence
  500        HTTP 500 with etcd's error body
  hang       reads the request and never answers
  deadlease  /v3/lease/keepalive answered 200 with no TTL (etcd's answer
             for a lease it does not have); the rest passed on
  cluster    the real answer with another header cluster_id

  fake_etcd.py MODE WHERE UPSTREAM PORTFIFO

The port is written to PORTFIFO once the socket listens.  A silent or
hanging connection is held at most 30 s; the test kills the process.
stdlib only.
"""
import http.client
import http.server
import json
import sys
import threading
import time
import urllib.parse

mode, where, upstream, portfile = sys.argv[1:5]
up = urllib.parse.urlsplit(upstream)
HOLD_S = 30


def forward(path, body):
    c = http.client.HTTPConnection(up.hostname, up.port, timeout=10)
    try:
        c.request("POST", path, body, {"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def hold(self):
        # Silence: keep the connection open until the client goes.
        self.close_connection = True
        end = time.monotonic() + HOLD_S
        self.connection.settimeout(0.2)
        while time.monotonic() < end:
            try:
                if self.connection.recv(1) == b"":
                    return
            except OSError as e:
                if "timed out" not in str(e):
                    return

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        path = self.path
        hit = path != "/v3/maintenance/status" and (
            where == "all" or where in path)
        if not hit:
            self.reply(*forward(path, body))
            return
        if mode == "garbage":
            self.reply(200, b'{"header": {"cluster_id": <<not json>>')
        elif mode == "half":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b'100\r\n{"header":{"cluster_id":"1')
            self.wfile.flush()
            self.hold()
        elif mode == "500":
            self.reply(500, b'{"error":"etcdserver: internal","code":13,'
                       b'"message":"etcdserver: internal"}')
        elif mode == "hang":
            self.hold()
        elif mode == "deadlease" and "/v3/lease/keepalive" in path:
            st, real = forward(path, body)
            r = json.loads(real)
            res = r.get("result", {})
            res.pop("TTL", None)
            self.reply(200, json.dumps({"result": res}).encode())
        elif mode == "cluster":
            st, real = forward(path, body)
            r = json.loads(real)
            h = r.get("header") or r.get("result", {}).get("header")
            if h is not None:
                h["cluster_id"] = "12345678901234567"
            self.reply(st, json.dumps(r).encode())
        else:
            self.reply(*forward(path, body))


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
with open(portfile, "w") as f:
    f.write("%d\n" % srv.server_address[1])
srv.serve_forever()
