"""The Python binding against every store (see conftest.py)."""
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

import dlock

PY = sys.executable


def no_shared(kind):
    return kind in ("mysql", "mariadb")


class Child:
    """A helper.py process, driven line by line through pipes."""

    def __init__(self, helper, mode, url, name):
        self.p = subprocess.Popen(
            [PY, helper, mode, url, name], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=os.environ.copy())

    def expect(self, word):
        line = self.p.stdout.readline()
        if not line.startswith(word):
            self.p.kill()
            _, err = self.p.communicate(timeout=30)
            raise AssertionError("child said %r, expected %r; stderr: %s"
                                 % (line, word, err))
        return line.split()

    def tell(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()

    def finish(self):
        out, err = self.p.communicate(timeout=60)
        assert self.p.returncode == 0, (out, err)
        self.err = err
        return out


# --- basics ----------------------------------------------------------------

def test_acquire_release(store, name):
    lk = store.lock(name, wait=0)
    assert not lk.held and lk.fence == 0
    assert lk.acquire() is True
    assert lk.held and lk.fence > 0 and not lk.lost
    assert 0 < lk.lease_left <= 30
    assert store.status(name).held
    lk.release()
    assert not lk.held
    assert not store.status(name).held
    with pytest.raises(dlock.NotHeld):
        lk.release()
    with pytest.raises(dlock.NotHeld):
        lk.extend()
    # A Lock is reusable, with a new fence.
    first = lk.fence
    lk.acquire()
    assert lk.fence > first
    lk.release()


def test_context_manager(store, name):
    with store.lock(name, wait=5) as lk:
        assert lk.held
        assert store.try_lock(name) is None
        fence = lk.fence
    assert not lk.held
    assert not store.status(name).held
    # An exception in the body releases and propagates.
    with pytest.raises(KeyError):
        with store.lock(name) as lk2:
            assert lk2.fence > fence
            raise KeyError("boom")
    assert not store.status(name).held


def test_try_lock_busy_returns_none(store, name):
    holder = store.try_lock(name)
    assert holder is not None
    assert store.try_lock(name) is None
    with pytest.raises(dlock.Busy) as ei:
        store.lock(name, wait=0).acquire()
    assert ei.value.code == dlock.BUSY
    assert not isinstance(ei.value, dlock.Timeout)
    assert name in str(ei.value)
    holder.release()
    again = store.try_lock(name)
    assert again is not None and again.fence > holder.fence
    again.release()


def test_wait_times_out(store, name):
    holder = store.acquire(name, wait=0)
    try:
        t0 = time.monotonic()
        with pytest.raises(dlock.Timeout) as ei:
            with store.lock(name, wait=0.3):
                pytest.fail("acquired a held lock")
        took = time.monotonic() - t0
        assert ei.value.code == dlock.BUSY
        assert isinstance(ei.value, dlock.Busy)
        assert isinstance(ei.value, TimeoutError)
        assert 0.3 - 0.002 <= took < 3.0, took     # ms precision
        # try_lock with a wait answers None after the wait.
        t0 = time.monotonic()
        assert store.try_lock(name, wait=0.2) is None
        assert time.monotonic() - t0 >= 0.2 - 0.002
    finally:
        holder.release()


def test_wait_gets_it_when_released(store, name):
    holder = store.acquire(name)
    got = {}

    def waiter():
        with store.lock(name, wait=30) as lk:
            got["fence"] = lk.fence

    t = threading.Thread(target=waiter)
    t.start()
    holder.release()
    t.join(40)
    assert not t.is_alive()
    assert got["fence"] > holder.fence


@pytest.mark.parametrize("forever", [None, float("inf"), dlock.WAIT_FOREVER],
                         ids=["None", "inf", "WAIT_FOREVER"])
def test_wait_forever_spellings(store, name, forever):
    """docs/library.md's table: None, math.inf and WAIT_FOREVER (-1, C's
    DLOCK_WAIT_FOREVER, PHP's Store::FOREVER) wait until acquired; 0
    tries once (issue 47 trap 5: PHP read null as a try)."""
    holder = store.acquire(name, ttl=0.3, renew=False)
    fence = holder.fence
    with pytest.raises(dlock.Busy):
        store.acquire(name, wait=0)
    t0 = time.monotonic()
    lk = store.acquire(name, wait=forever)   # the holder's lease runs out
    try:
        assert lk.fence > fence
        assert time.monotonic() - t0 < 20
    finally:
        lk.release()
    with pytest.raises(dlock.InvalidArgument):
        store.lock(name, wait=-2)


def test_fences_strictly_increase(store, name):
    fences = []
    for _ in range(5):
        with store.lock(name, wait=5) as lk:
            fences.append(lk.fence)
            assert store.status(name).fence == lk.fence
    assert all(a < b for a, b in zip(fences, fences[1:])), fences
    # Free: the highest fence so far, or 0 where the store does not know.
    assert store.status(name).fence in (0, fences[-1])


def test_shared(store, name, kind):
    if no_shared(kind):
        with pytest.raises(dlock.NotSupported) as ei:
            store.acquire(name, shared=True)
        assert ei.value.code == dlock.ENOTSUP
        return
    a = store.acquire(name, shared=True, wait=0)
    b = store.acquire(name, shared=True, wait=0)
    try:
        assert store.try_lock(name) is None           # no writer
        info = store.status(name)
        assert info.held and info.shared and info.holders == 2
    finally:
        a.release()
        b.release()
    w = store.try_lock(name)
    assert w is not None
    assert store.try_lock(name, shared=True) is None  # no reader
    w.release()


def test_semaphore(store, name):
    a = store.acquire(name, limit=2)
    b = store.acquire(name, limit=2)
    try:
        assert b.fence > a.fence
        assert store.try_lock(name, limit=2) is None
        info = store.status(name)
        assert info.held and info.holders == 2 and info.limit == 2
        # Every holder of a name must ask the same limit.
        with pytest.raises(dlock.InvalidArgument):
            store.acquire(name, limit=3)
    finally:
        a.release()
    c = store.try_lock(name, limit=2)
    assert c is not None and c.fence > b.fence
    c.release()
    b.release()
    with pytest.raises(dlock.InvalidArgument):
        store.acquire(name, limit=2, shared=True)


def test_extend_assert_ttl(store, name):
    with store.lock(name, ttl=2) as lk:
        lk.assert_ttl(0.5)
        with pytest.raises(dlock.Expiring) as ei:
            lk.assert_ttl(20)
        assert ei.value.code == dlock.EXPIRING
        lk.extend(40)
        lk.assert_ttl(20)
        assert lk.lease_left > 20
        info = store.status(name)
        assert info.ttl is not None and info.ttl > 20
        lk.extend()                       # the lock's own (new) ttl
        with pytest.raises(dlock.InvalidArgument):
            lk.extend(0.01)               # under DLOCK_TTL_MIN_MS
        assert not lk.lost


def test_no_renew_lease_runs_out(store, name):
    lost = threading.Event()
    lk = store.acquire(name, ttl=0.3, renew=False,
                       on_lost=lambda l: lost.set())
    assert lost.wait(10), "on_lost not called at the lease end"
    assert lk.lost and lk.lease_left == 0
    with pytest.raises(dlock.Lost):
        lk.assert_ttl(0.1)
    with pytest.raises(dlock.Lost):
        lk.release()
    assert not lk.held


def test_status_and_list(store, name):
    info = store.status(name)
    assert not info.held and info.holders == 0 and info.ttl is None
    other = name + "-other"
    a = store.acquire(name + "/a")
    b = store.acquire(name + "/b")
    c = store.acquire(other)
    try:
        info = store.status(name + "/a")
        assert info.held and not info.shared and info.holders == 1
        assert info.name == name + "/a"
        assert info.fence == a.fence
        assert info.pid == os.getpid()
        assert 0 < info.ttl <= 30.1          # redis may say 30001 ms
        assert info.since is not None and abs(info.since - time.time()) < 300
        assert not info.other_client
        names = sorted(i.name for i in store.list(name + "/"))
        assert names == [name + "/a", name + "/b"]
        assert other in {i.name for i in store.list(name)}
        assert other in {i.name for i in store.list()}
    finally:
        for lk in (a, b, c):
            lk.release()
    assert store.list(name) == []


def test_unicode_and_bytes_names(store, name):
    uname = name + "-caf\u00e9-\u9501"
    with store.lock(uname) as lk:
        assert lk.name == uname
        assert store.status(uname).held
        assert store.try_lock(uname.encode("utf-8")) is None
        assert [i.name for i in store.list(name)] == [uname]


# --- errors ---------------------------------------------------------------

def test_bad_names(store):
    for bad in ("", "a\0b", "x" * (dlock.NAME_MAX + 1)):
        with pytest.raises(dlock.InvalidArgument) as ei:
            store.acquire(bad)
        assert ei.value.code == dlock.EINVAL
        assert ei.value.message
    with pytest.raises(dlock.InvalidArgument):
        store.status("a\0b")
    with pytest.raises(TypeError):
        store.acquire(42)
    ok = store.acquire("x" * dlock.NAME_MAX)
    ok.release()


def test_bad_options(store, name):
    with pytest.raises(dlock.InvalidArgument) as ei:
        store.acquire(name, ttl=0.01)
    assert "ttl" in str(ei.value)
    with pytest.raises(dlock.InvalidArgument):   # -1 is WAIT_FOREVER
        store.lock(name, wait=-0.5)
    with pytest.raises(dlock.InvalidArgument):
        store.acquire(name, limit=dlock.LIMIT_MAX + 1)
    with pytest.raises(dlock.InvalidArgument):
        store.acquire(name, limit=-1)
    with pytest.raises(dlock.InvalidArgument) as ei:
        store.acquire(name, ttl=1e30)             # over 365 days
    assert "ttl" in str(ei.value)
    assert not store.status(name).held
    # A wait of 1e30 s is forever, like None: it gets a free lock at once.
    with store.lock(name, wait=1e30) as lk:
        assert lk.held
    # Past float's range once in ms (1e306 s * 1000 is inf): the same
    # answers, not OverflowError (the adversary of issue 47).
    with pytest.raises(dlock.InvalidArgument) as ei:
        store.acquire(name, ttl=1e306)
    assert "ttl" in str(ei.value)
    with store.lock(name, wait=1e306) as lk:
        assert lk.held


def test_exceptions_pickle():
    import pickle
    for cls in (dlock.Timeout, dlock.Unavailable, dlock.Lost, dlock.NotHeld):
        e = pickle.loads(pickle.dumps(cls("msg", -2)))
        assert type(e) is cls and e.code == -2 and str(e) == "msg"


def test_bad_urls():
    with pytest.raises(dlock.InvalidArgument) as ei:
        dlock.Store("bogus://nowhere")
    assert ei.value.code == dlock.EINVAL
    assert "bogus" in str(ei.value)
    with pytest.raises(dlock.InvalidArgument):
        dlock.Store("sqlite://relative/path.db")


def test_password_never_shown(url):
    # Port 1 on loopback: nothing listens there.
    bad = "redis://user:s3cr3t-pw@127.0.0.1:1/?connect_timeout=1"
    with pytest.raises(dlock.DlockError) as ei:
        dlock.Store(bad)
    assert isinstance(ei.value, (dlock.Unavailable, dlock.NotSupported))
    assert "s3cr3t" not in str(ei.value)
    assert "s3cr3t" not in repr(ei.value)
    assert dlock.redact(bad) == bad.replace("s3cr3t-pw", "***")
    with dlock.Store(url) as s:
        if "@" in url and ":" in url.split("@")[0].split("//")[-1]:
            password = url.split("@")[0].split(":")[-1]
            assert password not in repr(s) and password not in s.url
            assert "***" in s.url
            with s.lock("pw-check") as lk:
                assert password not in repr(lk)
            # A wrong password: refused, and not repeated back.
            wrong = url.replace(":" + password + "@", ":Wr0ng-pw-42@")
            with pytest.raises(dlock.DlockError) as ei:
                dlock.Store(wrong).status("x")
            assert "Wr0ng-pw-42" not in str(ei.value)
            assert "***" in str(ei.value)


def test_store_close(url, name):
    s = dlock.Store(url)
    lk = s.acquire(name)
    s.close()
    assert s.closed and "closed" in repr(s)
    s.close()                             # idempotent
    with pytest.raises(dlock.InvalidArgument):
        s.status(name)
    # The store released it; the handle says LOST from then on.
    with pytest.raises(dlock.Lost):
        lk.release()
    with dlock.Store(url) as s2:
        assert not s2.status(name).held


# --- lost -----------------------------------------------------------------

def force_release(url, name, cli, helper):
    if cli:
        r = subprocess.run([cli, "-s", url, "release", "--force", name],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    else:
        c = Child(helper, "force", url, name)
        assert c.expect("removed")[1] == "1"
        c.finish()


def test_lost_after_force_release(store, url, name, cli, helper):
    lost = threading.Event()
    calls = []

    def on_lost(lock):
        calls.append(lock)
        lost.set()
        raise RuntimeError("an on_lost that raises must not hurt")

    lk = store.acquire(name, ttl=1.5, on_lost=on_lost)
    assert not lk.lost
    force_release(url, name, cli, helper)
    # Found lost at the next renewal (every ttl/3).
    assert lost.wait(15), "on_lost was not called"
    assert calls == [lk]
    assert lk.lost
    assert lk.held                        # not released yet: ours to free
    with pytest.raises(dlock.Lost) as ei:
        lk.extend()
    assert ei.value.code == dlock.LOST
    with pytest.raises(dlock.Lost):
        lk.assert_ttl(0.1)
    # Someone else can take it now; our release must not delete theirs.
    other = store.acquire(name, wait=10)
    assert other.fence > lk.fence
    with pytest.raises(dlock.Lost):
        lk.release()
    assert not lk.held
    info = store.status(name)
    assert info.held and info.fence == other.fence
    other.release()
    assert len(calls) == 1


def test_lost_in_context_manager_raises(store, url, name, cli, helper):
    lost = threading.Event()
    with pytest.raises(dlock.Lost):
        with store.lock(name, ttl=1.5, on_lost=lambda l: lost.set()) as lk:
            force_release(url, name, cli, helper)
            assert lost.wait(15)
    assert not lk.held


def test_release_from_on_lost(store, url, name, cli, helper):
    done = threading.Event()
    seen = []

    def on_lost(lock):
        try:
            lock.release()
        except dlock.Lost as e:
            seen.append(e)
        finally:
            done.set()

    lk = store.acquire(name, ttl=1.5, on_lost=on_lost)
    force_release(url, name, cli, helper)
    assert done.wait(15)
    assert len(seen) == 1 and not lk.held and lk.lost


# --- processes ------------------------------------------------------------

def test_two_processes_exclude_each_other(store, url, name, helper):
    a = Child(helper, "hold", url, name)
    a.expect("waiting")
    fence_a = int(a.expect("acquired")[1])
    assert store.try_lock(name) is None
    info = store.status(name)
    assert info.held and info.pid == a.p.pid and info.fence == fence_a

    with pytest.raises(dlock.Timeout):
        store.acquire(name, wait=0.2)
    b = Child(helper, "wait", url, name)
    b.expect("waiting")
    a.tell()                      # a releases; b, waiting, gets it
    a.expect("released")
    a.finish()
    fence_b = int(b.expect("acquired")[1])
    assert fence_b > fence_a
    assert store.status(name).pid == b.p.pid
    assert store.try_lock(name) is None
    b.tell()
    b.expect("released")
    b.finish()
    with store.lock(name, wait=0) as lk:
        assert lk.fence > fence_b


def test_exit_releases(store, url, name, helper):
    c = Child(helper, "exit", url, name)
    fence = int(c.expect("acquired")[1])
    assert store.status(name).held
    c.tell()
    c.finish()                    # exited normally, without release()
    with store.lock(name, wait=5) as lk:
        assert lk.fence > fence


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_child_does_not_release(url, name, helper):
    c = Child(helper, "fork", url, name)
    out = c.finish()
    lines = out.splitlines()
    assert "child 0" in lines, out + c.err
    held = [l for l in lines if l.startswith("held")][0].split()
    assert held[1] == "1", out    # the child's exit left it held
    assert held[3] == held[5], out
    assert "released" in lines


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_child_pid1_knows_itself(url, name, helper):
    # A pid is not an identity: a pid 1 forking into a new pid namespace
    # has a child that is pid 1 too.  That child's close() of the
    # inherited store must not wait for its parent's calls in flight.
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("needs root and unshare(1) for a pid namespace")
        pytest.skip("needs root and unshare(1) for a pid namespace")
    p = subprocess.run(
        ["unshare", "--pid", "--fork", PY, helper, "fork-pid1", url, name],
        stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120)
    assert p.returncode == 0, (p.stdout, p.stderr)
    lines = p.stdout.splitlines()
    assert "child 0" in lines, (p.stdout, p.stderr)
    assert "released" in lines, (p.stdout, p.stderr)


def test_on_lost_from_extend_may_release(store, url, name, cli, helper):
    # Without renewal nobody notices the break until extend() asks the
    # store: on_lost then runs on this thread, inside extend(); its
    # release() takes effect once extend() has returned.
    where = []

    def on_lost(lock):
        where.append(threading.get_ident())
        lock.release()

    lk = store.acquire(name, ttl=30, renew=False, on_lost=on_lost)
    force_release(url, name, cli, helper)
    with pytest.raises(dlock.Lost):
        lk.extend()
    assert where == [threading.get_ident()]
    assert lk.lost and not lk.held
    with pytest.raises(dlock.NotHeld):
        lk.release()


# --- threads, collection, interpreter exit ----------------------------------

def test_threads_exclude_each_other(store, name):
    inside, overlaps, fences = [], [], []
    guard = threading.Lock()

    def worker():
        for _ in range(8):
            with store.lock(name, wait=60) as lk:
                with guard:
                    if inside:
                        overlaps.append(lk.fence)
                    inside.append(lk.fence)
                    fences.append(lk.fence)
                time.sleep(0)
                with guard:
                    inside.remove(lk.fence)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert overlaps == []
    assert len(fences) == 32 and fences == sorted(fences)
    assert len(set(fences)) == 32


def test_collected_lock_is_released(store, name):
    import gc
    lk = store.acquire(name, on_lost=lambda l: None)
    assert dlock._lost_targets
    del lk
    gc.collect()
    assert not store.status(name).held
    assert not dlock._lost_targets


def test_interpreter_exit_with_locks_held(url, name, helper):
    c = Child(helper, "shutdown", url, name)
    c.expect("acquired")
    c.tell()
    c.finish()
    assert "Traceback" not in c.err and "Fatal" not in c.err, c.err
    with dlock.Store(url) as s:
        assert s.list(name) == []


def test_readme_example_runs(tmp_path):
    readme = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 5
    db = str(tmp_path / "example.db")
    code = code.replace("/tmp/dlock-example.db", db)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("holding job, fence 1")


def test_interpreter_exit_under_load(url, name, helper):
    for i in range(4):
        c = Child(helper, "exit-race", url, "%s-%d" % (name, i))
        c.expect("running")
        c.finish()                # exit status 0: no crash, no hang
        assert "Fatal" not in c.err and "Traceback" not in c.err, c.err


def test_close_store_under_threads(url, name):
    s = dlock.Store(url)
    started = threading.Event()
    seen = []

    def churn():
        i = 0
        while True:
            i += 1
            try:
                with s.lock("%s-%d" % (name, i % 3), wait=5):
                    started.set()
            except dlock.InvalidArgument as e:   # the store is closed
                seen.append(e)
                return
            except dlock.Lost:                   # closed while we held it
                pass

    threads = [threading.Thread(target=churn) for _ in range(3)]
    for t in threads:
        t.start()
    assert started.wait(30)
    s.close()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert len(seen) == 3 and all("closed" in str(e) for e in seen)


def test_library_found_by_soname_and_env(tmp_path):
    lib = os.environ["DLOCK_LIBRARY"]
    libdir = os.path.dirname(os.path.realpath(lib))
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = "import dlock; print(dlock.library_path(), dlock.version())"
    env = {k: v for k, v in os.environ.items() if k != "DLOCK_LIBRARY"}
    env["PYTHONPATH"] = pkg
    if os.path.exists(os.path.join(libdir, dlock.SONAME)):
        env["LD_LIBRARY_PATH"] = libdir
        r = subprocess.run([PY, "-c", code], capture_output=True, text=True,
                           env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [dlock.SONAME, dlock.version()]
    env["DLOCK_LIBRARY"] = str(tmp_path / "no-such-libdlock.so")
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode != 0
    assert "ImportError: dlock: cannot load DLOCK_LIBRARY=" in r.stderr


def test_default_store(name):
    assert dlock.default_url().startswith("sqlite:///")
    with dlock.Store() as s:
        assert s.url == dlock.default_url()
        with s.lock(name, wait=0) as lk:
            assert s.status(name).fence == lk.fence
    assert "sqlite" in dlock.schemes()
    assert dlock.ddl("sqlite:///tmp/x.db").strip()
