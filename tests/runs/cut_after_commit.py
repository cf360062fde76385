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
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
from proxy import Proxy  # noqa: E402


class CutAfterCommit(Proxy):
    def __init__(self, host, port, mark, end):
        super().__init__(host, port)
        self.mark, self.end = mark, end
        self.seen = b""    # tail of client bytes, to find MARK across reads
        self.armed = None  # the server socket whose answer is to be cut
        self.held = b""
        self.done = False

    def on_data(self, s, other, from_server, data):
        if not from_server and not self.done and self.armed is None:
            self.seen = (self.seen + data)[-(len(self.mark) + 65536):]
            if self.mark in self.seen:
                self.armed = other
        if from_server and s is self.armed:
            self.held += data
            if self.end in self.held:
                self.done = True
                self.armed = None
                self.say("cut")
                self.close(s)
            return
        self.forward(s, other, data)


CutAfterCommit(sys.argv[1], sys.argv[2], sys.argv[3].encode(),
               sys.argv[4].encode().decode("unicode_escape")
               .encode("latin-1")).run()
