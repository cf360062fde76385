"""dlock: named, distributed locks kept in databases you already run.

A thin Python layer over libdlock (the C library): every lock operation is
a call into libdlock, nothing is reimplemented here, so a Python program
and a C program (or the ``dlock`` command) share the same locks, leases,
fences and stores::

    import dlock
    with dlock.Store("redis://127.0.0.1:6379") as store:
        with store.lock("nightly-report", wait=10) as lock:
            print("holding it, fence", lock.fence)

Why ctypes (standard library) and not a C extension: nothing has to be
compiled to install or use it, it works with any Python 3.8+ and against
whichever libdlock is installed (found by its SONAME, ``libdlock.so.0.2``),
and the C library's ABI rules (opaque handles, versioned options,
library-allocated ``dlock_info``) were made for exactly this kind of
binding.

Where the library is found: the path in the ``DLOCK_LIBRARY`` environment
variable if it is set, else the installed SONAME ``libdlock.so.0.2``
(the dynamic loader's search: ``ldconfig``, ``LD_LIBRARY_PATH``), else
whatever ``ctypes.util.find_library("dlock")`` finds.

Errors: every failing call raises a subclass of :class:`DlockError`, with
``.code`` (the ``DLOCK_E*`` return code) and the library's message
(``dlock_errmsg()``; passwords in URLs are already replaced by ``***``
there).  Not getting a lock is not an error in C (``DLOCK_BUSY``); here:

- ``store.try_lock(name)`` returns ``None`` when someone else holds it;
- ``lock.acquire()`` / ``with store.lock(name, wait=...)`` raise
  :class:`Busy` when ``wait=0`` and :class:`Timeout` (a subclass of
  :class:`Busy` and of the builtin ``TimeoutError``) when a wait > 0 ran
  out.

Lost locks: when libdlock finds a held lock lost (a renewal found it gone,
its lease ran out as this process counts it, an administrator broke it),
``lock.lost`` becomes true, the ``on_lost`` callable (if any) is called
once with the :class:`Lock`, and the next ``extend()``, ``assert_ttl()``
or ``release()`` raises :class:`Lost` (``release()`` still frees the
handle; the store's copy was never someone else's to delete).

Threads and the GIL: ctypes drops the GIL for every call into libdlock, so
a waiting ``acquire()`` does not block other Python threads.  ``on_lost``
runs on a library thread (the renew or lease thread) or on the thread
whose ``extend()``/``assert_ttl()`` found the loss; ctypes takes the GIL
for it.  It must return quickly (it delays the loss of other locks): set
an ``threading.Event`` or a flag there.  Exceptions it raises are printed
to stderr and swallowed, never propagated into the C library.  A
:class:`Store` may be shared by threads; a :class:`Lock` belongs to one
holder (its calls are serialised, and releasing it from another thread,
including from ``on_lost``, is safe).

Cancelling a wait: on the main thread, a waiting ``acquire()`` runs the
C call on a helper thread and waits for it in a way signals interrupt,
so Ctrl-C (or any signal handler that raises) stops it at once: the
handler's exception (``KeyboardInterrupt``) fires the wait's
``dlock_cancel``, libdlock ends the wait within about 100 ms holding
nothing (a grant that raced the signal is released), and the exception
propagates.  From another thread, pass ``cancel=dlock.Cancel()`` to
``acquire()`` (or ``Store.lock()``) and call its ``fire()``: the acquire
raises :class:`Cancelled`.

Election: ``store.elect(name, value)`` campaigns (waits until this
candidate leads) and returns a :class:`Candidate`, a held lock whose
``fence`` is the term and whose ``proclaim(value)`` changes the value
while it still leads (:class:`Lost` after); ``store.leader(name)`` says
who leads (a :class:`Leader` or None); ``store.observe(name, callback)``
and ``store.observe_iter(name)`` report each change, cancellable like a
wait.

Suspension: ``store.suspend(name, reason)`` pauses a job everywhere (its
``run_begin()`` skips, with a :data:`RUN_SUSPENDED` ``last``, until
``store.resume(name)``); ``store.suspended(name)`` and
``store.suspensions(prefix)`` say what is suspended (:class:`Suspension`).

Fork: as libdlock documents, a child made by ``fork()`` never releases or
renews its parent's locks; calls on an inherited :class:`Lock` or
:class:`Store` in the child raise :class:`InvalidArgument`, and the
child's exit (its finalizers included) leaves the parent's locks alone.
A child opens its own :class:`Store` if it needs one.

Process exit: locks still held at interpreter exit are released (by
this module's finalizers, then by libdlock's ``atexit`` handler for
anything left: a store a daemon thread is still using is left open).
``Store.close()`` waits for calls other threads have in flight on the
store or its locks (libdlock frees what they use); calls begun after it
raise :class:`InvalidArgument`.  ``os._exit()``, ``kill -9`` or a crash release nothing:
the store frees the lock when the session ends or the lease runs out.
"""

# The implementation is in the modules of this package (each says what it
# holds); this one re-exports the public names (SONAME and WAIT_FOREVER
# too, public though not in __all__), and _lost_targets, which the tests
# read.
from ._cancel import Cancel
from ._constants import (
    BUSY, DEFAULT_TTL, ECANCELED, EINVAL, ENOMEM, ENOTSUP, ESTORE, EUNAVAIL,
    EXPIRING, LIMIT_MAX, LOST, NAME_MAX, OK, RUN_ABANDONED, RUN_EXITED, RUN_TIMEDOUT,
    OBSERVE_POLL, REASON_MAX, RUN_LOST, RUN_RUNNING, RUN_SIGNALED,
    RUN_SUSPENDED, RUNS_KEPT, RUNS_KEPT_MAX, SONAME, TTL_MIN, VALUE_MAX,
    WAIT_FOREVER)
from ._errors import (
    Busy, Cancelled, DlockError, Expiring, InvalidArgument, Lost,
    NotHeld, NotSupported, OutOfMemory, StoreError, Timeout, Unavailable)
from ._functions import (
    ddl, default_url, library_path, redact, schemes, version)
from ._elect import Candidate
from ._info import Leader, LockInfo, Run, RunOutcome, Suspension
from ._lock import Lock
from ._process import _lost_targets  # noqa: F401
from ._store import Store

__all__ = [
    "Store", "Lock", "LockInfo", "DlockError", "Busy", "Timeout", "Lost",
    "Expiring", "InvalidArgument", "Unavailable", "StoreError",
    "NotSupported", "OutOfMemory", "NotHeld", "Cancelled", "Cancel",
    "default_url", "version",
    "schemes", "redact", "ddl", "library_path", "OK", "BUSY", "LOST",
    "EXPIRING", "EINVAL", "EUNAVAIL", "ESTORE", "ENOTSUP", "ENOMEM",
    "ECANCELED",
    "NAME_MAX", "LIMIT_MAX", "TTL_MIN", "DEFAULT_TTL",
    "Run", "RunOutcome", "RUN_RUNNING", "RUN_EXITED", "RUN_SIGNALED",
    "RUN_LOST", "RUN_ABANDONED", "RUN_TIMEDOUT", "RUN_SUSPENDED",
    "RUNS_KEPT", "RUNS_KEPT_MAX", "Suspension", "REASON_MAX",
    "Candidate", "Leader", "VALUE_MAX", "OBSERVE_POLL",
]

__version__ = "0.2.0"

# Named as before the split (dlock.Store, not dlock._store.Store): in
# reprs, tracebacks, pickles and help().
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj):
        _obj.__module__ = __name__
del _name, _obj
