#!/usr/bin/env python3
"""hold_replies.py HOST PORT - a TCP proxy on 127.0.0.1 that, once told,
holds back every reply of the server.

Prints its own port on the first line of stdout.  Forwards both ways until
SIGUSR1; from then on bytes from the client still reach the server, but
nothing the server sends reaches a client (new connections included: their
server greeting is held too), and the proxy prints "held" on stdout the
first time it holds bytes back.  That is a server which took a statement
and never answers, as a hung one does, with the proof that a statement
was sent.  Listens on 127.0.0.1 only; exits on SIGTERM.
"""
import selectors
import signal
import socket
import sys

host, port = sys.argv[1], int(sys.argv[2])
holding = False
said = False


def on_usr1(signum, frame):
    global holding
    holding = True


signal.signal(signal.SIGUSR1, on_usr1)
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))

ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(64)
print(ls.getsockname()[1], flush=True)

sel = selectors.DefaultSelector()
sel.register(ls, selectors.EVENT_READ, None)
peer = {}  # socket -> (other socket, from_server)

while True:
    try:
        events = sel.select(0.2)
    except InterruptedError:
        continue
    for key, _ in events:
        s = key.fileobj
        if s is ls:
            c, _ = ls.accept()
            u = socket.create_connection((host, port))
            peer[c] = (u, False)
            peer[u] = (c, True)
            sel.register(c, selectors.EVENT_READ, None)
            sel.register(u, selectors.EVENT_READ, None)
            continue
        if s not in peer:
            continue
        other, from_server = peer[s]
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:
            for x in (s, other):
                if x in peer:
                    sel.unregister(x)
                    del peer[x]
                    x.close()
            continue
        if from_server and holding:
            if not said:
                print("held", flush=True)
                said = True
            continue
        try:
            other.sendall(data)
        except OSError:
            pass
