"""Lock: acquire (waiting, cancellable), release, extend, assert_ttl,
the lost callback, and the run records of the holder (run_begin(),
run_end())."""

import contextlib
import ctypes
import threading
import weakref

from . import _process, _store
from ._args import _ms, _name_bytes, _wait_ms
from ._cancel import Cancel, _acquire_call
from ._constants import (BUSY, DEFAULT_TTL, EINVAL, LIMIT_MAX, LOST, OK,
                         RUN_EXITED, WAIT_FOREVER, _OPTIONS_VERSION)
from ._errors import (DlockError, InvalidArgument, NotHeld, Timeout,
                      _error)
from ._ffi import (_Options, _Run, _RunRule, _assert_ttl, _c_int, _extend,
                   _fence, _is_lost, _lease_left, _options_init, _release,
                   _run_begin, _run_end, _run_free, _vp)
from ._info import Run, _period_ms, _run_result
from ._process import _Owner, _lost_cfunc, _lost_keys, _lost_targets
from ._store_state import _Using

# --- lock -------------------------------------------------------------------

class _LockState:
    """What the finalizer of a Lock needs, without the Lock itself."""
    __slots__ = ("h", "mutex", "key", "owner", "ss", "__weakref__")

    def __init__(self, ss):
        self.ss = ss
        self.h = None
        self.mutex = threading.RLock()
        self.key = 0
        self.owner = _Owner()

    def guard(self):
        # In a fork child the mutex may have been copied held by a thread
        # that does not exist there; the handle is inert in the child
        # anyway (libdlock answers EINVAL and touches nothing).
        if self.owner.here():
            return self.mutex
        return contextlib.nullcontext()


def _release_state(st):
    """Finalizer: release a Lock still held when collected or at exit."""
    with st.guard():
        h, st.h = st.h, None
    if h:
        with _Using(st.ss, allow_closed=True):
            _release(h)
    _forget_key(st)


def _forget_key(st):
    if st.key:
        with _process._lost_guard:
            _lost_targets.pop(st.key, None)
        st.key = 0


class Lock:
    """A lock on one name in one store.  Not held until ``acquire()`` (or
    ``with``).  Reusable: after ``release()`` it may be acquired again
    (with a new fence).  Made by :meth:`Store.lock`."""

    _campaign = None    # (value,): a Candidate's, acquired by dlock_elect

    def __init__(self, store, name, wait=None, ttl=DEFAULT_TTL,
                 shared=False, limit=None, renew=True, on_lost=None,
                 cancel=None):
        if not isinstance(store, _store.Store):
            raise TypeError("dlock: store must be a dlock.Store")
        if cancel is not None and not isinstance(cancel, Cancel):
            raise TypeError("dlock: cancel must be a dlock.Cancel")
        self._cancel = cancel
        if on_lost is not None and not callable(on_lost):
            raise TypeError("dlock: on_lost must be callable")
        self._store = store       # keeps the store open while we live
        self._name = _name_bytes(name)
        self._wait = _wait_ms(wait)
        self._ttl = _ms(ttl, "ttl") if ttl is not None else None
        if ttl is not None and self._ttl is None:
            raise InvalidArgument("ttl must be finite", EINVAL)
        self._shared = bool(shared)
        if limit is None:
            limit = 1
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError("dlock: limit must be an int, not %r" % (limit,))
        if not 0 <= limit < 2 ** 32:
            raise InvalidArgument("limit %d is out of range (1..%d)"
                                  % (limit, LIMIT_MAX), EINVAL)
        self._limit = limit
        self._renew = bool(renew)
        self.on_lost = on_lost
        self._st = _LockState(store._ss)
        self._fence = 0
        self._was_lost = False
        self._lost_fired = False
        self._in_call = None      # thread ident inside a C call on h
        self._deferred_release = False
        self._acquiring = False
        self._finalizer = weakref.finalize(self, _release_state, self._st)

    # -- properties
    @property
    def name(self):
        try:
            return self._name.decode("utf-8")
        except UnicodeDecodeError:
            return self._name.decode("utf-8", "surrogateescape")

    @property
    def store(self):
        return self._store

    @property
    def held(self):
        """True from a successful acquire until release (even if lost
        meanwhile: see :attr:`lost`)."""
        return self._st.h is not None

    @property
    def fence(self):
        """The fence of the current (or last) acquisition; 0 before the
        first."""
        return self._fence

    @property
    def lost(self):
        """True once libdlock knows the lock is lost (dlock_is_lost())."""
        with self._st.guard():
            h = self._st.h
            if h:
                self._was_lost = self._was_lost or bool(_is_lost(h))
        return self._was_lost

    @property
    def lease_left(self):
        """Seconds of lease left as this process counts it
        (dlock_lease_left()); 0.0 once lost or when not held."""
        with self._st.guard():
            h = self._st.h
            return _lease_left(h) / 1000.0 if h else 0.0

    def __repr__(self):
        state = "unlocked"
        if self.held:
            state = "held, fence %d" % self._fence
        return "<dlock.Lock %r %s in %r>" % (self.name, state,
                                             self._store.url)

    # -- acquire / release
    def acquire(self, wait=..., raise_busy=True, cancel=...):
        """Acquire the lock.  ``wait`` overrides the one given to
        :meth:`Store.lock`.  Returns True; if not acquired in time raises
        :class:`Busy` (wait 0) or :class:`Timeout` (wait > 0), or returns
        False when ``raise_busy`` is false.  ``cancel``: a :class:`Cancel`
        whose ``fire()`` stops the wait (:class:`Cancelled`); Ctrl-C stops
        a wait on the main thread in any case (KeyboardInterrupt)."""
        if cancel is ...:
            cancel = self._cancel
        if wait is ...:
            wait_ms = self._wait
        else:
            wait_ms = _wait_ms(wait)
        st = self._st
        if st.h is not None:
            raise InvalidArgument("lock %r is already held by this Lock"
                                  % self.name, EINVAL)
        o = _Options()
        rc = _options_init(ctypes.byref(o), _OPTIONS_VERSION)
        if rc != OK:
            raise _error(rc, "options")
        o.wait_ms = WAIT_FOREVER if wait_ms is None else wait_ms
        if self._ttl is not None:
            o.ttl_ms = self._ttl
        o.auto_renew = 1 if self._renew else 0
        o.shared = 1 if self._shared else 0
        o.limit = self._limit
        if cancel is not None:
            o.cancel = cancel._h
        key = 0
        if self.on_lost is not None and not _process._exiting:
            key = next(_lost_keys)
            with _process._lost_guard:
                _lost_targets[key] = weakref.ref(self)
            o.on_lost = _lost_cfunc
            o.payload = key
        h = _vp()
        # The wait happens outside the Lock's mutex (which a finalizer at
        # interpreter exit may need), flagged by _acquiring.
        with st.guard():
            if st.h is not None or self._acquiring:
                if key:
                    with _process._lost_guard:
                        _lost_targets.pop(key, None)
                raise InvalidArgument("lock %r is already held (or being "
                                      "acquired) by this Lock" % self.name,
                                      EINVAL)
            self._acquiring = True
            self._was_lost = False
            self._lost_fired = False
        try:
            with self._store._using() as sh:
                rc, h, err = _acquire_call(sh, self._name, o, Timeout,
                                           self._campaign)
            if rc == OK:
                with st.guard():
                    st.h = h.value
                    st.key = key
                    self._fence = _fence(h)
                    key = 0
                if not self._finalizer.alive:
                    # Taken while the interpreter exits, after the
                    # finalizers ran: nobody would release it.
                    try:
                        self.release()
                    except DlockError:
                        pass
                    raise InvalidArgument("the interpreter is exiting",
                                          EINVAL)
                return True
        finally:
            self._acquiring = False
            if key:
                with _process._lost_guard:
                    _lost_targets.pop(key, None)
        if rc == BUSY and not raise_busy:
            return False
        raise err

    def release(self):
        """Release the lock (and free its handle, whatever the result).
        Raises :class:`Lost` if it had been lost (someone else's lock is
        never deleted), :class:`Unavailable`/:class:`StoreError` if the
        store could not be told (its lease frees it then),
        :class:`NotHeld` if it is not held."""
        st = self._st
        with st.guard():
            if self._in_call == threading.get_ident():
                # on_lost called from our own extend()/assert_ttl() on this
                # thread: release once that call has returned.
                self._deferred_release = True
                return
            h, st.h = st.h, None
            if h:
                self._was_lost = self._was_lost or bool(_is_lost(h))
        if not h:
            raise NotHeld("lock %r is not held" % self.name)
        # Outside the mutex: dlock_release may wait for the lease thread,
        # which may be running on_lost, which may want the mutex.
        with _Using(st.ss, allow_closed=True):
            rc = _release(h)
            err = None if rc == OK else _error(rc)
        _forget_key(st)
        if rc == LOST:
            self._was_lost = True
        if err is not None:
            raise err

    def _call(self, fn, arg, what):
        st = self._st
        with st.guard():
            h = st.h
            if not h:
                raise NotHeld("lock %r is not held" % self.name)
            self._in_call = threading.get_ident()
            try:
                with _Using(st.ss, allow_closed=True):
                    rc = fn(h, arg)
                    err = None if rc == OK else _error(rc)
            finally:
                self._in_call = None
            if rc == LOST:
                self._was_lost = True
            deferred, self._deferred_release = self._deferred_release, False
        if deferred:
            try:
                self.release()
            except DlockError:
                pass
        if err is not None:
            raise err

    def extend(self, ttl=None):
        """Renew the lease to ``ttl`` seconds from now (None: the lock's
        own ttl); later renewals of this acquisition use the new length
        (a later acquire() asks the ttl given to Store.lock() again).
        Raises :class:`Lost` if the lock is lost."""
        ms = 0 if ttl is None else _ms(ttl, "ttl")
        if ms is None:
            raise InvalidArgument("ttl must be finite", EINVAL)
        if ttl is not None and ms <= 0:
            raise InvalidArgument("ttl must be > 0", EINVAL)
        self._call(_extend, ms, "extend")

    def assert_ttl(self, ttl):
        """Check with the store that the lock is still held with at least
        ``ttl`` seconds of lease left.  Raises :class:`Expiring` (held,
        less left) or :class:`Lost`."""
        ms = _ms(ttl, "ttl")
        if ms is None:
            raise InvalidArgument("ttl must be finite", EINVAL)
        self._call(_assert_ttl, ms, "assert_ttl")

    # -- runs
    def run_begin(self, once=False, once_per=None):
        """Decide, with the lock held, whether this holder runs its job
        now (dlock_run_begin()), and if so record the run's start in the
        same step.  Returns ``(go, last)``: go True (recorded; end it with
        :meth:`run_end`) or False (skip: a run already did the job, or
        the name is suspended, :meth:`Store.suspend`, whatever the rule);
        last the :class:`Run` that decided a skip (a :data:`RUN_SUSPENDED`
        one for a suspension: who, since when), or the run before this
        one (None if there is none).

        once: not again once a run of this name succeeded.  once_per:
        seconds, the schedule's interval: not again within once_per / 2 of
        the last run's start, on the store's clock.
        Raises :class:`Lost` (nothing recorded), :class:`NotSupported` (a
        store without run records), :class:`NotHeld`."""
        rule = _RunRule()
        rule.once = 1 if once else 0
        rule.period_ms = _period_ms(once_per)
        go = _c_int()
        last = ctypes.POINTER(_Run)()
        st = self._st
        with st.guard():
            h = st.h
            if not h:
                raise NotHeld("lock %r is not held" % self.name)
            with _Using(st.ss, allow_closed=True):
                rc = _run_begin(h, ctypes.byref(rule), ctypes.byref(go),
                                ctypes.byref(last))
                err = None if rc == OK else _error(rc, "run_begin")
            if rc == LOST:
                self._was_lost = True
        try:
            if err is not None:
                raise err
            return (bool(go.value),
                    Run._from(last.contents) if last else None)
        finally:
            if last:
                _run_free(last)

    def run_end(self, result=RUN_EXITED, status=0):
        """Record how the run :meth:`run_begin` started ended
        (dlock_run_end()): ``result`` RUN_EXITED (``status`` the exit
        status, 0 for success), RUN_SIGNALED (``status`` the signal),
        RUN_LOST (``status`` -1 or what it ended with) or RUN_TIMEDOUT
        (stopped by a time limit; ``status`` what it ended with); the
        names "exited", "signaled", "lost", "timedout" too.  Works on a lost lock: call it
        before :meth:`release`."""
        r = _run_result(result)
        if isinstance(status, bool) or not isinstance(status, int):
            raise TypeError("dlock: status must be an int, not %r"
                            % (status,))
        if not -2 ** 31 <= status < 2 ** 31:
            raise InvalidArgument("status %d is out of range" % status,
                                  EINVAL)
        st = self._st
        with st.guard():
            h = st.h
            if not h:
                raise NotHeld("lock %r is not held" % self.name)
            with _Using(st.ss, allow_closed=True):
                rc = _run_end(h, r, status)
                err = None if rc == OK else _error(rc, "run_end")
        if err is not None:
            raise err

    def _fire_lost(self):
        self._was_lost = True
        if self._lost_fired:
            return
        self._lost_fired = True
        cb = self.on_lost
        if cb is not None:
            cb(self)

    # -- context manager
    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.release()
        except DlockError as e:
            if exc is None:
                raise
            if isinstance(e, NotHeld):
                return False
            if hasattr(exc, "add_note"):
                exc.add_note("dlock: while releasing: %s" % e)
        return False
