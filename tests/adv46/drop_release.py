#!/usr/bin/env python3
# A Redis proxy for the adv46 tests:  drop_release.py LPORT RPORT [plain]
# Forwards everything, except the first release (release.lua, by its text
# or its SHA1) of a "dlock.replace/" request: that client connection is
# closed instead, the command never reaching the server.  Prints LISTEN
# once it listens; DROPPED to stdout when it drops.  With "plain" it drops
# nothing (a forwarder to SIGSTOP: a frozen server, connections open).
import hashlib, os, socket, sys, threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "common"))
from resp import parse  # noqa: E402

lport, rport = int(sys.argv[1]), int(sys.argv[2])
plain = sys.argv[3:4] == ['plain']
# release.lua's first line, as the store sends it (its comments gone):
# no other script starts so (tests/golden/redis/*/release.lua).
REL = (b"if redis.call('GET', KEYS[1]) ~= ('dlock1:' .. ARGV[1]) then "
       b"return 0 end\n")
shas = set()
done = []
mu = threading.Lock()


def is_release(a):
    cmd = a[0].upper()
    if cmd == b'SCRIPT' and len(a) > 2 and a[2].startswith(REL):
        with mu:
            shas.add(hashlib.sha1(a[2]).hexdigest().encode())
        return False
    if cmd not in (b'EVALSHA', b'EVAL') or len(a) < 4:
        return False
    body = a[1]
    rel = body.startswith(REL) if cmd == b'EVAL' else body.lower() in shas
    return rel and b'dlock.replace/' in a[3]


def up(c, r):
    buf = b''
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            buf += d
            out = b''
            while True:
                a, rest = parse(buf)
                if a is None:
                    break
                raw, buf = buf[:len(buf) - len(rest)], rest
                if not plain and is_release(a):
                    with mu:
                        first = not done
                        done.append(1)
                    if first:
                        print('DROPPED', flush=True)
                        c.close()
                        r.close()
                        return
                out += raw
            if out:
                r.sendall(out)
    except OSError:
        pass
    for s in (r, c):
        try:
            s.close()
        except OSError:
            pass


def down(r, c):
    try:
        while True:
            d = r.recv(65536)
            if not d:
                break
            c.sendall(d)
    except OSError:
        pass
    try:
        c.close()
    except OSError:
        pass


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(('127.0.0.1', lport))
ls.listen(64)
print('LISTEN', flush=True)
while True:
    c, _ = ls.accept()
    try:
        r = socket.create_connection(('127.0.0.1', rport))
    except OSError:
        c.close()
        continue
    threading.Thread(target=up, args=(c, r), daemon=True).start()
    threading.Thread(target=down, args=(r, c), daemon=True).start()
