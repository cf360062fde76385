#!/usr/bin/env python3
"""fake_closes.py PORTFILE COUNTFILE: a PostgreSQL server that is going
away: it answers SSLRequest with 'N', asks for a cleartext password, reads
it, and closes the connection without a word (what a server being shut
down or restarted does to a login in flight; libpq says "server closed the
connection unexpectedly").  Listens on 127.0.0.1, a free port written to
PORTFILE; every connection it has taken is counted into COUNTFILE."""
import socket
import struct
import sys

port_file, count_file = sys.argv[1], sys.argv[2]
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.getsockname()[1]))
import os
os.rename(port_file + ".tmp", port_file)
n = 0


def read_exact(c, k):
    b = b""
    while len(b) < k:
        x = c.recv(k - len(b))
        if not x:
            raise EOFError
        b += x
    return b


while True:
    c, _ = srv.accept()
    n += 1
    with open(count_file, "w") as f:
        f.write(str(n))
    c.settimeout(5)
    try:
        while True:
            ln = struct.unpack("!I", read_exact(c, 4))[0]
            body = read_exact(c, ln - 4)
            code = struct.unpack("!I", body[:4])[0]
            if code in (80877103, 80877104):   # SSLRequest, GSSENCRequest
                c.sendall(b"N")
                continue
            break                              # the StartupMessage
        c.sendall(b"R" + struct.pack("!II", 8, 3))  # cleartext password
        t = read_exact(c, 1)
        ln = struct.unpack("!I", read_exact(c, 4))[0]
        read_exact(c, ln - 4)                  # the PasswordMessage
    except (EOFError, OSError):
        pass
    c.close()
