#!/usr/bin/env python3
"""dlock run as the foreground job of a terminal, its lock broken.

    pty_run.py DLOCK URL NAME DIR

Runs `dlock -s URL run NAME -- sh DIR/cmd.sh` on a new pseudo-terminal,
as that terminal's foreground job (pty.fork(): a session of its own, the
pty its controlling terminal, its process group the foreground one), so
that CMD shares dlock's process group, as in an interactive shell.

cmd.sh starts three programs that write on, each sending its pid down the
FIFO DIR/pids:
  bg      a background job of the script (the issue's case);
  daemon  setsid + double fork: its own session, its parent gone;
  stubborn  a background job that ignores SIGTERM.
Once the three have reported, the lock is broken from outside
(`dlock release --force NAME`).  dlock must exit 75, and by then no
process the command started may be alive (kill(pid, 0) fails with ESRCH,
or only a zombie is left: it runs no more).  The pids are checked with
their start time (/proc/PID/stat), so a reused pid is not taken for one.

Exits 0 if all holds, 1 (with FAIL lines) if not.  Everything is bounded
(30 s); what is left is killed at the end.
"""
import errno
import os
import pty
import select
import signal
import subprocess
import sys
import time

BOUND = 30.0

CMD_SH = r"""
pids=$1 out=$2
# bg: a program the script runs in the background.
sh -c 'echo "bg $$" >"$1"; while :; do echo bg >>"$2"; sleep 0.05; done' \
    bg "$pids" "$out" &
# daemon: its own session, double-forked (its parent exits at once).
setsid sh -c '(sh -c "echo \"daemon \$\$\" >\"\$1\"; while :; do echo daemon >>\"\$2\"; sleep 0.05; done" d "$1" "$2" &) ; exit 0' \
    daemon "$pids" "$out" &
# stubborn: ignores SIGTERM.
sh -c 'trap "" TERM; echo "stubborn $$" >"$1"; while :; do echo stubborn >>"$2"; sleep 0.05; done' \
    stubborn "$pids" "$out" &
wait
"""

def starttime(pid):
    """Field 22 of /proc/PID/stat, and the state; None if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    rest = s[s.rindex(")") + 2:].split()
    return rest[19], rest[0]


def main():
    dlock, url, name, d = sys.argv[1:5]
    deadline = time.monotonic() + BOUND
    fifo = os.path.join(d, "pids")
    os.mkfifo(fifo)
    with open(os.path.join(d, "cmd.sh"), "w") as f:
        f.write(CMD_SH)
    # Read and write, so that the FIFO has no EOF between writers.
    ffd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    st_r, st_w = os.pipe()  # the "shell" -> us: dlock's exit status
    go_r, go_w = os.pipe()  # us -> the "shell": EOF when it may end
    pid, master = pty.fork()
    if pid == 0:
        # An interactive shell's part: the session leader, holding the
        # terminal, runs dlock as its foreground job (a process group of
        # its own, made the terminal's foreground one), waits for it and
        # stays until the checks are done (its exit would hang up the
        # terminal: SIGHUP to the foreground group, which would do
        # dlock's work for it).
        try:
            os.close(st_r)
            os.close(go_w)
            job = os.fork()
            if job == 0:
                signal.signal(signal.SIGTTOU, signal.SIG_IGN)
                os.setpgid(0, 0)
                os.tcsetpgrp(0, os.getpid())
                signal.signal(signal.SIGTTOU, signal.SIG_DFL)
                os.execv(dlock, [dlock, "-s", url, "run", name, "--ttl",
                                 "2", "--grace", "0.5", "--", "sh",
                                 os.path.join(d, "cmd.sh"), fifo,
                                 os.path.join(d, "out")])
            os.write(st_w, b"job %d\n" % job)
            _, st = os.waitpid(job, 0)
            os.write(st_w, b"rc %d\n" % os.waitstatus_to_exitcode(st))
            os.read(go_r, 1)
        finally:
            os._exit(0)
    os.close(st_w)
    os.close(go_r)
    term = b""
    buf = b""
    procs = {}  # kind -> (pid, starttime)
    fails = []
    status = None
    job = None
    sbuf = b""

    def drain(timeout):
        nonlocal term, buf, status, job, sbuf
        r, _, _ = select.select([master, ffd, st_r], [], [], timeout)
        if st_r in r:
            got = os.read(st_r, 64)
            sbuf += got
            while b"\n" in sbuf:
                line, sbuf = sbuf.split(b"\n", 1)
                what, v = line.decode().split()
                if what == "job":
                    job = int(v)
                else:
                    status = int(v)
            if not got and status is None:
                status = -1  # the "shell" died
        if master in r:
            try:
                term += os.read(master, 4096)
            except OSError:
                pass  # EIO: the terminal's last process is gone
        if ffd in r:
            buf += os.read(ffd, 4096)

    while len(procs) < 3 and time.monotonic() < deadline:
        drain(0.2)
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            kind, p = line.decode().split()
            st = starttime(int(p))
            if st is not None:
                procs[kind] = (int(p), st[0])
        if status is not None:
            break
    if len(procs) < 3:
        fails.append("the command's programs did not all start: %s; "
                     "terminal: %r" % (sorted(procs), term))
    else:
        r = subprocess.run([dlock, "-s", url, "release", "--force", name],
                           capture_output=True, timeout=BOUND)
        if r.returncode != 0:
            fails.append("release --force exited %d: %r"
                         % (r.returncode, r.stderr))
        while status is None and time.monotonic() < deadline:
            drain(0.1)
    if status is None:
        fails.append("dlock did not exit within %d s" % BOUND)
    else:
        code = status
        if code != 75:
            fails.append("dlock exited %d, not 75; terminal: %r"
                         % (code, term))
        else:
            print("ok   dlock run in a terminal exits 75 when its lock "
                  "is broken")
    # At dlock's exit: none of what the command started runs on.
    for kind, (p, st) in sorted(procs.items()):
        now = starttime(p)
        alive = now is not None and now[0] == st and now[1] not in "ZX"
        if alive:
            fails.append("%s (pid %d) still runs after dlock exited"
                         % (kind, p))
            try:
                os.kill(p, signal.SIGKILL)
            except OSError as e:
                if e.errno != errno.ESRCH:
                    raise
        else:
            print("ok   %s (pid %d) is gone" % (kind, p))
    # The "shell" may go (hanging up the terminal), and with it dlock if
    # it is still there.
    os.close(go_w)
    if status is None and job is not None:
        os.killpg(job, signal.SIGKILL)
    os.waitpid(pid, 0)
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
