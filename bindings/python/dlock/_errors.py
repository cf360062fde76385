"""The exceptions: DlockError and one subclass per dlock_rc (plus
NotHeld, found by the binding itself), and _error(), which turns a
failing call's rc and dlock_errmsg() into one."""

from ._constants import (BUSY, ECANCELED, EINVAL, ENOMEM, ENOTSUP, ESTORE,
                         EUNAVAIL, EXPIRING, LOST)
from ._ffi import _errmsg, _s, _strerror

class DlockError(Exception):
    """A libdlock call failed.  ``code`` is the dlock_rc (negative int, or
    None for errors this module finds itself, like :class:`NotHeld`);
    ``message`` the library's detail (``dlock_errmsg()``) or, when it has
    none, ``dlock_strerror(code)``."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code
        self.message = message

    def __reduce__(self):   # pickles with its code (multiprocessing)
        return (type(self), (self.message, self.code))


class Busy(DlockError):
    """The lock is held by someone else and was not acquired in time
    (DLOCK_BUSY).  Raised by ``acquire()`` with ``wait=0``."""


class Timeout(Busy, TimeoutError):
    """DLOCK_BUSY after a wait > 0 ran out."""


class Lost(DlockError):
    """The lock was lost: its lease ran out, it was broken or taken over
    (DLOCK_LOST)."""


class Expiring(DlockError):
    """``assert_ttl()``: held, but with less lease left than asked
    (DLOCK_EXPIRING)."""


class InvalidArgument(DlockError, ValueError):
    """A bad name, URL, option or handle (DLOCK_EINVAL); also a call on a
    lock or store inherited through fork()."""


class Unavailable(DlockError, ConnectionError):
    """The store cannot be reached (DLOCK_EUNAVAIL)."""


class StoreError(DlockError):
    """The store answered with an error (DLOCK_ESTORE)."""


class NotSupported(DlockError):
    """The store does not support this, or was not compiled in
    (DLOCK_ENOTSUP)."""


class OutOfMemory(DlockError, MemoryError):
    """DLOCK_ENOMEM."""


class Cancelled(DlockError):
    """The wait was cancelled (:meth:`Cancel.fire`; DLOCK_ECANCELED):
    nothing is held."""


class NotHeld(DlockError, RuntimeError):
    """release()/extend()/assert_ttl() on a Lock that is not held (never
    acquired, or already released).  Found by this module: ``code`` is
    None."""


_EXC = {
    BUSY: Busy, LOST: Lost, EXPIRING: Expiring, EINVAL: InvalidArgument,
    EUNAVAIL: Unavailable, ESTORE: StoreError, ENOTSUP: NotSupported,
    ENOMEM: OutOfMemory, ECANCELED: Cancelled,
}


def _error(rc, what=None, exc=None):
    """The exception for rc, with the calling thread's dlock_errmsg() (call
    it right after the failing call, on the same thread)."""
    msg = _s(_errmsg()) or _s(_strerror(rc))
    if what:
        msg = "%s: %s" % (what, msg)
    cls = exc or _EXC.get(rc, DlockError)
    return cls(msg, rc)
