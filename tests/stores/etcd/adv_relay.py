#!/usr/bin/env python3
"""adv_relay.py - an HTTP relay on 127.0.0.1 in front of a real etcd
gateway that loses one reply: the first /v3/kv/txn that puts a key under
NAME/ is passed on to etcd (it lands) and its answer is cut after its
first byte, the client's connection closed.  Everything else is passed on both ways.

  adv_relay.py UPSTREAM_PORT NAME [SKIP]   prints its port on stdout, then
  serves; SKIP (default 0): the first SKIP such puts pass, the next one's
  answer is lost
  (a line "dropped" goes to stderr when it has lost the reply)
"""
import base64
import http.client
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UP = int(sys.argv[1])
NAME = sys.argv[2].encode() + b"/"
SKIP = int(sys.argv[3]) if len(sys.argv) > 3 else 0
seen = [0]
dropped = threading.Event()
mu = threading.Lock()


def puts_name(body):
    try:
        o = json.loads(body)
    except ValueError:
        return False
    for op in o.get("success", []) or []:
        p = op.get("request_put")
        if p and base64.b64decode(p.get("key", "")).startswith(NAME):
            return True
    return False


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(n)
        drop = False
        if self.path == "/v3/kv/txn" and puts_name(body):
            with mu:
                seen[0] += 1
                if seen[0] > SKIP and not dropped.is_set():
                    dropped.set()
                    drop = True
        c = http.client.HTTPConnection("127.0.0.1", UP, timeout=30)
        if self.path == "/v3/watch":
            c.request("POST", self.path, body,
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            self.send_response(r.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                while True:
                    b = r.read1(65536)
                    if not b:
                        break
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            c.close()
            self.close_connection = True
            return
        hdrs = {"Content-Type": "application/json"}
        if self.headers.get("Authorization"):
            hdrs["Authorization"] = self.headers["Authorization"]
        c.request("POST", self.path, body, hdrs)
        r = c.getresponse()
        data = r.read()
        c.close()
        if drop:
            sys.stderr.write("dropped\n")
            sys.stderr.flush()
            # Half an answer, then nothing (a reply lost on the way: with
            # no byte at all, libcurl would send the POST again itself on
            # a reused connection).
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: "
                             b"application/json\r\nContent-Length: 4096"
                             b"\r\n\r\n{")
            self.wfile.flush()
            self.close_connection = True
            return  # the txn landed; its answer is lost
        self.send_response(r.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
