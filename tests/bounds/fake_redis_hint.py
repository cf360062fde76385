#!/usr/bin/env python3
"""A hostile Redis on 127.0.0.1 for issue 34, item 7: every acquire script
is answered "busy, held by a dlock holder, look again in HINT ms", with HINT
given on the command line (INT64_MAX, INT64_MAX - 1, a negative one).

Everything else the client sends is answered just well enough (RESP2):
PING, AUTH, SELECT, CLIENT, SCRIPT LOAD (a sha of the text), CONFIG GET,
SUBSCRIBE/UNSUBSCRIBE (confirmed), any other script (0).  An acquire
script is an EVALSHA/EVAL with five or more ARGV (token, ttl, host, pid,
queue mode[, limit]: src/stores/redis/store.c lock_script); the others
(release, leave, extend...) carry one or two.

  fake_redis_hint.py HINT PORTFILE COUNTFILE [foreign|scan-same|scan-new|scan-empty]

With "foreign" the holder is another client's (no dlock token: the
waiter polls and takes the hint as the key's lease left).  The scan-*
modes answer every SCAN with a cursor that never ends (issue 43, item 8
on Redis): the same lock key on every page, 1,000 new ones on every
page (the MATCH pattern's '*' made a new name), or none; each SCAN appends "scan" to COUNTFILE.

The port is written to PORTFILE (a fifo: the test reads it once the
socket listens).  Each acquire script appends one line to COUNTFILE.
"""
import hashlib
import socket
import sys
import threading

hint = int(sys.argv[1])
mode = sys.argv[4] if len(sys.argv) > 4 else "dlock"
dlock_holder = 0 if mode == "foreign" else 1
pages = [0]
count_lock = threading.Lock()


def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def read_command(f):
    """One RESP2 array of bulk strings (what dlock sends), or None at EOF.
    An inline command (a line of words) is accepted too."""
    line = f.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return line.split()
    n = int(line[1:])
    argv = []
    for _ in range(n):
        hdr = f.readline()
        if not hdr.startswith(b"$"):
            return None
        size = int(hdr[1:])
        data = f.read(size + 2)
        if len(data) != size + 2:
            return None
        argv.append(data[:-2])
    return argv


def is_acquire(argv):
    try:
        nkeys = int(argv[2])
    except (IndexError, ValueError):
        return False
    return len(argv) - 3 - nkeys >= 5


def answer(argv):
    verb = argv[0].upper() if argv else b""
    if verb == b"PING":
        return b"+PONG\r\n"
    if verb == b"SCRIPT" and len(argv) >= 3 and argv[1].upper() == b"LOAD":
        return bulk(hashlib.sha1(argv[2]).hexdigest().encode())
    if verb == b"CONFIG":
        return b"*2\r\n" + bulk(b"notify-keyspace-events") + bulk(b"")
    if verb in (b"SUBSCRIBE", b"UNSUBSCRIBE"):
        kind = verb.lower()
        return b"".join(b"*3\r\n" + bulk(kind) + bulk(ch) + b":%d\r\n" % (i + 1)
                        for i, ch in enumerate(argv[1:]))
    if verb in (b"EVALSHA", b"EVAL"):
        if is_acquire(argv):
            with count_lock, open(sys.argv[3], "a") as c:
                c.write("acquire\n")
            # {0: not taken, retry hint, a dlock holder or not, place 1}
            return b"*4\r\n:0\r\n:%d\r\n:%d\r\n:1\r\n" % (hint,
                                                           dlock_holder)
        return b":0\r\n"
    if verb == b"SCAN" and mode.startswith("scan-"):
        with count_lock, open(sys.argv[3], "a") as c:
            c.write("scan\n")
            pages[0] += 1
            page = pages[0]
        if mode == "scan-same":
            keys = [b"dlock:lock:same"]
        elif mode == "scan-new":
            # Keys the MATCH pattern takes: its '*' made a new name.
            pat = argv[3] if len(argv) > 3 else b"dlock:*"
            keys = [pat.replace(b"*", b"k%d-%d" % (page, i), 1)
                    for i in range(1000)]
        else:
            keys = []
        return (b"*2\r\n" + bulk(b"%d" % page) + b"*%d\r\n" % len(keys) +
                b"".join(bulk(k) for k in keys))
    if verb == b"ROLE":
        return b"*3\r\n" + bulk(b"master") + b":0\r\n*0\r\n"
    return b"+OK\r\n"


def serve(c):
    f = c.makefile("rb")
    try:
        while True:
            argv = read_command(f)
            if argv is None:
                break
            c.sendall(answer(argv))
    except (OSError, ValueError):
        pass
    c.close()


def main():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    with open(sys.argv[2], "w") as p:
        p.write("%d\n" % s.getsockname()[1])
    while True:
        c, _ = s.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


main()
