#!/usr/bin/env python3
"""run_redis.py GOLDEN_DIR: every golden script of the Redis store
(GOLDEN_DIR/VARIANT/*.lua, what `make golden` wrote) compiled and run as
it is by the server of $DLOCK_TEST_REDIS_URL (scripts/test.sh starts a
throwaway one), with redis-cli, the server's own client.

Each file is sent with `SCRIPT LOAD` (the server compiles it; the sha it
answers must be the SHA1 of the file, so the text it holds is the file),
then run with `redis-cli --eval FILE KEYS , ARGV` through one lock's life
on sample keys under a key prefix of this run's own: acquire, ttl,
extend, status, a second acquire that finds it busy and queues, leave,
release; the same for a shared lock with a run record (run_begin,
run_end, kept_runs, keep_runs) and a suspension (suspend, suspension, resume) and a semaphore;
force.  The cluster variant runs on the same
standalone server: its scripts differ in {{heard}} only, and every key of
one call here is in one slot's reach (a standalone server has one).

A script the server refuses, or whose answer is not the one expected,
fails the entry with the file's name and the server's words.  So that a
broken golden cannot pass unseen, a text that is no Lua must be refused
too (else the check itself is broken).  Without the URL: exit 77 (skip),
or 1 with CI=true."""
import hashlib
import os
import subprocess
import sys
import urllib.parse

failures = []


def fail(where, what):
    failures.append("%s: %s" % (where, what))
    print("FAIL %s: %s" % (where, what), file=sys.stderr)


def cli_base(url):
    """redis-cli's connection arguments for a dlock redis:// or unix://
    URL (the query's db= and password= too)."""
    u = urllib.parse.urlsplit(url)
    q = dict(urllib.parse.parse_qsl(u.query))
    if u.scheme == "unix":
        args = ["-s", u.path]
    elif u.scheme == "redis":
        args = ["-h", u.hostname or "127.0.0.1", "-p", str(u.port or 6379)]
        if u.path not in ("", "/"):
            q.setdefault("db", u.path.lstrip("/"))
    else:
        raise SystemExit("run_redis.py: a redis:// or unix:// URL, not %s"
                         % u.scheme)
    if "db" in q:
        args += ["-n", q["db"]]
    pw = urllib.parse.unquote(u.password) if u.password else q.get("password")
    if u.username and pw is not None:
        args += ["--user", urllib.parse.unquote(u.username)]
    if pw is not None:
        args += ["--pass", pw, "--no-auth-warning"]
    return ["redis-cli"] + args + ["--no-raw"]


class Cli:
    def __init__(self, base):
        self.base = base

    def __call__(self, args, stdin=None):
        """The reply as redis-cli prints it (--no-raw), and an error's text
        or None."""
        p = subprocess.run(self.base + args, input=stdin, capture_output=True,
                           timeout=30)
        out = p.stdout.decode("utf-8", "replace")
        err = p.stderr.decode("utf-8", "replace").strip()
        if p.returncode != 0 or "(error)" in out:
            return out, (out.strip() or err or "exit %d" % p.returncode)
        return out, None


def first_int(out):
    """The first integer of a reply ("(integer) N", "1) (integer) N")."""
    for line in out.splitlines():
        if "(integer) " in line:
            return int(line.split("(integer) ", 1)[1])
    return None


def ints(out):
    return [int(l.split("(integer) ", 1)[1]) for l in out.splitlines()
            if "(integer) " in l]


def load(cli, path):
    with open(path, "rb") as f:
        text = f.read()
    out, err = cli(["-x", "SCRIPT", "LOAD"], stdin=text)
    if err is not None:
        return err
    sha = out.strip().strip('"')
    if sha != hashlib.sha1(text).hexdigest():
        return "SCRIPT LOAD answered %r, not the SHA1 of the file" % sha
    return None


def variant(cli, vdir, prefix):
    before = len(failures)
    v = os.path.basename(vdir)
    files = sorted(f for f in os.listdir(vdir) if f.endswith(".lua"))
    for f in files:
        err = load(cli, os.path.join(vdir, f))
        if err is not None:
            fail("%s/%s" % (v, f), "SCRIPT LOAD: %s" % err)
    have = set(files)

    def ev(f, keys, argv, want=None, check=None):
        """EVAL golden file f; want: its first integer; check(out): a
        complaint or None."""
        where = "%s/%s" % (v, f)
        if f not in have:
            fail(where, "missing (renamed? this script runs it by name)")
            return None
        out, err = cli(["--eval", os.path.join(vdir, f)] + keys + [","] +
                       argv)
        if err is not None:
            fail(where, "EVAL: %s" % err)
            return None
        if want is not None and first_int(out) != want:
            fail(where, "EVAL answered %r, expected first %d"
                 % (out.strip(), want))
        elif check is not None and check(out):
            fail(where, "EVAL answered %r: %s" % (out.strip(), check(out)))
        return out

    # The keys of one name, in the order of every per-lock script
    # (lua/acquire.lua): lock, fence, readers, info, queue, waiters, sem.
    def keys(name):
        k = prefix + v + ":" + name
        return [k] + [k + "|" + s for s in
                      ("fence", "readers", "info", "queue", "waiters", "sem")]

    host, pid, ttl = "golden-host", "4242", "30000"
    a, b, c, d = ("%032x" % i for i in (0xa, 0xb, 0xc, 0xd))
    positive = lambda o: None if (first_int(o) or 0) > 0 else "not > 0"

    # A lock: taken, checked, renewed, described, contended, let go.
    k = keys("lock")
    out = ev("acquire.lua", k, [a, ttl, host, pid, "n", "1"], want=1)
    ev("ttl.lua", k, [a, "0"], check=positive)
    ev("extend.lua", k, [a, ttl], want=1)
    ev("status.lua", k, ["", ""],
       check=lambda o: None if first_int(o) == 1 else "not held")
    ev("acquire.lua", k, [b, ttl, host, pid, "n", "1"], want=0)
    ev("acquire.lua", k, [b, ttl, host, pid, "q", "1"], want=0)
    ev("leave.lua", k, [b])
    ev("release.lua", k, [a, "0"], want=1)

    # A shared lock, with a run record while it is held.
    k = keys("shared")
    out = ev("acquire_shared.lua", k, [c, ttl, host, pid, "n", "1"], want=1)
    fence = str(ints(out)[1]) if out and len(ints(out)) > 1 else "1"
    ev("ttl_shared.lua", k, [c, "0"], check=positive)
    ev("extend_shared.lua", k, [c, ttl], want=1)
    susp = [k[0] + "|suspended"]
    runs = [k[0], k[2], k[6], k[0] + "|runs", k[0] + "|run"]
    ev("run_begin.lua", runs + susp, [c, "s", "0", "0", fence, pid, host],
       want=1)
    ev("run_end.lua", runs, [fence, "1", "0"])
    # How many runs it keeps: the default, set (the list trimmed to it in
    # the same script, which answers how many are left), read back.
    ev("kept_runs.lua", [runs[4]], [], want=20)
    ev("keep_runs.lua", runs[3:5], ["3"], want=1)
    ev("kept_runs.lua", [runs[4]], [], want=3)
    # Its suspension: made, found made, read, skipping a run, lifted.
    ev("suspend.lua", susp, ["ops@golden", "a reason"], want=0)
    ev("suspend.lua", susp, ["ops@golden", "again"], want=1)
    ev("suspension.lua", susp, [], want=1)
    ev("run_begin.lua", runs + susp, [c, "s", "0", "0", fence, pid, host],
       want=2)
    ev("resume.lua", susp, [], want=1)
    ev("resume.lua", susp, [], want=0)
    ev("suspension.lua", susp, [], want=0)
    ev("release_shared.lua", k, [c, "0"], want=1)

    # A semaphore of 3.
    k = keys("sem")
    ev("acquire_sem.lua", k, [d, ttl, host, pid, "n", "3"], want=1)
    ev("ttl_sem.lua", k, [d, "0"], check=positive)
    ev("extend_sem.lua", k, [d, ttl], want=1)
    ev("release_sem.lua", k, [d, "0"], want=1)

    # Force: a lock taken, then broken.
    k = keys("force")
    ev("acquire.lua", k, [a, ttl, host, pid, "n", "1"], want=1)
    ev("force.lua", k, ["", k[0] + "|release"],
       check=lambda o: None if (first_int(o) or 0) >= 1 else "removed none")
    print("%s %s: %d scripts loaded and run" %
          ("FAIL" if len(failures) > before else "ok", v, len(files)))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    url = os.environ.get("DLOCK_TEST_REDIS_URL", "")
    if not url:
        print("DLOCK_TEST_REDIS_URL is not set: scripts/test.sh starts a "
              "server and sets it")
        return 1 if os.environ.get("CI") == "true" else 77
    cli = Cli(cli_base(url))
    out, err = cli(["PING"])
    if err is not None:
        print("cannot reach %s: %s" % (url, err), file=sys.stderr)
        return 1
    # The check can fail: the server refuses what is not Lua.
    out, err = cli(["-x", "SCRIPT", "LOAD"], stdin=b"return (\n")
    if err is None:
        fail("self-test", "the server compiled a broken script: %r" % out)
    prefix = "dlock-golden-run:%d:" % os.getpid()
    top = sys.argv[1]
    variants = sorted(d for d in os.listdir(top)
                      if os.path.isdir(os.path.join(top, d)))
    if not variants:
        fail(top, "no variants")
    try:
        for v in variants:
            variant(cli, os.path.join(top, v), prefix)
    finally:
        out, _ = cli(["--scan", "--pattern", prefix + "*"])
        left = [l.strip().strip('"') for l in out.splitlines() if l.strip()]
        for i in range(0, len(left), 100):
            cli(["DEL"] + left[i:i + 100])
    if failures:
        print("%d golden check(s) failed" % len(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
