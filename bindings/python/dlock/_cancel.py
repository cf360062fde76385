"""Cancelling a wait: Cancel (dlock_cancel), and _acquire_call(), the
acquire that a signal handler's exception (Ctrl-C) stops on the main
thread."""

import ctypes
import threading
import weakref

from ._constants import BUSY, OK
from ._errors import _error
from ._ffi import (_acquire_len, _cancel_fire, _cancel_fired, _cancel_free,
                   _cancel_new, _cancel_reset, _release, _vp)

class Cancel:
    """A way to stop waiting acquires from another thread
    (``dlock_cancel``): pass it as ``cancel=`` to :meth:`Lock.acquire` or
    :meth:`Store.lock`; :meth:`fire` makes every acquire waiting with it
    (now or later, until :meth:`reset`) raise :class:`Cancelled`, holding
    nothing."""

    def __init__(self):
        h = _vp()
        rc = _cancel_new(ctypes.byref(h))
        if rc != OK:
            raise _error(rc, "cancel")
        self._h = h.value
        self._finalizer = weakref.finalize(self, _cancel_free, self._h)

    def fire(self):
        """Stop the waits (idempotent; thread-safe)."""
        _cancel_fire(self._h)

    @property
    def fired(self):
        return bool(_cancel_fired(self._h))

    def reset(self):
        """Make it usable again (not while an acquire with it runs)."""
        _cancel_reset(self._h)


def _acquire_call(sh, name, o, timeout_exc):
    """dlock_acquire_len: (rc, handle, exception or None).  On the main
    thread, a wait runs on a helper thread while this one waits for it
    interruptibly: a signal handler's exception (Ctrl-C's
    KeyboardInterrupt) fires the wait's cancel, waits for the call to end
    (within ~100 ms), lets go of a grant that raced it, and propagates."""
    def call():
        h = _vp()
        rc = _acquire_len(ctypes.byref(h), sh, name, len(name),
                          ctypes.byref(o))
        # dlock_errmsg() is per thread: read it here.
        err = None if rc == OK else _error(
            rc, None, timeout_exc if rc == BUSY and o.wait_ms != 0 else None)
        return rc, h, err

    if o.wait_ms == 0 or threading.current_thread() is not \
            threading.main_thread():
        return call()
    own = None
    if not o.cancel:
        own = Cancel()
        o.cancel = own._h
    out = []
    done = threading.Event()

    def run():
        try:
            out.append(call())
        finally:
            done.set()

    t = threading.Thread(target=run, name="dlock-acquire", daemon=True)
    t.start()
    try:
        # Event.wait() returns to run signal handlers on the main thread.
        while not done.wait():
            pass
    except BaseException:
        _cancel_fire(o.cancel)
        # The call ends within moments; a second Ctrl-C does not abandon
        # it (that could leave a lock held with nobody to release it).
        while True:
            try:
                done.wait()
                break
            except BaseException:
                continue
        if out and out[0][0] == OK:
            _release(out[0][1])
        raise
    finally:
        t.join()
        if own is not None:
            o.cancel = None
    return out[0]
