"""Election: Candidate (a Lock acquired by dlock_elect(): its fence is
the term, proclaim() changes its value), and the observer behind
Store.observe() and Store.observe_iter() (dlock_observe(), cancellable
like a wait)."""

import queue
import threading

from . import _lock
from ._args import _cstr, _value_bytes
from ._cancel import Cancel, _interruptibly, _on_main_thread
from ._constants import DEFAULT_TTL, ECANCELED, OK
from ._errors import Cancelled, _error
from ._ffi import _OBSERVE_CB, _observe, _proclaim
from ._info import Leader


class Candidate(_lock.Lock):
    """A candidate for the leadership of ``name`` (:meth:`Store.elect`,
    :meth:`Store.candidate`): a :class:`Lock` that ``acquire()`` (or
    ``with``) takes by campaigning (dlock_elect()), publishing ``value``
    once it leads.  While held it IS the leader: ``fence`` is the term,
    strictly greater than every earlier leader's; ``release()`` resigns;
    it is renewed and lost as any lock (``lost``, ``on_lost``,
    :class:`Lost`).  Candidates of one name exclude each other and
    ``store.lock(name)`` too.  Never shared, never a semaphore."""

    def __init__(self, store, name, value=None, wait=None, ttl=DEFAULT_TTL,
                 renew=True, on_lost=None, cancel=None):
        _cstr(name)               # dlock_elect() takes a C string
        self._value = _value_bytes(value)
        super().__init__(store, name, wait=wait, ttl=ttl, renew=renew,
                         on_lost=on_lost, cancel=cancel)
        self._campaign = (self._value,)

    @property
    def value(self):
        """The value this candidate publishes as leader (str, or None for
        none): the one given, then the last :meth:`proclaim`'s."""
        v = self._value
        return None if v is None else v.decode("utf-8", "surrogateescape")

    def proclaim(self, value):
        """Publish ``value`` (str or bytes, up to :data:`VALUE_MAX` bytes
        of UTF-8, no NUL; None or "" for none) as the leader's, only while
        this candidate still leads: the store guards the write with its
        term, so a deposed leader never overwrites its successor's value.
        Raises :class:`Lost` (no longer leads: nothing written),
        :class:`NotHeld` (not leading), :class:`InvalidArgument` (a bad
        value)."""
        b = _value_bytes(value)
        self._call(_proclaim, b, "proclaim")
        self._value = b
        self._campaign = (b,)     # a later campaign publishes it too

    def __enter__(self):
        # Store.elect() hands it out leading already.
        if not self.held:
            self.acquire()
        return self

    def __repr__(self):
        state = "candidate"
        if self.held:
            state = "leading, term %d" % self.fence
        return "<dlock.Candidate %r %s in %r>" % (self.name, state,
                                                  self._store.url)


def _observe_call(store, name, callback, cancel):
    """dlock_observe() on this thread: callback(Leader or None) per
    change; a true value it returns stops and is returned."""
    b = _cstr(name)
    stop, errors = [], []

    def cb(info, _payload):
        try:
            r = callback(Leader._from(info.contents))
            if r:
                stop.append(r)
                return 1
            return 0
        except BaseException as e:  # never into C
            errors.append(e)
            return 1

    cfunc = _OBSERVE_CB(cb)
    with store._using() as h:
        rc = _observe(h, b, cfunc, None, cancel._h if cancel else None)
        err = None if rc == OK or rc > 0 else _error(rc, "observe")
    if errors:
        raise errors[0]
    if err is not None:
        raise err
    return stop[0] if stop else None


def observe(store, name, callback, cancel=None):
    if not callable(callback):
        raise TypeError("dlock: callback must be callable")
    if cancel is not None and not isinstance(cancel, Cancel):
        raise TypeError("dlock: cancel must be a dlock.Cancel")
    if not _on_main_thread():
        return _observe_call(store, name, callback, cancel)
    # On the main thread: on a helper thread, so that Ctrl-C (any signal
    # handler's exception) fires the cancel and propagates.
    own = cancel if cancel is not None else Cancel()
    return _interruptibly(lambda: _observe_call(store, name, callback, own),
                          own._h)


def observe_iter(store, name, cancel=None):
    """The generator behind Store.observe_iter(): dlock_observe() runs on
    a thread of its own with a cancel of its own, fired when the
    generator ends (closed, collected, or the caller's cancel fired)."""
    if cancel is not None and not isinstance(cancel, Cancel):
        raise TypeError("dlock: cancel must be a dlock.Cancel")
    _cstr(name)
    own = Cancel()
    q = queue.Queue()
    done = object()

    def relay():
        try:
            _observe_call(store, name, lambda ld: q.put((True, ld)), own)
        except BaseException as e:  # to the consumer
            q.put((False, e))
        q.put((False, done))

    t = threading.Thread(target=relay, name="dlock-observe", daemon=True)
    with store._ss.cond:
        store._ss.iters.add(own)
    t.start()
    try:
        while True:
            if cancel is not None and cancel.fired:
                raise Cancelled("observe: cancelled", ECANCELED)
            try:
                ok, item = q.get(timeout=_CANCEL_POLL)
            except queue.Empty:
                continue
            if ok:
                yield item
            elif item is done:
                return
            else:
                raise item
    finally:
        own.fire()
        t.join()
        with store._ss.cond:
            store._ss.iters.discard(own)


# How often observe_iter()'s consumer looks at the caller's cancel.
_CANCEL_POLL = 0.05
