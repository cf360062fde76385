#!/usr/bin/env python3
"""cut_after_commit.py HOST PORT MARK END - a TCP proxy on 127.0.0.1 that
lets the first request containing MARK reach the server, waits for the
server's whole answer (up to and including the bytes END), and then closes
that connection instead of passing the answer on: a statement that
committed on the server and whose answer the client never got (the
server restarted, a network cut, a killed connection).  Only the first
such request is cut; everything else is forwarded both ways.

Prints its own port on the first line of stdout and "cut" when it cut.
Listens on 127.0.0.1 only; exits on SIGTERM.
"""
import selectors
import signal
import socket
import sys

host, port = sys.argv[1], int(sys.argv[2])
mark = sys.argv[3].encode()
end = sys.argv[4].encode().decode("unicode_escape").encode("latin-1")
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))

ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(64)
print(ls.getsockname()[1], flush=True)

sel = selectors.DefaultSelector()
sel.register(ls, selectors.EVENT_READ, None)
peer = {}      # socket -> (other socket, from_server)
seen = b""     # tail of client bytes, to find MARK across reads
armed = None   # the server socket whose answer is to be cut
held = b""
done = False


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


while True:
    for key, _ in sel.select():
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
        o, from_server = peer[s]
        try:
            data = s.recv(65536)
        except OSError:
            data = b""
        if not data:
            close(s)
            continue
        if not from_server and not done and armed is None:
            seen = (seen + data)[-(len(mark) + 65536):]
            if mark in seen:
                armed = o
        if from_server and s is armed:
            held += data
            if end in held:
                done = True
                armed = None
                print("cut", flush=True)
                close(s)
            continue
        try:
            o.sendall(data)
        except OSError:
            close(s)
