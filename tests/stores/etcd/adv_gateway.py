#!/usr/bin/env python3
"""adv_gateway.py - a small, hostile etcd v3 JSON gateway on 127.0.0.1.

It keeps keys and leases in memory well enough for dlock's etcd store to
open, acquire, renew and release (txn with create-revision compares, put,
range, delete, lease grant/keepalive/revoke/timetolive, a watch that
waits), and then misbehaves in the way MODE says:

  honest        no misbehaviour (the control)
  ttl-max       grants and keepalives answer TTL "9223372036854775807"
  ttl-huge      ... TTL "9223372036854775" (times 1000 overflows int64)
  ttl-live      lease time-to-live answers TTL and grantedTTL
                "9223372036854775807" (status, --once-per read them)
  ttl-junk      keepalives answer TTL "12abc"
  ka-neg        keepalives answer TTL "-1"
  ka-error      keepalives answer HTTP 200 {"result": {"error": ...}}
  slow          every reply after the first status is sent 1 byte a second
  big           range and txn replies are 17 MiB of valid JSON
  watch-line    a watch sends a line that never ends (1 KiB every 50 ms)
  watch-flood   a watch answers "canceled" at once, every time
  kvs-int       a read-only txn (no compare: the queue re-read, the
                renewal's key check, the run records' read) answers each
                range's "kvs" as the number 5
  watch-bad     a watch answers {"result": {"events": 5}}
  hang-txn      a txn that puts (an acquire's) is never answered; the
                rest is
  hang-revoke   ... and a lease revoke is never answered either
  cluster-flip  after the first N requests (N = ARG, default 3) the header
                names another cluster id
  bomb          range and txn replies are 15 MiB of "kvs": [[],[],...]
                (5 million arrays: json-c would spend some 800 MiB on them)
  watch-bomb    a watch sends one message of 15 MiB of "events":
                [[],[],...], then stays quiet
  made-none     a watch's created headers have no revision (made-max:
                INT64_MAX, made-neg: INT64_MIN, made-junk: "12abc" and a
                watch id -1, made-up: each 1000 past the store's)
  made-hang     as made-up, and every kv request after a watch's is
                never answered
  made-one      a watch answers only one created for three creates
  made-compact  ... three created, then the first canceled, compacted
  rev-max       every header's revision is "9223372036854775807" (a
                watch from the revision after it overflows int64)

  adv_gateway.py MODE [ARG]   prints its port on stdout, then serves
"""
import base64
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[1] if len(sys.argv) > 1 else "honest"
ARG = int(sys.argv[2]) if len(sys.argv) > 2 else 3
LOG = bool(__import__("os").environ.get("ADV_GATEWAY_LOG"))

mu = threading.Lock()
state = {"rev": 1, "kv": {}, "leases": {}, "next_lease": 0x1000, "reqs": 0}


def b64d(s):
    return base64.b64decode(s or "")


def b64e(b):
    return base64.b64encode(b).decode()


def header():
    state["reqs"] += 1
    cid = "4242"
    if MODE == "cluster-flip" and state["reqs"] > ARG:
        cid = "4343"
    rev = "9223372036854775807" if MODE == "rev-max" else str(state["rev"])
    return {"cluster_id": cid, "member_id": "1", "revision": rev,
            "raft_term": "2"}


def in_range(k, key, end):
    if not end:
        return k == key
    if end == b"\0":
        return k >= key
    return key <= k < end


def do_range(r):
    key, end = b64d(r.get("key")), b64d(r.get("range_end"))
    kvs = []
    for k, (v, lease, crev, mrev) in state["kv"].items():
        if in_range(k, key, end):
            kv = {"key": b64e(k), "create_revision": str(crev),
                  "mod_revision": str(mrev), "version": "1"}
            if v:
                kv["value"] = b64e(v)
            if lease:
                kv["lease"] = str(lease)
            kvs.append(kv)
    kvs.sort(key=lambda kv: int(kv["create_revision"]))
    out = {"header": header()}
    if kvs:
        out["kvs"] = kvs
        out["count"] = str(len(kvs))
    return out


def do_put(r):
    k, v = b64d(r.get("key")), b64d(r.get("value"))
    lease = int(r.get("lease", 0) or 0)
    state["rev"] += 1
    old = state["kv"].get(k)
    crev = old[2] if old else state["rev"]
    state["kv"][k] = (v, lease, crev, state["rev"])
    return {"header": header()}


def do_delete(r):
    key, end = b64d(r.get("key")), b64d(r.get("range_end"))
    gone = [k for k in state["kv"] if in_range(k, key, end)]
    for k in gone:
        del state["kv"][k]
    if gone:
        state["rev"] += 1
    out = {"header": header()}
    if gone:
        out["deleted"] = str(len(gone))
    return out


def cmp_ok(c):
    k = b64d(c.get("key"))
    cur = state["kv"].get(k)
    target = c.get("target", "VERSION")
    want = int(c.get("create_revision", c.get("mod_revision", 0)) or 0)
    if target == "CREATE":
        have = cur[2] if cur else 0
    elif target == "MOD":
        have = cur[3] if cur else 0
    else:
        have = 1 if cur else 0
    res = c.get("result", "EQUAL")
    return {"EQUAL": have == want, "NOT_EQUAL": have != want,
            "GREATER": have > want, "LESS": have < want}[res]


def do_txn(body):
    ok = all(cmp_ok(c) for c in body.get("compare", []))
    ops = body.get("success" if ok else "failure", [])
    resps = []
    for op in ops:
        if "request_put" in op:
            resps.append({"response_put": do_put(op["request_put"])})
        elif "request_range" in op:
            resps.append({"response_range": do_range(op["request_range"])})
        elif "request_delete_range" in op:
            resps.append({"response_delete_range":
                          do_delete(op["request_delete_range"])})
    if MODE == "kvs-int" and not body.get("compare"):
        for r in resps:
            if "response_range" in r:
                r["response_range"]["kvs"] = 5
    out = {"header": header(), "responses": resps}
    if ok:
        out["succeeded"] = True
    return out


def big(body_fn):
    # 17 MiB of valid JSON: a header and a long string field.
    return {"header": header(), "junk": "x" * (17 << 20)}


# 15 MiB of nested empty arrays (under the 16 MiB reply cap).
BOMB = b"[" + b"[]," * (5 << 20) + b"[]]"


def bomb(field, wrap=None):
    head = json.dumps({"header": header()})[:-1].encode()
    body = head + b', "' + field.encode() + b'": ' + BOMB + b"}"
    return (b'{"result": ' + body + b"}" if wrap else body) + b"\n"


def requests(raw):
    """The JSON objects of a body, one after another."""
    dec, out, text, i = json.JSONDecoder(), [], raw.decode(), 0
    while True:
        while i < len(text) and text[i] in " \r\n\t":
            i += 1
        if i >= len(text):
            return out
        o, i = dec.raw_decode(text, i)
        out.append(o)


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
        if MODE == "slow" and state["reqs"] > 1:
            for i in range(len(data)):
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(1)
        else:
            self.wfile.write(data)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(n) or b"{}"
        p = self.path
        if LOG:
            sys.stderr.write(p + "\n")
        if p == "/v3/watch":
            # etcd's gateway reads a watch's body as a stream of requests
            # (a waiter sends three creates: src/stores/etcd/http.c).
            reqs = requests(raw)
            if MODE == "made-hang":
                state["hang"] = True
            self.creates = max(1, len(reqs))
            return self.watch(reqs[0] if reqs else {})
        body = json.loads(raw)
        if state.get("hang") and p.startswith("/v3/kv/"):
            time.sleep(3600)
        if MODE in ("hang-txn", "hang-revoke") and p == "/v3/kv/txn" and \
                any("request_put" in op for op in body.get("success", [])):
            time.sleep(3600)
        if MODE == "hang-revoke" and p == "/v3/lease/revoke":
            time.sleep(3600)
        if MODE == "bomb" and p in ("/v3/kv/range", "/v3/kv/txn"):
            with mu:
                data = bomb("kvs")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        with mu:
            if p == "/v3/maintenance/status":
                out = {"header": header(), "version": "3.4.23"}
            elif p == "/v3/kv/range":
                out = big(None) if MODE == "big" else do_range(body)
            elif p == "/v3/kv/txn":
                out = big(None) if MODE == "big" else do_txn(body)
            elif p == "/v3/kv/deleterange":
                out = do_delete(body)
            elif p == "/v3/lease/grant":
                state["next_lease"] += 1
                lid = state["next_lease"]
                ttl = int(body.get("TTL", 0))
                state["leases"][lid] = ttl
                if MODE == "ttl-max":
                    ttl = "9223372036854775807"
                elif MODE == "ttl-huge":
                    ttl = "9223372036854775"
                out = {"header": header(), "ID": str(lid), "TTL": str(ttl)}
            elif p == "/v3/lease/keepalive":
                lid = int(body.get("ID", 0))
                res = {"header": header(), "ID": str(lid)}
                if lid in state["leases"]:
                    res["TTL"] = str(state["leases"][lid])
                if MODE == "ttl-max":
                    res["TTL"] = "9223372036854775807"
                elif MODE == "ttl-huge":
                    res["TTL"] = "9223372036854775"
                elif MODE == "ttl-junk":
                    res["TTL"] = "12abc"
                elif MODE == "ka-neg":
                    res["TTL"] = "-1"
                elif MODE == "ka-error":
                    res = {"error": "etcdserver: boom", "code": 2,
                           "message": "etcdserver: boom"}
                out = {"result": res}
            elif p == "/v3/lease/revoke":
                lid = int(body.get("ID", 0))
                state["leases"].pop(lid, None)
                for k in [k for k, v in state["kv"].items() if v[1] == lid]:
                    del state["kv"][k]
                out = {"header": header()}
            elif p == "/v3/lease/timetolive":
                lid = int(body.get("ID", 0))
                t = state["leases"].get(lid, -1)
                g = t
                if MODE in ("ttl-max", "ttl-live"):
                    t = g = "9223372036854775807"
                elif MODE == "ttl-huge":
                    t = g = "9223372036854775"
                out = {"header": header(), "ID": str(lid), "TTL": str(t),
                       "grantedTTL": str(g)}
            else:
                out = {"error": "not found", "code": 12, "message": "nope"}
                return self.send(out, 404)
        self.send(out)

    def watch(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(b):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
            self.wfile.flush()
        try:
            with mu:
                h = header()
            creates = getattr(self, "creates", 1)
            if MODE == "made-one":
                creates = 1
            for i in range(creates):
                hh = dict(h)
                wid = str(i)
                if MODE == "made-none":
                    del hh["revision"]
                elif MODE == "made-max":
                    hh["revision"] = "9223372036854775807"
                elif MODE == "made-neg":
                    hh["revision"] = "-9223372036854775808"
                elif MODE == "made-junk":
                    hh["revision"] = "12abc"
                    wid = "-1"
                elif MODE in ("made-up", "made-hang"):
                    hh["revision"] = str(int(h["revision"]) + 1000 * (i + 1))
                chunk((json.dumps({"result": {"header": hh, "watch_id": wid,
                                              "created": True}})
                       + "\n").encode())
            if MODE == "made-compact":
                chunk((json.dumps({"result": {"header": h, "watch_id": "0",
                                              "canceled": True,
                                              "compact_revision": "1"}})
                       + "\n").encode())
            if MODE == "watch-flood":
                chunk((json.dumps({"result": {"header": h,
                                              "canceled": True}})
                       + "\n").encode())
                chunk(b"")
                return
            if MODE == "watch-bomb":
                with mu:
                    data = bomb("events", wrap=True)
                for i in range(0, len(data), 1 << 16):
                    chunk(data[i:i + (1 << 16)])
                while True:
                    time.sleep(0.2)
                    chunk(b"\n")
            if MODE == "watch-bad":
                chunk((json.dumps({"result": {"header": h, "events": 5}})
                       + "\n").encode())
                while True:
                    time.sleep(0.2)
                    chunk(b"\n")
            if MODE == "watch-line":
                chunk(b'{"result": {"header": {}, "x": "')
                while True:
                    chunk(b"y" * 1024)
                    time.sleep(0.05)
            while True:  # a quiet watch; the client ends it
                time.sleep(0.2)
                chunk(b"\n")
        except (BrokenPipeError, ConnectionResetError, socket.error):
            return


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
