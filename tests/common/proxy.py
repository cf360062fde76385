"""proxy.py - the loopback TCP proxy the fault-injection tests share.

A Proxy listens on 127.0.0.1 only (an ephemeral port, printed on the first
line of stdout), opens one connection to HOST:PORT per client it accepts,
and forwards bytes both ways.  A test's script subclasses it and overrides
on_data() (and, if it keeps per-connection state, on_accept()) to hold,
cut or stall what passes; everything else (accept, select loop, closing a
pair when either side ends, exit on SIGTERM) lives here once.

Used by tests/cancel/hold_replies.py, tests/runs/cut_after_commit.py and
tests/stores/mysql/stall_after.py.
"""
import selectors
import signal
import socket
import sys


class Proxy:
    def __init__(self, host, port):
        self.host, self.port = host, int(port)
        self.sel = selectors.DefaultSelector()
        self.peer = {}  # socket -> (other socket, from_server)

    # -- hooks -------------------------------------------------------------
    def on_accept(self, client, server):
        """A new pair: client (accepted) and server (its upstream)."""

    def on_data(self, s, other, from_server, data):
        """DATA arrived on S (from the server if FROM_SERVER): forward it."""
        self.forward(s, other, data)

    # -- what a hook may do --------------------------------------------------
    @staticmethod
    def say(word):
        print(word, flush=True)

    def forward(self, s, other, data):
        """Send DATA to OTHER; on failure close S's pair.  True if sent."""
        try:
            other.sendall(data)
            return True
        except OSError:
            self.close(s)
            return False

    def close(self, s):
        """Close S and the socket it is paired with."""
        o = self.peer.pop(s, (None, None))[0]
        for x in (s, o):
            if x is not None:
                try:
                    self.sel.unregister(x)
                except (KeyError, ValueError):
                    pass
                x.close()
                self.peer.pop(x, None)

    def detach(self, s):
        """Stop reading S's pair but keep both sockets open (a stall)."""
        o = self.peer[s][0]
        for x in (s, o):
            self.sel.unregister(x)
            self.peer.pop(x, None)
        return [s, o]

    # -- the loop ------------------------------------------------------------
    def run(self):
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", 0))
        ls.listen(64)
        self.say(ls.getsockname()[1])
        self.sel.register(ls, selectors.EVENT_READ, None)
        while True:
            # A short timeout so a flag set by a signal handler (see
            # hold_replies.py) is seen even while nothing arrives.
            try:
                events = self.sel.select(0.2)
            except InterruptedError:
                continue
            for key, _ in events:
                s = key.fileobj
                if s is ls:
                    c, _ = ls.accept()
                    u = socket.create_connection((self.host, self.port))
                    self.peer[c] = (u, False)
                    self.peer[u] = (c, True)
                    self.on_accept(c, u)
                    self.sel.register(c, selectors.EVENT_READ, None)
                    self.sel.register(u, selectors.EVENT_READ, None)
                    continue
                if s not in self.peer:
                    continue
                other, from_server = self.peer[s]
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self.close(s)
                    continue
                self.on_data(s, other, from_server, data)

