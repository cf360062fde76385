#!/usr/bin/env python3
"""hold_after.py HOST PORT HEX - a TCP proxy on 127.0.0.1 that holds back
the server's replies from the moment a client sends bytes containing the
pattern HEX (hex-encoded), until SIGUSR2 lets them all through.

Prints its own port on the first line of stdout, then "held" when it
first holds a reply back.  wait_signals.py uses it to keep `dlock run
--once` inside its run's start record (Redis: the EVALSHA naming the
`NAME\\xffruns` key) while a signal arrives.  Listens on 127.0.0.1 only;
exits on SIGTERM.
"""
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
from proxy import Proxy  # noqa: E402


class HoldAfter(Proxy):
    pattern = bytes.fromhex(sys.argv[3])
    holding = False
    said = False
    done = False
    held = []  # (client socket, server socket, data)

    def on_data(self, s, other, from_server, data):
        if not from_server and not self.done and self.pattern in data:
            self.holding = True
        if from_server and self.holding:
            self.held.append((s, other, data))
            if not self.said:
                self.say("held")
                self.said = True
            return
        self.forward(s, other, data)

    def let_go(self):
        self.holding = False
        self.done = True
        for s, other, data in self.held:
            self.forward(s, other, data)
        self.held = []


px = HoldAfter(sys.argv[1], sys.argv[2])
signal.signal(signal.SIGUSR2, lambda signum, frame: px.let_go())
px.run()
