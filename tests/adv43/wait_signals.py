#!/usr/bin/env python3
"""wait_signals.py - issue 43, items 11 and 12: a waiting `dlock run` and
the signals it gets, and a store frozen while it opens.

  wait_signals.py DLOCK signals STORE   item 11 (STORE: sqlite, redis,
                                        postgres, mysql, etcd)
  wait_signals.py DLOCK frozen STORE    item 12 (the network stores)
  wait_signals.py DLOCK hung STORE      item 11 with a store that hangs
  wait_signals.py DLOCK begin redis     item 11 during the start record

signals: holder A holds NAME; waiter B (`run -w 60 --ttl 30`) is in its
wait, as the store shows it (its queue key, queue entry, GET_LOCK or
advisory wait: a bounded poll, no sleep); waiter C queues behind it.  B
gets SIGTERM (then SIGHUP, SIGINT in further rounds): it must EXIT
128+N (not die of the signal, which leaves its place in the queue until
its lease ends) within a few seconds, without running its command, and
count the invocation as not run in its --metrics-file.  Then A lets go:
C must get the lock within 10 s (B's queue key, left behind, held it
for B's 30 s lease on etcd).  The hand-over times are printed.

frozen: a listener on 127.0.0.1 that accepts and never answers stands in
for a frozen server, with ?timeout=20s: `run -w 1` must give up well
before the URL's timeout (< 8 s; the promise is the wait + 1 s), `run
-w 0` (one try) within the URL's timeout, and a signal while a forever
wait opens must end it at once (nothing is in the store yet).

hung: B waits through tests/cancel/hold_replies.py, which then holds
every reply back, and gets SIGTERM: letting go of its wait hangs on the
mute store, and a second signal (SIGINT 1.5 s later) must end it within
a few seconds; with -w 4 the first signal alone ends it by the deadline
+ 1 s.  Always 128+N, never death by the signal.

begin: SIGTERM while `run --once` writes its start record (the reply
held back by hold_after.py): exit 143, CMD not run, the run recorded as
killed by signal 15, and the next `run --once` runs.

Outside CI a store without DLOCK_TEST_<STORE>_URL (or its client tool)
skips (77); with CI=true that is a failure.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse as up

DLOCK, MODE, STORE = sys.argv[1], sys.argv[2], sys.argv[3]
CI = os.environ.get("CI") == "true"
fails = 0


def skip(why):
    print("SKIP: " + why)
    sys.exit(1 if CI else 77)


def check(ok, what):
    global fails
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        fails += 1


def wait_for(pred, secs, step=0.05):
    """Poll pred() until true, at most secs: True if it became true."""
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                          **kw)


# --- how each store shows that NAME has waiters --------------------------

def waiters(url, name):
    """Waiters of NAME the store shows now (holders excluded), or None when
    the store has no such view (SQLite polls)."""
    u = up.urlsplit(url)
    if STORE == "etcd":
        eps = u.netloc.rpartition("@")[2]
        cmd = ["etcdctl", "--endpoints=" + eps, "get", "--prefix",
               "--keys-only", name + "/"]
        if u.username:
            cmd.insert(1, "--user=%s:%s" % (up.unquote(u.username),
                                            up.unquote(u.password or "")))
        keys = [k for k in run(cmd).stdout.split("\n") if k]
        # NAME/<lease hex>: NAME's queue (the first key holds).
        own = [k for k in keys if "/" not in k[len(name) + 1:]]
        return max(len(own) - 1, 0)
    if STORE == "redis":
        cmd = ["redis-cli", "-h", u.hostname, "-p", str(u.port or 6379)]
        if u.password:
            cmd += ["-a", up.unquote(u.password), "--no-auth-warning"]
        out = subprocess.run(cmd + ["ZCARD", b"dlock:" + name.encode() +
                                    b"\xffqueue"], capture_output=True,
                             timeout=30).stdout
        return int(out.strip() or b"0")
    if STORE == "postgres":
        q = ("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
             "NOT granted AND ((classid::bigint << 32) | objid::bigint) = "
             "hashtextextended('%s', 0)" % name)
        base = up.urlunsplit((u.scheme, u.netloc, u.path, "", ""))
        return int(run(["psql", base, "-Atc", q]).stdout.strip() or "0")
    if STORE == "mysql":
        q = ("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE "
             "STATE = 'User lock' AND INFO LIKE '%%GET_LOCK(''%s''%%'" % name)
        cmd = ["mysql", "-h", u.hostname, "-P", str(u.port or 3306),
               "-u", up.unquote(u.username or ""),
               "-p" + up.unquote(u.password or ""), "-N", "-B", "-e", q]
        return int(run(cmd).stdout.strip() or "0")
    return None


def store_url(tmp):
    if STORE == "sqlite":
        return "sqlite://" + os.path.join(tmp, "s.db")
    url = os.environ.get("DLOCK_TEST_%s_URL" % STORE.upper())
    if not url:
        skip("no DLOCK_TEST_%s_URL" % STORE.upper())
    tool = {"etcd": "etcdctl", "redis": "redis-cli", "postgres": "psql",
            "mysql": "mysql"}[STORE]
    if MODE != "frozen" and shutil.which(tool) is None:
        skip("no %s to see the waiters with" % tool)
    return url


def metric(path, field, name):
    try:
        for line in open(path):
            if line.startswith("dlock_run_%s{" % field) and \
                    ('name="%s"' % name) in line:
                return float(line.split()[-1])
    except OSError:
        pass
    return None


# --- item 11 ---------------------------------------------------------------

def signals(tmp, url):
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        sname = signal.Signals(sig).name
        name = "adv43-sig-%d-%s-%s" % (os.getpid(), STORE, sname)
        go = os.path.join(tmp, "go-" + sname)
        os.mkfifo(go)
        a = subprocess.Popen(
            [DLOCK, "-s", url, "run", name, "--", "sh", "-c",
             'echo up; read x <"$0"', go],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        up_line = a.stdout.readline()
        if up_line.strip() != "up":
            check(False, "%s: holder A did not start: %s" %
                  (sname, a.stderr.read()[:300]))
            a.kill()
            return
        berr = open(os.path.join(tmp, "b-" + sname), "w+")
        prom = os.path.join(tmp, "m-%s.prom" % sname)
        b = subprocess.Popen(
            [DLOCK, "-s", url, "-v", "run", "-w", "60", "--ttl", "30",
             "--metrics-file", prom, name, "--", "echo", "B-ran"],
            stdout=subprocess.PIPE, stderr=berr, text=True)
        # B is waiting: it said so (-v), and the store shows its wait.
        ok = wait_for(lambda: "waiting for" in open(berr.name).read(), 15)
        if ok and waiters(url, name) is not None:
            ok = wait_for(lambda: waiters(url, name) >= 1, 15)
        check(ok, "%s: waiter B is in its wait (%s waiters seen)" %
              (sname, waiters(url, name)))
        cerr = open(os.path.join(tmp, "c-" + sname), "w+")
        c = subprocess.Popen(
            [DLOCK, "-s", url, "-v", "run", "-w", "60", name, "--",
             "echo", "C-ran"],
            stdout=subprocess.PIPE, stderr=cerr, text=True)
        cout = []
        ct = threading.Thread(
            target=lambda: cout.append((c.stdout.readline(),
                                        time.monotonic())), daemon=True)
        ct.start()
        ok = wait_for(lambda: "waiting for" in open(cerr.name).read(), 15)
        if ok and waiters(url, name) is not None:
            ok = wait_for(lambda: waiters(url, name) >= 2, 15)
        check(ok, "%s: waiter C is in its wait, behind B" % sname)
        t0 = time.monotonic()
        b.send_signal(sig)
        try:
            brc = b.wait(10)
        except subprocess.TimeoutExpired:
            b.kill()
            brc = b.wait()
        bms = (time.monotonic() - t0) * 1000
        bout = b.stdout.read()
        check(brc == 128 + sig and bms < 8000,
              "%s: B exits %d after %.0f ms (want the exit code %d, not "
              "death by the signal (%d), within 8 s)" %
              (sname, brc, bms, 128 + sig, -sig))
        check("B-ran" not in bout, "%s: B did not run its command" % sname)
        nr = metric(prom, "not_run_total", name)
        check(nr == 1, "%s: B's metrics file counts it not run (%s)" %
              (sname, nr))
        # A lets go; C must get the lock promptly.
        t1 = time.monotonic()
        with open(go, "w") as f:
            f.write("go\n")
        ct.join(45)  # the hand-over is measured even when it is late
        if cout and cout[0][0].strip() == "C-ran":
            hand = (cout[0][1] - t1) * 1000
        else:
            hand = None
        print("     %s %s: hand-over to C after A's release: %s ms" %
              (STORE, sname, "%.0f" % hand if hand is not None else "> 45000"))
        check(hand is not None and hand < 10000,
              "%s: C gets the lock within 10 s of A's release" % sname)
        for p in (a, c):
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        check(a.returncode == 0 and c.returncode == 0,
              "%s: A and C exit 0 (%s, %s)" % (sname, a.returncode,
                                               c.returncode))


def pending(pid, sig):
    """Is sig pending for pid (sent, not yet handled or ignored)?"""
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith(("SigPnd:", "ShdPnd:")) and \
                    int(line.split()[1], 16) & (1 << (sig - 1)):
                return True
    except OSError:
        pass
    return False


def nohup(tmp, url):
    """A signal ignored when dlock started (nohup's SIGHUP) does not end
    the wait: B gets the lock once A lets go, and runs."""
    name = "adv43-sig-%d-%s-nohup" % (os.getpid(), STORE)
    go = os.path.join(tmp, "go-nohup")
    os.mkfifo(go)
    a = subprocess.Popen(
        [DLOCK, "-s", url, "run", name, "--", "sh", "-c",
         'echo up; read x <"$0"', go],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if a.stdout.readline().strip() != "up":
        check(False, "nohup: holder A did not start")
        a.kill()
        return
    berr = open(os.path.join(tmp, "b-nohup"), "w+")
    b = subprocess.Popen(
        [DLOCK, "-s", url, "-v", "run", "-w", "60", name, "--", "echo",
         "B-ran"], stdout=subprocess.PIPE, stderr=berr, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    ok = wait_for(lambda: "waiting for" in open(berr.name).read(), 15)
    if ok and waiters(url, name) is not None:
        ok = wait_for(lambda: waiters(url, name) >= 1, 15)
    check(ok, "nohup: B is in its wait")
    b.send_signal(signal.SIGHUP)
    wait_for(lambda: not pending(b.pid, signal.SIGHUP), 5)
    with open(go, "w") as f:
        f.write("go\n")
    try:
        out, _ = b.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        b.kill()
        out, _ = b.communicate()
    check(b.returncode == 0 and "B-ran" in out,
          "nohup: SIGHUP ignored at start leaves B waiting: exit %s, "
          "ran: %s" % (b.returncode, "B-ran" in out))
    try:
        a.wait(15)
    except subprocess.TimeoutExpired:
        a.kill()
        a.wait()


def begin(tmp, url):
    """SIGTERM while `run --once` records its start (its reply held back
    by a proxy, then let through): CMD is not run, dlock exits 143, the
    run is recorded as ended by the signal, and the lock is free: the
    next `run --once` runs it."""
    here = os.path.dirname(os.path.abspath(__file__))
    u = up.urlsplit(url)
    name = "adv43-begin-%d" % os.getpid()
    px = subprocess.Popen([sys.executable, os.path.join(here, "hold_after.py"),
                           u.hostname, str(u.port),
                           b"\xffruns\r\n".hex()],
                          stdout=subprocess.PIPE, text=True)
    port = int(px.stdout.readline())
    b = subprocess.Popen([DLOCK, "-s", via(url, port), "run", "--once",
                          name, "--", "echo", "B-ran"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    said = []
    t = threading.Thread(target=lambda: said.append(px.stdout.readline()),
                         daemon=True)
    t.start()
    t.join(15)
    check(said == ["held\n"], "begin: B's start record is held back")
    b.send_signal(signal.SIGTERM)
    wait_for(lambda: b.poll() is not None or
             not pending(b.pid, signal.SIGTERM), 5)
    px.send_signal(signal.SIGUSR2)
    try:
        out, err = b.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        b.kill()
        out, err = b.communicate()
    check(b.returncode == 143 and "B-ran" not in out,
          "begin: SIGTERM during the start record: exit %s (want 143), "
          "CMD run: %s %s" % (b.returncode, "B-ran" in out, err[:300]))
    h = run([DLOCK, "-s", url, "history", name])
    check("killed by signal 15" in h.stdout,
          "begin: the run is recorded as ended by SIGTERM: %r" %
          h.stdout[:200])
    c = run([DLOCK, "-s", url, "run", "--once", "-w", "10", name, "--",
             "echo", "C-ran"])
    check(c.returncode == 0 and "C-ran" in c.stdout,
          "begin: the next run --once runs it (exit %s, %r)" %
          (c.returncode, c.stderr[:200]))
    px.terminate()
    px.wait()


# --- item 12 ---------------------------------------------------------------

class Silent:
    """Accepts connections on 127.0.0.1 and never answers: a frozen
    server, as the client sees it (SIGSTOP would freeze the shared one)."""

    def __init__(self):
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(128)
        self.port = self.ls.getsockname()[1]
        self.keep = []
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            self.keep.append(c)


def via(url, port, timeout="20s"):
    """URL with its host:port replaced by 127.0.0.1:PORT and the given
    ?timeout= (and connect_timeout=, which Redis and libpq have)."""
    u = up.urlsplit(url)
    cred = u.netloc.rpartition("@")[0]
    net = (cred + "@" if cred else "") + "127.0.0.1:%d" % port
    q = [p for p in u.query.split("&")
         if p and not p.startswith(("timeout=", "connect_timeout="))]
    q.append("timeout=" + timeout)
    if STORE in ("redis", "postgres"):
        q.append("connect_timeout=" + timeout.rstrip("s"))
    return up.urlunsplit((u.scheme, net, u.path, "&".join(q), ""))


def timed(args, sig=None):
    """Run dlock ARGS: (exit code, ms, stderr).  With sig: sent 0.5 s in
    (it has connected by then, and waits for an answer)."""
    t0 = time.monotonic()
    p = subprocess.Popen([DLOCK] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    if sig is not None:
        try:
            p.wait(0.5)
        except subprocess.TimeoutExpired:
            p.send_signal(sig)
    try:
        out, err = p.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return p.returncode, (time.monotonic() - t0) * 1000, err


def frozen(tmp, url):
    s = Silent()
    fu = via(url, s.port)
    name = "adv43-frozen-%d" % os.getpid()
    rc, ms, err = timed(["-s", fu, "run", "-w", "1", name, "--", "true"])
    check(rc == 69 and ms < 8000,
          "run -w 1 on a frozen store (timeout=20s): exit %d after %.0f ms "
          "(want 69 well before 20 s: < 8 s) %s" % (rc, ms, err[:200]))
    rc, ms, err = timed(["-s", fu, "run", "-w", "3", name, "--", "true"])
    check(rc == 69 and ms < 10000,
          "run -w 3 on a frozen store: exit %d after %.0f ms (want 69 "
          "< 10 s) %s" % (rc, ms, err[:200]))
    # A try is bounded by the URL's timeout, as dlock_acquire()'s is.
    rc, ms, err = timed(["-s", via(url, s.port, "3s"), "run", "-w", "0",
                         name, "--", "true"])
    check(rc == 69 and ms < 8000,
          "run -w 0 on a frozen store (timeout=3s): exit %d after %.0f ms "
          "(want 69 within the URL's timeout + slack: < 8 s)" % (rc, ms))
    # A signal while the open hangs (a forever wait: only the URL's
    # timeout bounds its open): nothing is in the store yet, 128+N now.
    rc, ms, err = timed(["-s", fu, "run", name, "--", "true"],
                        signal.SIGTERM)
    check(rc == 128 + signal.SIGTERM and ms < 4000,
          "SIGTERM while a forever wait opens a frozen store: exit %d after "
          "%.0f ms (want 143 at once, not the URL's 20 s)" % (rc, ms))


def hung(tmp, url):
    """B waits through a proxy that then holds every reply back: a store
    that hangs while B gives up its wait.  A second signal ends B at
    once; a finite wait ends by its deadline + 1 s with one signal."""
    here = os.path.dirname(os.path.abspath(__file__))
    hold = os.path.join(here, "..", "cancel", "hold_replies.py")
    u = up.urlsplit(url)
    for label, wait, second in (("forever", None, signal.SIGINT),
                                ("-w 4", "4", None)):
        name = "adv43-hung-%d-%s" % (os.getpid(), wait or "f")
        go = os.path.join(tmp, "go-" + (wait or "f"))
        os.mkfifo(go)
        a = subprocess.Popen(
            [DLOCK, "-s", url, "run", name, "--", "sh", "-c",
             'echo up; read x <"$0"', go],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if a.stdout.readline().strip() != "up":
            check(False, "%s: holder A did not start" % label)
            a.kill()
            return
        px = subprocess.Popen([sys.executable, hold, u.hostname,
                               str(u.port)], stdout=subprocess.PIPE,
                              text=True)
        port = int(px.stdout.readline())
        berr = open(os.path.join(tmp, "b-" + (wait or "f")), "w+")
        args = [DLOCK, "-s", via(url, port), "-v", "run", "--ttl", "30"]
        if wait:
            args += ["-w", wait]
        b = subprocess.Popen(args + [name, "--", "echo", "B-ran"],
                             stdout=subprocess.PIPE, stderr=berr, text=True)
        ok = wait_for(lambda: "waiting for" in open(berr.name).read(), 15)
        ok = ok and wait_for(lambda: waiters(url, name) >= 1, 15)
        check(ok, "%s: B is in its wait" % label)
        px.send_signal(signal.SIGUSR1)  # from now on the store is mute
        t0 = time.monotonic()
        b.send_signal(signal.SIGTERM)
        t2 = None
        if second is not None:
            try:
                b.wait(1.5)
            except subprocess.TimeoutExpired:
                t2 = time.monotonic()
                b.send_signal(second)
        try:
            brc = b.wait(15)
        except subprocess.TimeoutExpired:
            b.kill()
            brc = b.wait()
        ms = (time.monotonic() - t0) * 1000
        if second is not None:
            after = (time.monotonic() - (t2 or t0)) * 1000
            check(brc in (128 + signal.SIGTERM, 128 + second) and
                  after < 4000,
                  "%s: SIGTERM, then %s 1.5 s later to B stuck in a mute "
                  "store: exit %d, %.0f ms after the last signal (%s); "
                  "want 143 or %d within 4 s" %
                  (label, second.name, brc, after,
                   "the second sent" if t2 else "no second needed",
                   128 + second))
        else:
            check(brc == 128 + signal.SIGTERM and ms < 9000,
                  "%s: SIGTERM to B stuck in a mute store: exit %d after "
                  "%.0f ms (want 143 by its deadline + 1 s: < 9 s)" %
                  (label, brc, ms))
        check("B-ran" not in b.stdout.read(), "%s: B did not run" % label)
        px.terminate()
        px.wait()
        with open(go, "w") as f:
            f.write("go\n")
        try:
            a.wait(15)
        except subprocess.TimeoutExpired:
            a.kill()
            a.wait()


def main():
    tmp = tempfile.mkdtemp(prefix="adv43-ws-")
    try:
        url = store_url(tmp)
        if MODE == "signals":
            signals(tmp, url)
            nohup(tmp, url)
        else:
            {"frozen": frozen, "hung": hung, "begin": begin}[MODE](tmp, url)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d check(s) failed" % fails)
    sys.exit(1 if fails else 0)


main()
