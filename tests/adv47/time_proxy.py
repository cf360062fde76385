#!/usr/bin/env python3
"""A proxy to a Redis server that answers TIME itself, with the seconds
and microseconds given (a hostile or broken server's clock); everything
else is passed on.  time_proxy.py PORT_FILE HOST PORT SECONDS MICROS
writes the port it listens on (127.0.0.1) to PORT_FILE."""
import socket
import sys
import threading

port_file, host, port, secs, usecs = sys.argv[1:6]
TIME = b"*1\r\n$4\r\nTIME\r\n"
reply = b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
    len(secs), secs.encode(), len(usecs), usecs.encode())


def pump(src, dst, client):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if client and TIME in data:
                before, _, after = data.partition(TIME)
                if before:
                    dst.sendall(before)
                src.sendall(reply)
                if after:
                    dst.sendall(after)
                continue
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(16)
with open(port_file, "w") as f:
    f.write("%d\n" % ls.getsockname()[1])
while True:
    c, _ = ls.accept()
    u = socket.create_connection((host, int(port)))
    threading.Thread(target=pump, args=(c, u, True), daemon=True).start()
    threading.Thread(target=pump, args=(u, c, False), daemon=True).start()
