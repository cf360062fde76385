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
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "common"))
from proxy import Proxy  # noqa: E402


class StallAfter(Proxy):
    def __init__(self, host, port, mark):
        super().__init__(host, port)
        self.mark = mark
        self.seen = {}      # client socket -> tail of its bytes, to find MARK
        self.stalled = []   # the stalled pair, kept open and no longer read

    def on_accept(self, client, server):
        self.seen[client] = b""

    def close(self, s):
        for x in (s, self.peer.get(s, (None,))[0]):
            self.seen.pop(x, None)
        super().close(s)

    def on_data(self, s, other, from_server, data):
        if not self.forward(s, other, data):
            return
        if not from_server and not self.stalled:
            tail = (self.seen[s] + data)[-(len(self.mark) + 65536):]
            self.seen[s] = tail
            if self.mark in tail:
                self.stalled = self.detach(s)
                self.say("stalled")


StallAfter(sys.argv[1], sys.argv[2], sys.argv[3].encode()).run()
