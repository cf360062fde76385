#!/usr/bin/env python3
# A Redis proxy for test_queue's lost_enqueue:  lose_reply.py RPORT N
# Listens on a free loopback port and prints "LISTEN PORT" once it does.
# Forwards everything, except that the first N queueing acquires (an
# EVAL or EVALSHA whose fifth argument is "q" + a 16 hex digit handle id:
# a wait's attempt that joins the queue) reach the server but not their
# answer: the proxy half-closes the server side after the command, drops
# what the server answers, and closes the client's connection only once
# the server has closed its own (so the script has run by then).  Prints
# "LOST" to stdout for each.
import os
import re
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "common"))
from resp import parse  # noqa: E402

rport, left = int(sys.argv[1]), int(sys.argv[2])
mu = threading.Lock()
QHID = re.compile(rb'^q[0-9a-fA-F]{16}$')


def queueing(a):
    if a[0].upper() not in (b'EVAL', b'EVALSHA') or len(a) < 3:
        return False
    try:
        nk = int(a[2])
    except ValueError:
        return False
    argv = a[3 + nk:]
    return len(argv) >= 5 and QHID.match(argv[4]) is not None


class Conn:
    def __init__(self, c, r):
        self.c, self.r, self.lose = c, r, False


def up(k):
    global left
    buf = b''
    try:
        while True:
            d = k.c.recv(65536)
            if not d:
                break
            buf += d
            out = b''
            while True:
                a, rest = parse(buf)
                if a is None:
                    break
                raw, buf = buf[:len(buf) - len(rest)], rest
                drop = False
                if queueing(a):
                    with mu:
                        drop = left > 0
                        left -= drop
                if drop:
                    if out:
                        k.r.sendall(out)
                    k.lose = True
                    k.r.sendall(raw)
                    k.r.shutdown(socket.SHUT_WR)
                    print('LOST', flush=True)
                    return  # down() closes the client once the server has
                out += raw
            if out:
                k.r.sendall(out)
    except OSError:
        pass
    for s in (k.r, k.c):
        try:
            s.close()
        except OSError:
            pass


def down(k):
    try:
        while True:
            d = k.r.recv(65536)
            if not d:
                break
            if not k.lose:
                k.c.sendall(d)
    except OSError:
        pass
    for s in (k.c, k.r):
        try:
            s.close()
        except OSError:
            pass


ls = socket.socket()
ls.bind(('127.0.0.1', 0))
ls.listen(64)
print('LISTEN %d' % ls.getsockname()[1], flush=True)
while True:
    c, _ = ls.accept()
    try:
        r = socket.create_connection(('127.0.0.1', rport))
    except OSError:
        c.close()
        continue
    k = Conn(c, r)
    threading.Thread(target=up, args=(k,), daemon=True).start()
    threading.Thread(target=down, args=(k,), daemon=True).start()
