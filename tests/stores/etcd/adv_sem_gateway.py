#!/usr/bin/env python3
"""adv_sem_gateway.py - a semaphore waiter's window filter (issue 38,
commit 9a49daf) against watch events whose key cannot be read.

A semaphore of N's waiter watches the name's range but wakes only for a
DELETE of one of the N keys before its own; http.c's wakes() says "a key
that cannot be read wakes it too (it looks, and believes what it reads)".
This gateway (adv_gateway.py's honest in-memory etcd, on 127.0.0.1)
sends the first semaphore watch one event of a given shape, with both
holders still there, and measures when the waiter next reads the queue:

  kv-missing     {"type": "DELETE"}                        (no "kv")
  kv-null        {"type": "DELETE", "kv": null}
  key-missing    {"type": "DELETE", "kv": {}}
  key-bad-b64    {"type": "DELETE", "kv": {"key": "!!!!"}}
  key-null       {"type": "DELETE", "kv": {"key": null}}
  key-int        {"type": "DELETE", "kv": {"key": 5}}
  key-obj        {"type": "DELETE", "kv": {"key": {}}}
  event-null     events: [null]
  flood          17 MiB of DELETEs of a longer name's keys: no wake,
                 no failure (a message may be 16 MiB, the stream any length)

Each cannot be read as a key, so each must wake the waiter: its next
queue read comes within WAKE_BOUND_S of the event.  Without a wake the
next read is the slice's end (SLICE_MAX_MS, 5 s, in src/core/acquire.c:
about 4.5 s after the event here); a wake re-reads in a few ms (measured
3-20 ms under ASan), so the bound (2.5 s) is far from both.  And an
event is never a grant: both holders stay, the waiter must exit 1 (not
acquired in time), never run its command.

  adv_sem_gateway.py DLOCK [SHAPE...]    exit 0 all held, 1 a failure
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.argv, _argv = [sys.argv[0], "honest"], sys.argv
import adv_gateway as g  # noqa: E402  (reads MODE from sys.argv)
from http.server import ThreadingHTTPServer  # noqa: E402

WAKE_BOUND_S = 2.5

SHAPES = {
    "kv-missing": {"type": "DELETE"},
    "kv-null": {"type": "DELETE", "kv": None},
    "key-missing": {"type": "DELETE", "kv": {}},
    "key-bad-b64": {"type": "DELETE", "kv": {"key": "!!!!"}},
    "key-null": {"type": "DELETE", "kv": {"key": None}},
    "key-int": {"type": "DELETE", "kv": {"key": 5}},
    "key-obj": {"type": "DELETE", "kv": {"key": {}}},
    "event-null": None,
    # Not a shape: 17 MiB of DELETEs of keys of a longer name (NAME/x/i),
    # none of the window's, in messages of 1000 events.  No wake-up, and
    # no failure: a message may be up to 16 MiB, the stream any length
    # (the watch once counted the stream against the cap: exit 69).
    "flood": "flood",
}
FLOOD_BYTES = 17 << 20

run = {"shape": None, "sent": None, "reads": []}
run_mu = threading.Lock()


class H(g.H):
    def do_POST(self):
        if isinstance(self.rfile, _Replay):
            self.rfile = self.rfile.f
        if self.path == "/v3/kv/txn":
            n = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(n) or b"{}"
            body = json.loads(raw)
            # The queue read: a txn without compare whose range has an end.
            if not body.get("compare") and any(
                    op.get("request_range", {}).get("range_end")
                    for op in body.get("success", [])):
                with run_mu:
                    run["reads"].append(time.monotonic())
            # Hand the body on to adv_gateway's handler.
            self.rfile = _Replay(raw, self.rfile)
            self.headers.replace_header("Content-Length", str(len(raw)))
        return g.H.do_POST(self)

    def watch(self, body):
        with run_mu:
            mine = body.get("create_request", body).get("range_end") and \
                run["sent"] is None and run["shape"] is not None
            if mine:
                run["sent"] = 0  # taken: one event, to the first one
        if not mine:
            return g.H.watch(self, body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(b):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
            self.wfile.flush()
        try:
            with g.mu:
                h = g.header()
            chunk((json.dumps({"result": {"header": h, "created": True}})
                   + "\n").encode())
            time.sleep(0.3)
            ev = SHAPES[run["shape"]]
            if ev == "flood":
                with run_mu:
                    run["sent"] = time.monotonic()
                sent, i = 0, 0
                pfx = ("advsem-flood/x/").encode()
                while sent < FLOOD_BYTES:
                    evs = []
                    for _ in range(1000):
                        k = base64.b64encode(pfx + b"%d" % i).decode()
                        evs.append({"type": "DELETE", "kv": {"key": k}})
                        i += 1
                    b = (json.dumps({"result": {"header": h, "events": evs}})
                         + "\n").encode()
                    chunk(b)
                    sent += len(b)
            else:
                msg = {"result": {"header": h, "events": [ev]}}
                with run_mu:
                    run["sent"] = time.monotonic()
                chunk((json.dumps(msg) + "\n").encode())
            while True:
                time.sleep(0.2)
                chunk(b"\n")
        except (BrokenPipeError, ConnectionResetError, OSError):
            return


class _Replay:
    """The request's body once more, then the connection's own file."""

    def __init__(self, raw, f):
        self.raw, self.f = raw, f

    def read(self, n=-1):
        if self.raw is None:
            return self.f.read(n)
        r, self.raw = self.raw, None
        return r

    def __getattr__(self, a):
        return getattr(self.f, a)


def holders():
    n = 0
    with g.mu:
        for k, (v, *_rest) in g.state["kv"].items():
            try:
                rec = json.loads(v)
            except ValueError:
                continue
            n += isinstance(rec, dict) and rec.get("dlock") == 1
    return n


def one(dlock, url, shape, tmp):
    with run_mu:
        run.update(shape=shape, sent=None, reads=[])
    name = "advsem-" + shape
    env = dict(os.environ)
    hold = [subprocess.Popen([dlock, "-s", url, "run", name, "--limit", "2",
                              "--", "sleep", "60"], env=env,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        # The barrier: both holders' keys are there.
        t_end = time.monotonic() + 20
        while holders() < 2 and time.monotonic() < t_end:
            time.sleep(0.02)
        if holders() < 2:
            return "the two holders did not acquire"
        marker = os.path.join(tmp, "ran-" + shape)
        w = subprocess.run([dlock, "-s", url, "run", name, "--limit", "2",
                            "-w", "6", "--", "touch", marker], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=60)
        problems = []
        if os.path.exists(marker) or w.returncode != 1:
            problems.append("the waiter ran or did not exit 1 (exit %d: %s)"
                            % (w.returncode, w.stdout.decode()[-300:]))
        with run_mu:
            sent, reads = run["sent"], list(run["reads"])
        if not sent:
            problems.append("no semaphore watch came to send the event to")
        elif shape == "flood":
            print("  flood: %d MiB of others' DELETEs, the waiter waited on"
                  " (exit %d)" % (FLOOD_BYTES >> 20, w.returncode))
        else:
            after = [t - sent for t in reads if t > sent]
            first = after[0] if after else None
            if first is None or first > WAKE_BOUND_S:
                problems.append(
                    "not woken: the next queue read came %s after the event"
                    " (the slice's end), bound %.1f s"
                    % ("never" if first is None else "%.2f s" % first,
                       WAKE_BOUND_S))
            else:
                print("  %s: re-read %.3f s after the event" % (shape, first))
        return "; ".join(problems) or None
    finally:
        for p in hold:
            p.terminate()
        for p in hold:
            p.wait(timeout=30)
        with g.mu:
            for k in [k for k in g.state["kv"] if name.encode() in k]:
                del g.state["kv"][k]


def main(argv):
    if len(argv) < 2:
        print("usage: adv_sem_gateway.py DLOCK [SHAPE...]")
        return 64
    dlock = argv[1]
    shapes = argv[2:] or list(SHAPES)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = "etcd://127.0.0.1:%d?timeout=2s" % srv.server_address[1]
    fail = 0
    with tempfile.TemporaryDirectory() as tmp:
        for s in shapes:
            why = one(dlock, url, s, tmp)
            if why:
                print("FAIL %s: %s" % (s, why))
                fail = 1
            else:
                print("ok %s" % s)
    srv.shutdown()
    return fail


if __name__ == "__main__":
    sys.exit(main(_argv))
