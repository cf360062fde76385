#!/usr/bin/env python3
"""stall_after.py HOST PORT MARK - a TCP proxy on 127.0.0.1 that forwards
both ways until a client request containing MARK has gone to the server,
and from then on forwards nothing more on that connection, either way,
while keeping both of its sockets open: a client that went silent in the
middle of what it was doing (stopped, paused, cut off by the network)
while the server sees a live connection.  Only the first such request
stalls its connection; every other connection is forwarded as usual.

Prints its own port on the first line of stdout and "stalled" when it
stalls.  Listens on 127.0.0.1 only; exits on SIGTERM.
"""
import selectors
import signal
import socket
import sys

host, port = sys.argv[1], int(sys.argv[2])
mark = sys.argv[3].encode()
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))

ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(64)
print(ls.getsockname()[1], flush=True)

sel = selectors.DefaultSelector()
sel.register(ls, selectors.EVENT_READ, None)
peer = {}      # socket -> (other socket, from_server)
seen = {}      # client socket -> tail of its bytes, to find MARK
stalled = []   # the stalled pair, kept open and no longer read


def close(s):
    o = peer.pop(s, (None, None))[0]
    for x in (s, o):
        if x is not None:
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            x.close()
            peer.pop(x, None)
            seen.pop(x, None)


while True:
    for key, _ in sel.select():
        s = key.fileobj
        if s is ls:
            c, _ = ls.accept()
            u = socket.create_connection((host, port))
            peer[c] = (u, False)
            peer[u] = (c, True)
            seen[c] = b""
            sel.register(c, selectors.EVENT_READ, None)
            sel.register(u, selectors.EVENT_READ, None)
            continue
        if s not in peer:
            continue
        o, from_server = peer[s]
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:
            close(s)
            continue
        try:
            o.sendall(data)
        except OSError:
            close(s)
            continue
        if not from_server and not stalled:
            tail = (seen[s] + data)[-(len(mark) + 65536):]
            seen[s] = tail
            if mark in tail:
                for x in (s, o):
                    sel.unregister(x)
                    peer.pop(x, None)
                stalled = [s, o]
                print("stalled", flush=True)
