"""Election through the binding (issue 45): Store.elect/candidate,
Candidate.proclaim, Store.leader, Store.observe and observe_iter, on every
store (conftest.py).  Two candidates are two Store objects, as two
processes would be: each has its own connection."""
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

import dlock

HERE = os.path.dirname(os.path.abspath(__file__))

# How long a change may take to be reported: a polled store reads every
# dlock.OBSERVE_POLL s, the others at least once a second.  Generous
# (not a performance bound): a loaded CI machine.
SEEN_WITHIN = 10.0


@pytest.fixture
def store2(url):
    with dlock.Store(url) as s:
        yield s


def elect_or_skip(store, kind, name, *args, **kw):
    """store.elect(): every store has election, so NotSupported fails."""
    return store.elect(name, *args, **kw)


def next_item(q, what):
    try:
        return q.get(timeout=SEEN_WITHIN)
    except queue.Empty:
        raise AssertionError("%s: nothing within %.0f s" % (what, SEEN_WITHIN))


def test_one_leader_between_two_candidates(store, store2, kind, name):
    a = elect_or_skip(store, kind, name, "a", wait=0)
    assert isinstance(a, dlock.Candidate) and a.held and a.fence > 0
    assert a.value == "a"
    # The second candidate does not lead while the first does.
    with pytest.raises(dlock.Busy):
        store2.elect(name, "b", wait=0)
    b = store2.candidate(name, "b", wait=0)
    assert b.acquire(raise_busy=False) is False and not b.held
    # Leadership is the lock: a plain lock of the name is refused too.
    assert store2.try_lock(name) is None
    ld = store2.leader(name)
    assert isinstance(ld, dlock.Leader)
    assert (ld.name, ld.value, ld.fence) == (name, "a", a.fence)
    if kind.startswith("etcd"):
        # The key holds the value alone, as etcdctl elect writes it.
        assert ld.pid == 0 and not ld.host and ld.since is None
    else:
        assert ld.pid == os.getpid() and ld.host
        assert ld.since is not None and abs(ld.since - time.time()) < 600
    # The store's own count of the lease left (Redis: the server's, to the
    # ms): a hair over the 30 s asked just after the grant (30.001 seen).
    assert ld.ttl is None or 0 < ld.ttl <= 31
    # Resigned: the other candidate leads, with a greater term.
    a.release()
    assert store2.leader(name) is None
    assert b.acquire(raise_busy=False) is True
    assert b.fence > a.fence
    assert store.leader(name).value == "b"
    assert store.leader(name).fence == b.fence
    b.release()


def test_waiting_candidate_takes_over(store, store2, kind, name):
    a = elect_or_skip(store, kind, name, "a", wait=0)
    t0 = time.monotonic()
    with pytest.raises(dlock.Timeout):
        store2.elect(name, "b", wait=0.3)
    assert time.monotonic() - t0 >= 0.25
    got = queue.Queue()

    def campaign():
        try:
            got.put(store2.elect(name, "b", wait=30))
        except BaseException as e:  # noqa: BLE001 - to the test
            got.put(e)

    t = threading.Thread(target=campaign, daemon=True)
    t.start()
    try:
        # It waits: nothing yet, and a still leads.
        assert got.empty() and store.leader(name).value == "a"
        a.release()
        b = next_item(got, "the waiting candidate")
    finally:
        t.join(60)
    assert isinstance(b, dlock.Candidate), b
    assert b.fence > a.fence
    assert store.leader(name).fence == b.fence
    b.release()


def test_terms_rise(store, kind, name):
    terms = []
    for i in range(4):
        c = elect_or_skip(store, kind, name, "v%d" % i, wait=0)
        terms.append(c.fence)
        assert store.leader(name).fence == c.fence
        c.release()
    assert terms == sorted(set(terms)), terms
    # A plain lock of the name takes a fence from the same sequence.
    with store.lock(name, wait=0) as lk:
        assert lk.fence > terms[-1]


def test_proclaim(store, store2, kind, name):
    a = elect_or_skip(store, kind, name, "first", wait=0)
    a.proclaim("second")
    assert a.value == "second"
    assert store2.leader(name).value == "second"
    a.proclaim(b"\xc3\xa9t\xc3\xa9")           # bytes, UTF-8
    assert store2.leader(name).value == "\u00e9t\u00e9"
    a.proclaim(None)                            # no value
    assert a.value is None and store2.leader(name).value is None
    assert store2.leader(name).fence == a.fence
    big = "x" * dlock.VALUE_MAX
    a.proclaim(big)
    assert store2.leader(name).value == big
    # Bad values are refused and change nothing.
    for bad in ("a\0b", "x" * (dlock.VALUE_MAX + 1), b"\xff\xfe"):
        with pytest.raises(dlock.InvalidArgument):
            a.proclaim(bad)
    assert store2.leader(name).value == big and a.value == big
    with pytest.raises(TypeError):
        a.proclaim(42)
    a.release()
    with pytest.raises(dlock.NotHeld):
        a.proclaim("after release")
    with pytest.raises(dlock.InvalidArgument):
        store.elect(name, "a\0b", wait=0)


def test_proclaim_after_loss_is_lost(store, store2, kind, name):
    a = elect_or_skip(store, kind, name, "a", wait=0)
    assert store2.force_release(name) == 1
    with pytest.raises(dlock.Lost) as e:
        a.proclaim("deposed")
    assert e.value.code == dlock.LOST
    assert store2.leader(name) is None
    b = store2.elect(name, "b", wait=0)
    assert b.fence > a.fence
    # The deposed leader never writes over its successor's value.
    with pytest.raises(dlock.Lost):
        a.proclaim("deposed again")
    ld = store.leader(name)
    assert (ld.value, ld.fence) == ("b", b.fence)
    with pytest.raises(dlock.Lost):
        a.release()
    b.release()


def test_context_manager_resigns(store, store2, kind, name):
    with elect_or_skip(store, kind, name, "a", wait=0) as a:
        assert a.held and store2.leader(name).value == "a"
    assert not a.held and store2.leader(name) is None
    # A candidate not campaigning yet campaigns on entry.
    c = store.candidate(name, "c", wait=0)
    assert not c.held and store2.leader(name) is None
    with c:
        assert store2.leader(name).value == "c"
        first = c.fence
    # Reusable: a new campaign, a new term, the value last proclaimed.
    with c:
        assert c.fence > first
        c.proclaim("c2")
    with c:
        assert store2.leader(name).value == "c2"
    with pytest.raises(TypeError):    # a leader is alone
        store.candidate(name, wait=0, shared=True)


def observer_store(url):
    """A store for an observer on a thread, closed by the test only if the
    thread ended: close() waits for calls in flight, so a fixture's would
    hang a run where observe() never returns."""
    return dlock.Store(url)


def test_observe_sees_changes(store, url, kind, name):
    a = elect_or_skip(store, kind, name, "a", wait=0)
    store2 = observer_store(url)
    seen = queue.Queue()

    def cb(leader):
        seen.put((time.monotonic(), leader))
        return "stop" if leader is None else None

    out = queue.Queue()
    t = threading.Thread(
        target=lambda: out.put(store2.observe(name, cb)), daemon=True)
    t.start()
    try:
        _, first = next_item(seen, "the first call")
        assert (first.value, first.fence) == ("a", a.fence)
        t0 = time.monotonic()
        a.proclaim("a2")
        when, second = next_item(seen, "the proclaimed value")
        assert (second.value, second.fence) == ("a2", a.fence)
        latency = when - t0
        a.release()
        _, gone = next_item(seen, "no leader")
        assert gone is None
        # The callback's true value stopped it, and is what it returns.
        assert next_item(out, "observe's return") == "stop"
    finally:
        if a.held:
            a.release()
        t.join(30)
    assert not t.is_alive()
    store2.close()
    assert seen.empty()
    print("%s: a proclaim seen by observe after %.3f s" % (kind, latency))


def test_observe_cancel_is_prompt(store, url, kind, name):
    a = elect_or_skip(store, kind, name, "a", wait=0)
    store2 = observer_store(url)
    c = dlock.Cancel()
    seen, out = queue.Queue(), queue.Queue()

    def run():
        try:
            out.put(store2.observe(name, seen.put, cancel=c))
        except BaseException as e:  # noqa: BLE001 - to the test
            out.put(e)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        assert next_item(seen, "the first call").value == "a"
        t0 = time.monotonic()
        c.fire()
        r = next_item(out, "observe after the cancel")
        took = time.monotonic() - t0
    finally:
        c.fire()
        t.join(30)
    assert not t.is_alive()
    assert isinstance(r, dlock.Cancelled) and r.code == dlock.ECANCELED, r
    # As a wait's cancel: well under the 1 s a watch waits (not a
    # performance bound).
    assert took < 1.0, took
    # A fired cancel stops the next observe before it reads anything.
    with pytest.raises(dlock.Cancelled):
        store2.observe(name, seen.put, cancel=c)
    assert seen.empty()
    store2.close()
    a.release()


def test_observe_callback_exception_propagates(store, kind, name):
    a = elect_or_skip(store, kind, name, "a", wait=0)

    def cb(leader):
        raise KeyError(leader.value)

    with pytest.raises(KeyError) as e:
        store.observe(name, cb)
    assert e.value.args == ("a",)
    with pytest.raises(TypeError):
        store.observe(name, "not callable")
    a.release()


def test_adv45b_close_inside_observe_callback(url, kind, name):
    """close() from an observe() callback raised nothing and waited for
    the observe() it was called from: a hang.  It raises InvalidArgument
    (through observe()), and the store closes afterwards."""
    s = dlock.Store(url)
    a = elect_or_skip(s, kind, name, "a", wait=0)
    out = queue.Queue()

    def cb(leader):
        s.close()
        return True

    def observe():
        try:
            out.put(("returned", s.observe(name, cb)))
        except BaseException as e:  # to the test's thread
            out.put(("raised", e))

    t = threading.Thread(target=observe, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "close() inside observe()'s callback hung"
    how, what = out.get_nowait()
    assert how == "raised" and isinstance(what, dlock.InvalidArgument), what
    assert "inside a call on this store" in str(what)
    a.release()
    s.close()
    assert s.closed


def test_adv45b_close_with_observe_iter_running(url, kind, name):
    """close() with an observe_iter() generator not drained waited
    forever for its observer's thread; it stops the generator (Cancelled)
    and closes."""
    s = dlock.Store(url)
    a = elect_or_skip(s, kind, name, "a", wait=0)
    it = s.observe_iter(name)
    first = next(it)
    assert first is not None and first.value == "a"
    a.release()
    t = threading.Thread(target=s.close, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "close() hung behind observe_iter()"
    assert s.closed
    with pytest.raises(dlock.Cancelled):
        while True:
            next(it)
    it.close()


def test_observe_iter(store, store2, kind, name):
    a = elect_or_skip(store, kind, name, "a", wait=0)
    it = store2.observe_iter(name)
    assert next(it).value == "a"
    a.proclaim("a2")
    assert next(it).value == "a2"
    a.release()
    assert next(it) is None
    t0 = time.monotonic()
    it.close()                  # a for loop's break does the same
    assert time.monotonic() - t0 < 2.0
    # Another thread's cancel ends the loop with Cancelled.
    c = dlock.Cancel()
    seen = []
    with pytest.raises(dlock.Cancelled):
        for ld in store2.observe_iter(name, cancel=c):
            seen.append(ld)
            threading.Timer(0.1, c.fire).start()
    assert seen == [None]


CHILD = r"""
import sys
sys.path.insert(0, sys.argv[3])
import dlock
store = dlock.Store(sys.argv[1])
try:
    store.observe(sys.argv[2], lambda l: print("observing", flush=True))
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_observe_ctrl_c_on_main_thread(store, kind, url, name):
    a = elect_or_skip(store, kind, name, "a", wait=0)
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, name, os.path.dirname(HERE)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "observing"
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().strip()
        took = time.monotonic() - t0
        assert line == "interrupted"
        assert took < 1.0, took
        assert p.wait(10) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        a.release()
