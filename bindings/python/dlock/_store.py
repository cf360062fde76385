"""Store (dlock_store): open, close, init, status, list, force_release,
the locks it makes, election (elect, leader, observe), its run records
(and how many a name keeps), run_once() and suspension (suspend, resume,
suspended, suspensions)."""

import ctypes
import weakref

from . import _elect, _lock
from ._args import _cstr
from ._constants import (DEFAULT_TTL, EINVAL, LOST, OK, RUN_EXITED, RUN_LOST,
                         RUNS_KEPT, RUNS_KEPT_MAX)
from ._errors import DlockError, InvalidArgument, Lost, _error
from ._ffi import (_Info, _LIST_CB, _RUN_CB, _SUSPENSION_CB, _Suspension,
                   _force_release, _history, _info_free, _keep_runs,
                   _kept_runs, _last_runs, _leader, _list, _resume, _s,
                   _status, _store_init,
                   _store_open, _store_url, _suspend, _suspended,
                   _suspension_free, _suspensions, _vp)
from ._info import Leader, LockInfo, Run, RunOutcome, Suspension
from ._store_state import _StoreState, _Using, _close_handle

class Store:
    """An open store (dlock_store_open()).  ``url`` None (or "") is the
    default store, :func:`default_url`.  Thread-safe.  A context manager:
    leaving it closes the store.  Closing a store releases the locks still
    held through it; their :class:`Lock` objects then raise :class:`Lost`.
    """

    def __init__(self, url=None):
        h = _vp()
        u = None if url is None else _cstr(url, "url")
        rc = _store_open(ctypes.byref(h), u)
        if rc != OK:
            # The library's message names the URL redacted.
            raise _error(rc, "cannot open store")
        self._ss = _StoreState(h.value)
        self._url = _s(_store_url(h))
        self._finalizer = weakref.finalize(self, _close_handle, self._ss)

    @property
    def url(self):
        """The store's URL with any password replaced by ``***``."""
        return self._url

    @property
    def closed(self):
        return self._ss.h is None

    def _using(self):
        return _Using(self._ss)

    def close(self):
        """Close the store (idempotent).  Waits for calls other threads
        have in flight on it or on its locks; calls begun after it raise
        :class:`InvalidArgument`.  Inside a call on this store (an
        :meth:`observe` callback) it raises :class:`InvalidArgument`: it
        would wait for that call, which waits for it."""
        if self._ss.in_call_here():
            raise InvalidArgument(
                "close() inside a call on this store (an observe() "
                "callback) would wait for itself: end the call first "
                "(return True from the callback), then close", EINVAL)
        self._finalizer()

    def __enter__(self):
        if self.closed:
            raise InvalidArgument("the store is closed", EINVAL)
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return "<dlock.Store %r%s>" % (self._url,
                                       " closed" if self.closed else "")

    def init(self):
        """Create the store's tables if missing (dlock_store_init())."""
        with self._using() as h:
            rc = _store_init(h)
        if rc != OK:
            raise _error(rc, "init")

    def lock(self, name, wait=None, ttl=DEFAULT_TTL, shared=False,
             limit=None, renew=True, on_lost=None, cancel=None):
        """A :class:`Lock` on ``name``, not acquired yet: use it as a
        context manager (acquired on entry, released on exit) or call
        ``acquire()``/``release()``.

        wait: None, math.inf or WAIT_FOREVER wait forever (as PHP's
        null); 0 try once; else seconds (docs/library.md's table).
        ttl: the lease in seconds (0.1 up to 365 days), default 30.
        shared: a shared (read) lock.  limit: N > 1 makes it a semaphore of
        N holders.  renew: renew the lease every ttl/3 while held.
        on_lost: called once with the Lock when it is found lost.
        cancel: a :class:`Cancel` whose ``fire()`` stops its waits.
        """
        return _lock.Lock(self, name, wait=wait, ttl=ttl, shared=shared,
                          limit=limit, renew=renew, on_lost=on_lost,
                          cancel=cancel)

    def acquire(self, name, **kw):
        """``store.lock(name, **kw)`` acquired (raises :class:`Busy` /
        :class:`Timeout` if not acquired in time)."""
        lk = self.lock(name, **kw)
        lk.acquire()
        return lk

    def try_lock(self, name, wait=0, **kw):
        """An acquired :class:`Lock`, or None if someone else holds it
        (after waiting ``wait`` seconds, default 0: try once).  Other
        failures raise."""
        lk = self.lock(name, wait=wait, **kw)
        return lk if lk.acquire(raise_busy=False) else None

    def status(self, name):
        """A :class:`LockInfo` for ``name``, held or not."""
        out = ctypes.POINTER(_Info)()
        b = _cstr(name)
        with self._using() as h:
            rc = _status(ctypes.byref(out), h, b)
            if rc != OK:
                raise _error(rc, "status")
        try:
            return LockInfo._from(out.contents)
        finally:
            _info_free(out)

    def list(self, prefix=""):
        """A list of :class:`LockInfo`, one per held lock whose name starts
        with ``prefix``, in no particular order."""
        found, errors = [], []

        def cb(info, _payload):
            try:
                found.append(LockInfo._from(info.contents))
                return 0
            except BaseException as e:  # never into C
                errors.append(e)
                return 1

        cfunc = _LIST_CB(cb)
        b = _cstr(prefix or "", "prefix")
        with self._using() as h:
            rc = _list(h, b, cfunc, None)
            if errors:
                raise errors[0]
            if rc != OK:
                raise _error(rc, "list")
        return found

    def force_release(self, name):
        """Break ``name`` whoever holds it (administration); its holder
        finds it lost.  Returns how many holders were removed."""
        n = ctypes.c_uint()
        b = _cstr(name)
        with self._using() as h:
            rc = _force_release(ctypes.byref(n), h, b)
            if rc != OK:
                raise _error(rc, "force_release")
        return n.value

    # -- election
    def candidate(self, name, value=None, **kw):
        """A :class:`Candidate` for the leadership of ``name``, not
        campaigning yet: ``with`` it (campaign on entry, resign on exit)
        or call ``acquire()``/``release()``.  value: what it publishes
        once it leads (str or bytes, up to :data:`VALUE_MAX` bytes of
        UTF-8; None for none).  kw: as :meth:`lock` (wait, ttl, renew,
        on_lost, cancel; never shared, never a semaphore)."""
        return _elect.Candidate(self, name, value=value, **kw)

    def elect(self, name, value=None, **kw):
        """Campaign for ``name`` (dlock_elect()): wait (``wait``, as
        :meth:`lock`: forever by default) until this candidate leads, then
        publish ``value``.  Returns the leading :class:`Candidate` (a held
        lock: ``fence`` is the term, ``proclaim()`` changes the value,
        ``release()`` or the end of a ``with`` block resigns).  Raises
        :class:`Busy` / :class:`Timeout` if it did not lead in time,
        :class:`Cancelled`, :class:`NotSupported` on a store without
        election."""
        c = self.candidate(name, value, **kw)
        c.acquire()
        return c

    def leader(self, name):
        """Who leads ``name`` now, read from the store: a :class:`Leader`
        (value, fence: the term, host, pid, since, ttl), or None."""
        out = ctypes.POINTER(_Info)()
        b = _cstr(name)
        with self._using() as h:
            rc = _leader(ctypes.byref(out), h, b)
            if rc != OK:
                raise _error(rc, "leader")
        try:
            return Leader._from(out.contents)
        finally:
            _info_free(out)

    def observe(self, name, callback, cancel=None):
        """Call ``callback(leader)`` with ``name``'s leader (a
        :class:`Leader`, or None: nobody leads) at once, then each time
        it changes (another term, another value, no leader), until the
        callback returns a true value, which ``observe()`` returns.  Every
        call reports what was read from the store; on SQLite and
        MariaDB/MySQL the store is polled every :data:`OBSERVE_POLL`
        seconds, on the others a change is seen within a second.
        cancel: a :class:`Cancel` whose ``fire()`` (from another thread)
        stops it promptly with :class:`Cancelled`; on the main thread
        Ctrl-C stops it too.  An exception the callback raises stops it
        and propagates.  Raises :class:`Unavailable` when the store went
        away (call again to go on)."""
        return _elect.observe(self, name, callback, cancel)

    def observe_iter(self, name, cancel=None):
        """:meth:`observe` as an iterator: yields a :class:`Leader` (or
        None) per change, from an observer on a thread of its own.
        Breaking out of the loop (closing the generator) stops it; so
        does ``cancel.fire()``, which raises :class:`Cancelled`, and so
        does closing the store (which would otherwise wait for it)."""
        return _elect.observe_iter(self, name, cancel)

    def _runs(self, fn, what, *args):
        found, errors = [], []

        def cb(run, _payload):
            try:
                found.append(Run._from(run.contents))
                return 0
            except BaseException as e:  # never into C
                errors.append(e)
                return 1

        cfunc = _RUN_CB(cb)
        with self._using() as h:
            rc = fn(h, *args, cfunc, None)
            if errors:
                raise errors[0]
            if rc != OK:
                raise _error(rc, what)
        return found

    def history(self, name, max=0):
        """The kept runs of ``name`` (all of them: :data:`RUNS_KEPT`
        unless :meth:`keep_runs` said otherwise), newest first, as a list
        of :class:`Run`; ``max`` > 0 keeps the newest ``max``.  Raises
        :class:`NotSupported` on a store without run records."""
        if isinstance(max, bool) or not isinstance(max, int):
            raise TypeError("dlock: max must be an int, not %r" % (max,))
        if not 0 <= max < 2 ** 32:
            raise InvalidArgument("max %d is out of range" % max, EINVAL)
        return self._runs(_history, "history", _cstr(name), max)

    def keep_runs(self, name, n=0):
        """Keep ``n`` runs of ``name`` (dlock_keep_runs()): 1 to
        :data:`RUNS_KEPT_MAX`, or 0 for the default, :data:`RUNS_KEPT`.
        The setting is recorded with the name's run records, so every
        host's runs of it keep to it; the runs over it are dropped now,
        oldest first (setting it higher again brings none back).  Raises
        :class:`InvalidArgument` (a bad name, or ``n`` out of range),
        :class:`NotSupported` (a store that cannot keep a setting yet)."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError("dlock: n must be an int, not %r" % (n,))
        b = _cstr(name)
        if not 0 <= n < 2 ** 32:
            # c_uint would wrap it; in range of it the library says so.
            raise InvalidArgument(
                "keep_runs: a name keeps 1..%d runs (0: the default, %d), "
                "not %d" % (RUNS_KEPT_MAX, RUNS_KEPT, n), EINVAL)
        with self._using() as h:
            rc = _keep_runs(h, b, n)
            if rc != OK:
                raise _error(rc, "keep_runs")

    def kept_runs(self, name):
        """How many runs ``name`` keeps (dlock_kept_runs()): its
        :meth:`keep_runs` setting, :data:`RUNS_KEPT` if none was
        recorded.  Raises as :meth:`keep_runs`."""
        out = ctypes.c_uint()
        b = _cstr(name)
        with self._using() as h:
            rc = _kept_runs(ctypes.byref(out), h, b)
            if rc != OK:
                raise _error(rc, "kept_runs")
        return out.value

    def last_runs(self, prefix=""):
        """The last :class:`Run` of every name starting with ``prefix``
        that has run records, in no particular order."""
        return self._runs(_last_runs, "last_runs",
                          _cstr(prefix or "", "prefix"))

    # -- suspension
    def suspend(self, name, reason=None, by=None):
        """Suspend ``name`` everywhere (dlock_suspend()): from now on
        :meth:`Lock.run_begin` of it skips (go False, ``last`` a
        :data:`RUN_SUSPENDED` :class:`Run`) and :meth:`run_once` does not
        call fn, on every host, until :meth:`resume`.  A run already going
        on goes on.  reason: why, up to :data:`REASON_MAX` bytes of UTF-8
        without control characters (None: none); by: who, up to 255 bytes
        likewise (None: USER@HOST).  Returns True if ``name`` was
        suspended already (its record is left as it was), else False.
        Raises :class:`InvalidArgument` (a bad name, reason or by),
        :class:`NotSupported` (a store without suspension)."""
        b = _cstr(name)
        r = None if reason is None else _cstr(reason, "reason")
        w = None if by is None else _cstr(by, "by")
        was = ctypes.c_int()
        with self._using() as h:
            rc = _suspend(ctypes.byref(was), h, b, w, r)
            if rc != OK:
                raise _error(rc, "suspend")
        return bool(was.value)

    def _suspension(self, fn, what, name):
        out = ctypes.POINTER(_Suspension)()
        b = _cstr(name)
        with self._using() as h:
            rc = fn(ctypes.byref(out), h, b)
            if rc != OK:
                raise _error(rc, what)
        if not out:
            return None
        try:
            return Suspension._from(out.contents)
        finally:
            _suspension_free(out)

    def resume(self, name):
        """Lift ``name``'s suspension (dlock_resume()): the
        :class:`Suspension` lifted, or None if it was not suspended."""
        return self._suspension(_resume, "resume", name)

    def suspended(self, name):
        """``name``'s :class:`Suspension` (dlock_suspended()), or None if
        it is not suspended."""
        return self._suspension(_suspended, "suspended", name)

    def suspensions(self, prefix=""):
        """A :class:`Suspension` for every suspended name starting with
        ``prefix``, in no particular order."""
        found, errors = [], []

        def cb(s, _payload):
            try:
                found.append(Suspension._from(s.contents))
                return 0
            except BaseException as e:  # never into C
                errors.append(e)
                return 1

        cfunc = _SUSPENSION_CB(cb)
        b = _cstr(prefix or "", "prefix")
        with self._using() as h:
            rc = _suspensions(h, b, cfunc, None)
            if errors:
                raise errors[0]
            if rc != OK:
                raise _error(rc, "suspensions")
        return found

    def run_once(self, name, fn, once=False, once_per=None, **lock_kw):
        """Run ``fn()`` under the lock ``name`` unless a run already did
        the job, and record the run (what ``dlock run --once`` /
        ``--once-per`` do).  Returns a :class:`RunOutcome`.

        once: not again once a run of ``name`` succeeded (anywhere, ever).
        once_per: seconds, the schedule's interval (3600 for an hourly
        job): not again within once_per / 2 of the last run's start, on the
        store's clock.  Neither: every call runs fn (and is recorded).
        lock_kw: as :meth:`lock` (``wait`` defaults to forever: a second
        host waits for the first, then skips).

        fn returning is a success (exit status 0); fn raising records
        status 1 and the exception propagates.  If the lock was lost while
        fn ran, the run is recorded LOST and :class:`Lost` is raised.
        """
        if not callable(fn):
            raise TypeError("dlock: fn must be callable")
        with self.lock(name, **lock_kw) as lk:
            go, last = lk.run_begin(once=once, once_per=once_per)
            if not go:
                return RunOutcome(False, None, last)
            try:
                value = fn()
            except BaseException:
                try:
                    lk.run_end(RUN_LOST if lk.lost else RUN_EXITED,
                               -1 if lk.lost else 1)
                except DlockError:
                    pass
                raise
            if lk.lost:
                lk.run_end(RUN_LOST, 0)
                raise Lost("run_once: lock %r was lost while fn ran"
                           % lk.name, LOST)
            lk.run_end(RUN_EXITED, 0)
            return RunOutcome(True, value, last)
