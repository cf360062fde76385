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
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
from proxy import Proxy  # noqa: E402


class HoldReplies(Proxy):
    holding = False
    said = False

    def on_data(self, s, other, from_server, data):
        if from_server and self.holding:
            if not self.said:
                self.say("held")
                self.said = True
            return
        self.forward(s, other, data)


px = HoldReplies(sys.argv[1], sys.argv[2])


def on_usr1(signum, frame):
    px.holding = True


signal.signal(signal.SIGUSR1, on_usr1)
px.run()
