#!/usr/bin/env python3
"""etcd_http_gateway.py - a small hostile etcd v3 JSON gateway on
127.0.0.1 for issue 43's transport cases (items 8, 14, 15).  It answers
/v3/maintenance/status, /v3/auth/authenticate, /v3/kv/range and
/v3/kv/txn (an empty keyspace) as etcd would, except as MODE says:

  more-same     every range answers one key, "m/1", and "more": true
  more-new      every range answers the next 1000 new keys ("m/<n>/1"),
                and "more": true: a keyspace without end
  more-slow     the same, each page 0.3 s late (the scan's deadline, not
                its key count, ends it)
  echo-login    the login (/v3/auth/authenticate) answers an error whose
                message is ARG (the test's fragment of the password)
  echo-txn      the login succeeds; every txn answers an error whose
                message is ARG
  unauth-login  the login answers Unauthenticated (code 16)
  unauth-ops    the login succeeds; everything else but the status
                answers Unauthenticated (code 16)

  etcd_http_gateway.py MODE ARG LOG    prints its port on stdout, then
  serves; each request's path is appended to LOG as it comes.
stdlib only.
"""
import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE, ARG, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
mu = threading.Lock()
state = {"next": 0}
HDR = {"cluster_id": "4242", "member_id": "1", "revision": "7",
       "raft_term": "2"}
UNAUTH = {"error": "etcdserver: invalid auth token", "code": 16,
          "message": "etcdserver: invalid auth token"}


def b64e(b):
    return base64.b64encode(b).decode()


def kv(k):
    return {"key": b64e(k), "create_revision": "2", "mod_revision": "2",
            "version": "1"}


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, obj, status=200):
        data = (json.dumps(obj) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        self.rfile.read(n)
        p = self.path
        with mu:
            with open(LOG, "a") as f:
                f.write(p + "\n")
        if p == "/v3/maintenance/status":
            return self.send({"header": HDR, "version": "3.4.23"})
        if p == "/v3/auth/authenticate":
            if MODE == "echo-login":
                return self.send({"error": ARG, "code": 3, "message": ARG},
                                 400)
            if MODE == "unauth-login":
                return self.send(UNAUTH, 401)
            return self.send({"header": HDR, "token": "tok.1"})
        if MODE == "unauth-ops":
            return self.send(UNAUTH, 401)
        if MODE == "echo-txn" and p == "/v3/kv/txn":
            return self.send({"error": ARG, "code": 9, "message": ARG}, 400)
        if p == "/v3/kv/range":
            out = {"header": HDR}
            if MODE == "more-same":
                out.update(kvs=[kv(b"m/1")], more=True, count="2")
            elif MODE in ("more-new", "more-slow"):
                if MODE == "more-slow":
                    time.sleep(0.3)
                with mu:
                    first = state["next"]
                    state["next"] += 1000
                out.update(kvs=[kv(b"m/%012d/1" % i)
                                for i in range(first, first + 1000)],
                           more=True, count=str(first + 2000))
            return self.send(out)
        if p == "/v3/kv/txn":
            return self.send({"header": HDR, "succeeded": True,
                              "responses": [{"response_range":
                                             {"header": HDR}},
                                            {"response_range":
                                             {"header": HDR}}]})
        return self.send({"error": "not found", "code": 12,
                          "message": "not found"}, 404)


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
