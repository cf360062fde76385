"""Cancelling a wait: Cancel (dlock_cancel), and _acquire_call(), the
acquire (or campaign) that a signal handler's exception (Ctrl-C) stops on
the main thread, through _interruptibly(), which dlock_observe() uses
too."""

import ctypes
import threading
import weakref

from ._constants import BUSY, OK
from ._errors import _error
from ._ffi import (_acquire_len, _cancel_fire, _cancel_fired, _cancel_free,
                   _cancel_new, _cancel_reset, _elect, _release, _vp)

class Cancel:
    """A way to stop waiting acquires from another thread
    (``dlock_cancel``): pass it as ``cancel=`` to :meth:`Lock.acquire`,
    :meth:`Store.lock`, :meth:`Store.elect` or :meth:`Store.observe`;
    :meth:`fire` makes every call waiting with it (now or later, until
    :meth:`reset`) raise :class:`Cancelled`, holding nothing."""

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


def _acquire_call(sh, name, o, timeout_exc, campaign=None):
    """dlock_acquire_len, or dlock_elect with the value campaign[0] when
    campaign is given: (rc, handle, exception or None).  On the main
    thread, a wait runs on a helper thread while this one waits for it
    interruptibly: a signal handler's exception (Ctrl-C's
    KeyboardInterrupt) fires the wait's cancel, waits for the call to end
    (within ~100 ms), lets go of a grant that raced it, and propagates."""
    def call():
        h = _vp()
        if campaign is None:
            rc = _acquire_len(ctypes.byref(h), sh, name, len(name),
                              ctypes.byref(o))
        else:
            rc = _elect(ctypes.byref(h), sh, name, campaign[0],
                        ctypes.byref(o))
        # dlock_errmsg() is per thread: read it here.
        err = None if rc == OK else _error(
            rc, None, timeout_exc if rc == BUSY and o.wait_ms != 0 else None)
        return rc, h, err

    if o.wait_ms == 0 or not _on_main_thread():
        return call()
    own = None
    if not o.cancel:
        own = Cancel()
        o.cancel = own._h

    def undo(result):
        if result[0] == OK:
            _release(result[1])

    try:
        return _interruptibly(call, o.cancel, undo)
    finally:
        if own is not None:
            o.cancel = None


def _on_main_thread():
    return threading.current_thread() is threading.main_thread()


def _interruptibly(call, cancel_h, undo=None):
    """call() on a helper thread while this one (the main thread) waits
    for it in a way signal handlers interrupt.  A handler's exception
    fires the cancel cancel_h, waits for the call to end (libdlock ends a
    cancelled wait within ~100 ms), hands what it returned to undo() (a
    grant that raced the cancel), and propagates."""
    out = []
    done = threading.Event()

    def run():
        try:
            out.append((True, call()))
        except BaseException as e:  # to the waiting thread
            out.append((False, e))
        finally:
            done.set()

    t = threading.Thread(target=run, name="dlock-wait", daemon=True)
    t.start()
    try:
        # Event.wait() returns to run signal handlers on the main thread.
        while not done.wait():
            pass
    except BaseException:
        _cancel_fire(cancel_h)
        # The call ends within moments; a second Ctrl-C does not abandon
        # it (that could leave a lock held with nobody to release it).
        while True:
            try:
                done.wait()
                break
            except BaseException:
                continue
        if out and out[0][0] and undo is not None:
            undo(out[0][1])
        raise
    finally:
        t.join()
    ok, value = out[0]
    if not ok:
        raise value
    return value
