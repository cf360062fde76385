#!/usr/bin/env python3
"""Adversary pass on issue 43 item 12 (tests/adv43/adv_a.cmake): a finite
wait's open must end by the wait's deadline + 1 s on Redis Sentinel too.

Two "sentinels" on 127.0.0.1 accept and never answer (frozen), the URL
says ?timeout=20s&connect_timeout=20s: `dlock run -w 1` must exit 69
within 1 + 1 s (and some slack for a loaded machine: < 4.5 s), `-w 3`
within 3 + 1 s (< 6.5 s).  On a843813 the sentinels' question
(master.c, ask_sentinel()) waited for the URL's connect timeout, each
sentinel in turn: 40 s and more.  No server is needed.

  adv_a_open_sentinel.py DLOCK
"""
import socket
import subprocess
import sys
import threading
import time

DLOCK = sys.argv[1]


class Silent:
    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(128)
        self.port = self.ls.getsockname()[1]
        self.keep = []
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            self.keep.append(c)


def main():
    a, b = Silent(), Silent()
    fail = 0
    for scheme in ("redis-sentinel", "rediss-sentinel"):
        url = ("%s://127.0.0.1:%d,127.0.0.1:%d/m?timeout=20s&"
               "connect_timeout=20s" % (scheme, a.port, b.port))
        for w, bound in (("1", 4500), ("3", 6500)):
            t0 = time.monotonic()
            try:
                p = subprocess.run([DLOCK, "-s", url, "run", "-w", w,
                                    "adv-a-sentinel", "--", "true"],
                                   capture_output=True, text=True,
                                   timeout=30)
                rc, err = p.returncode, p.stderr.strip()
            except subprocess.TimeoutExpired:
                rc, err = -1, "(killed after 30 s)"
            ms = (time.monotonic() - t0) * 1000
            ok = rc == 69 and ms < bound
            print("%s: %s -w %s: exit %d after %.0f ms (want 69 < %d ms) %s"
                  % ("ok" if ok else "FAIL", scheme, w, rc, ms, bound,
                     err[:160]))
            fail |= not ok
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
