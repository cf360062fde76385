"""Run records through the Python binding, against every store (see
conftest.py): Lock.run_begin/run_end, Store.history/last_runs/run_once."""
import os
import threading

import pytest

import dlock


def one_run(store, name, status=0, **rule):
    """Take the lock, begin a run by rule; end it with status if it goes.
    Returns (go, last, fence)."""
    with store.lock(name, wait=10) as lk:
        go, last = lk.run_begin(**rule)
        if go:
            lk.run_end(dlock.RUN_EXITED, status)
        return go, last, lk.fence


def test_begin_end_and_history(store, name):
    with store.lock(name, wait=0) as lk:
        go, last = lk.run_begin()
        assert go is True and last is None
        lk.run_end(dlock.RUN_EXITED, 0)
        fence = lk.fence
    runs = store.history(name)
    assert len(runs) == 1
    r = runs[0]
    assert isinstance(r, dlock.Run)
    assert r.name == name and r.fence == fence
    assert r.pid == os.getpid() and r.host
    assert r.result == dlock.RUN_EXITED and r.status == 0
    assert r.result_name == "exited" and r.succeeded
    assert r.start > 0 and r.end is not None and r.end >= r.start


def test_running_then_next_run_marks_it_abandoned(store, name):
    lk = store.acquire(name, wait=0)
    go, _ = lk.run_begin()
    assert go
    running = store.history(name)[0]
    assert running.result == dlock.RUN_RUNNING and running.end is None
    assert not running.succeeded
    # The holder goes away without ending its run.
    lk.release()
    go, last, _ = one_run(store, name)
    assert go and last is not None and last.fence == running.fence
    runs = store.history(name)
    assert [r.result for r in runs] == [dlock.RUN_EXITED,
                                        dlock.RUN_ABANDONED]
    assert runs[1].result_name == "abandoned"


def test_once_until_success(store, name):
    go, last, f1 = one_run(store, name, status=3, once=True)
    assert go and last is None
    go, last, f2 = one_run(store, name, status=0, once=True)
    assert go and last is not None
    assert last.fence == f1 and last.status == 3 and not last.succeeded
    for _ in range(2):
        go, last, _ = one_run(store, name, once=True)
        assert go is False
        assert last.fence == f2 and last.succeeded
    # Only the two runs were recorded; a run without the rule still goes.
    assert [r.fence for r in store.history(name)] == [f2, f1]
    go, _, _ = one_run(store, name)
    assert go


def test_once_per_period(store, name):
    go, last, f1 = one_run(store, name, once_per=3600)
    assert go and last is None
    go, last, _ = one_run(store, name, once_per=3600)
    assert go is False and last.fence == f1
    go, last, _ = one_run(store, name, once_per=3600.0, status=1)
    assert go is False
    # Another name has its own period.
    go, _, _ = one_run(store, name + "/other", once_per=3600)
    assert go
    assert len(store.history(name)) == 1


def test_history_is_bounded_newest_first(store, name):
    fences = [one_run(store, name)[2] for _ in range(dlock.RUNS_KEPT + 3)]
    runs = store.history(name)
    assert len(runs) == dlock.RUNS_KEPT
    assert [r.fence for r in runs] == fences[::-1][:dlock.RUNS_KEPT]
    assert [r.fence for r in store.history(name, max=3)] == fences[::-1][:3]
    assert store.history(name + "/none") == []


def test_last_runs(store, name):
    _, _, fa = one_run(store, name + "/a")
    one_run(store, name + "/b", status=2)
    _, _, fb = one_run(store, name + "/b")
    got = {r.name: r for r in store.last_runs(name + "/")}
    assert set(got) == {name + "/a", name + "/b"}
    assert got[name + "/a"].fence == fa
    assert got[name + "/b"].fence == fb and got[name + "/b"].succeeded
    assert all(r.name.startswith(name) for r in store.last_runs(name))
    assert name + "/a" in {r.name for r in store.last_runs()}


def test_lost_run_is_recorded(store, name):
    lk = store.acquire(name, wait=0)
    go, _ = lk.run_begin()
    assert go
    assert store.force_release(name) >= 1
    with pytest.raises(dlock.Lost):
        lk.assert_ttl(0)
    lk.run_end(dlock.RUN_LOST, -1)
    with pytest.raises(dlock.Lost):
        lk.release()
    r = store.history(name)[0]
    assert r.fence == lk.fence and r.result == dlock.RUN_LOST
    assert r.result_name == "lost" and r.status == -1 and r.end is not None


def test_run_begin_on_a_lost_lock_records_nothing(store, name):
    lk = store.acquire(name, wait=0)
    store.force_release(name)
    with pytest.raises(dlock.Lost):
        lk.run_begin()
    assert lk.lost
    with pytest.raises(dlock.Lost):
        lk.release()
    assert store.history(name) == []


def test_signaled_and_named_results(store, name):
    with store.lock(name, wait=0) as lk:
        assert lk.run_begin()[0]
        lk.run_end("signaled", 9)
    r = store.history(name)[0]
    assert r.result == dlock.RUN_SIGNALED and r.status == 9


def test_run_once(store, name):
    calls = []
    out = store.run_once(name, lambda: calls.append(1) or "done", once=True)
    assert out.ran and out.value == "done" and out.last is None
    out2 = store.run_once(name, lambda: calls.append(2), once=True)
    assert not out2.ran and out2.value is None
    assert out2.last.succeeded and out2.last.pid == os.getpid()
    assert calls == [1]


def test_run_once_failure_is_recorded_and_retried(store, name):
    def boom():
        raise RuntimeError("migration failed")

    with pytest.raises(RuntimeError):
        store.run_once(name, boom, once=True)
    r = store.history(name)[0]
    assert r.result == dlock.RUN_EXITED and r.status == 1
    assert not store.status(name).held
    out = store.run_once(name, lambda: 42, once=True)
    assert out.ran and out.value == 42 and out.last.status == 1
    assert not store.run_once(name, lambda: 43, once=True).ran


def test_run_once_per_threads(url, name):
    """Eight threads, each with its own store handle, race for one period:
    fn runs exactly once; the others wait for the lock and skip."""
    ran = []
    errors = []
    start = threading.Barrier(8)

    def worker():
        try:
            with dlock.Store(url) as s:
                start.wait()
                out = s.run_once(name, lambda: ran.append(1), once_per=3600,
                                 wait=60)
                if not out.ran:
                    assert out.last is not None and out.last.succeeded
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ran) == 1


def test_argument_errors(store, name):
    lk = store.lock(name, wait=0)
    with pytest.raises(dlock.NotHeld):
        lk.run_begin()
    with pytest.raises(dlock.NotHeld):
        lk.run_end(dlock.RUN_EXITED, 0)
    with lk:
        with pytest.raises(dlock.InvalidArgument):
            lk.run_begin(once_per=-1)
        with pytest.raises(dlock.InvalidArgument):
            lk.run_begin(once_per=float("inf"))
        with pytest.raises(dlock.InvalidArgument):
            lk.run_begin(once_per=366 * 86400)
        # No run begun on this lock yet.
        with pytest.raises(dlock.InvalidArgument):
            lk.run_end(dlock.RUN_EXITED, 0)
        assert lk.run_begin()[0]
        with pytest.raises(dlock.InvalidArgument):
            lk.run_end(dlock.RUN_RUNNING, 0)
        with pytest.raises(dlock.InvalidArgument):
            lk.run_end("finished", 0)
        with pytest.raises(TypeError):
            lk.run_end(dlock.RUN_EXITED, "0")
        lk.run_end(dlock.RUN_EXITED, 0)
    with pytest.raises(dlock.InvalidArgument):
        store.history("")
    with pytest.raises(dlock.InvalidArgument):
        store.history("a\0b")
    with pytest.raises(TypeError):
        store.history(name, max="3")
    with pytest.raises(dlock.InvalidArgument):
        store.last_runs("x" * (dlock.NAME_MAX + 1))
    with pytest.raises(TypeError):
        store.run_once(name, "not callable")


def test_callback_errors_do_not_reach_c(store, name, monkeypatch):
    one_run(store, name)

    def bad(_r):
        raise KeyError("from the callback")

    monkeypatch.setattr(dlock.Run, "_from", classmethod(lambda cls, r: bad(r)))
    with pytest.raises(KeyError):
        store.history(name)


def test_not_supported_is_a_clear_exception(store, name, monkeypatch):
    """A store without run records answers DLOCK_ENOTSUP: NotSupported
    (a DlockError with that code), never a crash or a silent empty list."""
    monkeypatch.setattr(dlock._store, "_history",
                        lambda *a: dlock.ENOTSUP)
    with pytest.raises(dlock.NotSupported) as e:
        store.history(name)
    assert e.value.code == dlock.ENOTSUP and "history" in str(e.value)
