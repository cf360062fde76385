#!/usr/bin/env python3
"""A proxy on 127.0.0.1 in front of a real server that passes what the
client sends at once and sends the server's answers back one byte at a
time, one byte per DELAY seconds (a slow or hostile server).
  dribble.py HOST PORT DELAY PORTFILE [fast]
Writes "PORT CONTROLPORT" to PORTFILE.  With "fast" it passes answers
through at full speed until a client of CONTROLPORT sends "dribble\n"
(answered "ok\n" once in force), so that a store can be opened first."""
import socket, sys, threading, time

host, port, delay, portfile = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
dribbling = threading.Event()
if len(sys.argv) <= 5 or sys.argv[5] != "fast":
    dribbling.set()
ctl = socket.socket()
ctl.bind(("127.0.0.1", 0))
ctl.listen(4)

def control():
    while True:
        c, _ = ctl.accept()
        if c.makefile().readline().strip() == "dribble":
            dribbling.set()
            c.sendall(b"ok\n")
        c.close()
threading.Thread(target=control, daemon=True).start()

def pump(src, dst, slow):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if slow and dribbling.is_set():
                for i in range(len(data)):
                    dst.sendall(data[i:i + 1])
                    time.sleep(delay)
            else:
                dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(64)
with open(portfile, "w") as f:
    f.write("%d %d\n" % (ls.getsockname()[1], ctl.getsockname()[1]))
while True:
    c, _ = ls.accept()
    try:
        u = socket.create_connection((host, port))
    except OSError:
        c.close()
        continue
    threading.Thread(target=pump, args=(c, u, False), daemon=True).start()
    threading.Thread(target=pump, args=(u, c, True), daemon=True).start()
