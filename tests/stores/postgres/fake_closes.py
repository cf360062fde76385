#!/usr/bin/env python3
"""fake_closes.py PORTFILE COUNTFILE [SQLSTATE MESSAGE]: a PostgreSQL
server that is going away: it answers SSLRequest with 'N', asks for a
cleartext password, reads it, and closes the connection without a word
(what a server being shut down or restarted does to a login in flight;
libpq says "server closed the connection unexpectedly"), or after a FATAL
ErrorResponse with SQLSTATE and MESSAGE when they are given.  Listens on
127.0.0.1, a free port written to PORTFILE (straight into it when it is a
FIFO, which its reader then waits on; else renamed into place); every
connection it has taken is counted into COUNTFILE."""
import os
import socket
import stat
import struct
import sys

port_file, count_file = sys.argv[1], sys.argv[2]
fatal = sys.argv[3:5] if len(sys.argv) >= 5 else None
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
if os.path.exists(port_file) and stat.S_ISFIFO(os.stat(port_file).st_mode):
    with open(port_file, "w") as f:
        f.write("%d\n" % srv.getsockname()[1])
else:
    with open(port_file + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
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
        if fatal is not None:
            f = b"".join(k + v.encode() + b"\0" for k, v in
                         ((b"S", "FATAL"), (b"V", "FATAL"),
                          (b"C", fatal[0]), (b"M", fatal[1]))) + b"\0"
            c.sendall(b"E" + struct.pack("!I", len(f) + 4) + f)
    except (EOFError, OSError):
        pass
    c.close()
