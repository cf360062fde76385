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

import atexit
import contextlib
import ctypes
import ctypes.util
import itertools
import math
import os
import threading
import traceback
import weakref
from dataclasses import dataclass

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
    "RUN_LOST", "RUN_ABANDONED", "RUNS_KEPT",
]

__version__ = "0.2.0"

# dlock_rc, as in dlock.h.
OK = 0
BUSY = -1
LOST = -2
EXPIRING = -3
EINVAL = -4
EUNAVAIL = -5
ESTORE = -6
ENOTSUP = -7
ENOMEM = -8
ECANCELED = -9

WAIT_FOREVER = -1
NAME_MAX = 1024
LIMIT_MAX = 1024
TTL_MIN = 0.1           # seconds (DLOCK_TTL_MIN_MS)
DEFAULT_TTL = 30.0      # seconds (DLOCK_DEFAULT_TTL_MS)
_OPTIONS_VERSION = 3    # the dlock_options layout declared below
SONAME = "libdlock.so.0.2"

# dlock_run_result, as in dlock.h ("Runs").
RUN_RUNNING = 0
RUN_EXITED = 1
RUN_SIGNALED = 2
RUN_LOST = 3
RUN_ABANDONED = 4
RUNS_KEPT = 20          # DLOCK_RUNS_KEPT: runs the store keeps per name
_RUN_RESULTS = {
    RUN_RUNNING: "running", RUN_EXITED: "exited", RUN_SIGNALED: "signaled",
    RUN_LOST: "lost", RUN_ABANDONED: "abandoned",
}


# --- exceptions -----------------------------------------------------------

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


# --- the library ------------------------------------------------------------

def _load():
    path = os.environ.get("DLOCK_LIBRARY")
    if path:
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            raise ImportError("dlock: cannot load DLOCK_LIBRARY=%s (%s)"
                              % (path, e)) from e
    try:
        return ctypes.CDLL(SONAME), SONAME
    except OSError as first:
        found = ctypes.util.find_library("dlock")
        if found:
            return ctypes.CDLL(found), found
        raise ImportError(
            "dlock: cannot load libdlock (%s); install it (libdlock0.2) or "
            "set DLOCK_LIBRARY to its path" % first) from first


_lib, _libpath = _load()

_vp = ctypes.c_void_p
_LOST_CB = ctypes.CFUNCTYPE(None, _vp, _vp)


class _Options(ctypes.Structure):
    # dlock_options, version 2.
    _fields_ = [
        ("version", ctypes.c_uint),
        ("wait_ms", ctypes.c_int64),
        ("ttl_ms", ctypes.c_int64),
        ("auto_renew", ctypes.c_int),
        ("shared", ctypes.c_int),
        ("on_lost", _LOST_CB),
        ("payload", _vp),
        ("limit", ctypes.c_uint),
        ("cancel", _vp),      # version 3
    ]


class _Info(ctypes.Structure):
    # dlock_info as far as this module reads it.  Only ever read through a
    # pointer the library hands out (it may have more fields at the end).
    _fields_ = [
        ("name", ctypes.c_char * (NAME_MAX + 1)),
        ("held", ctypes.c_int),
        ("shared", ctypes.c_int),
        ("holders", ctypes.c_uint),
        ("fence", ctypes.c_uint64),
        ("ttl_ms", ctypes.c_int64),
        ("host", ctypes.c_char * 256),
        ("pid", ctypes.c_int64),
        ("since_ms", ctypes.c_int64),
        ("other_client", ctypes.c_int),
        ("limit", ctypes.c_uint),
    ]


_LIST_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Info), _vp)


class _RunRule(ctypes.Structure):
    # dlock_run_rule.
    _fields_ = [
        ("once", ctypes.c_int),
        ("period_ms", ctypes.c_int64),
    ]


class _Run(ctypes.Structure):
    # dlock_run: only ever read through a pointer the library hands out.
    _fields_ = [
        ("name", ctypes.c_char * (NAME_MAX + 1)),
        ("fence", ctypes.c_uint64),
        ("host", ctypes.c_char * 256),
        ("pid", ctypes.c_int64),
        ("start_ms", ctypes.c_int64),
        ("end_ms", ctypes.c_int64),
        ("result", ctypes.c_int),
        ("status", ctypes.c_int),
    ]


_RUN_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Run), _vp)


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_c_int, _c_char_p = ctypes.c_int, ctypes.c_char_p
_pp = ctypes.POINTER(_vp)
_options_init = _fn("dlock_options_init", _c_int, ctypes.POINTER(_Options),
                    ctypes.c_uint)
_default_url = _fn("dlock_default_url", _c_char_p)
_store_open = _fn("dlock_store_open", _c_int, _pp, _c_char_p)
_store_close = _fn("dlock_store_close", None, _vp)
_store_init = _fn("dlock_store_init", _c_int, _vp)
_ddl = _fn("dlock_ddl", _c_int, _pp, _c_char_p)
_store_url = _fn("dlock_store_url", _c_char_p, _vp)
_url_redact = _fn("dlock_url_redact", _c_int, _pp, _c_char_p)
_free = _fn("dlock_free", None, _vp)
_acquire_len = _fn("dlock_acquire_len", _c_int, _pp, _vp, _c_char_p,
                   ctypes.c_size_t, ctypes.POINTER(_Options))
_release = _fn("dlock_release", _c_int, _vp)
_extend = _fn("dlock_extend", _c_int, _vp, ctypes.c_int64)
_assert_ttl = _fn("dlock_assert_ttl", _c_int, _vp, ctypes.c_int64)
_fence = _fn("dlock_fence", ctypes.c_uint64, _vp)
_is_lost = _fn("dlock_is_lost", _c_int, _vp)
_lease_left = _fn("dlock_lease_left", ctypes.c_int64, _vp)
_status = _fn("dlock_status", _c_int, ctypes.POINTER(ctypes.POINTER(_Info)),
              _vp, _c_char_p)
_info_free = _fn("dlock_info_free", None, ctypes.POINTER(_Info))
_list = _fn("dlock_list", _c_int, _vp, _c_char_p, _LIST_CB, _vp)
_force_release = _fn("dlock_force_release", _c_int,
                     ctypes.POINTER(ctypes.c_uint), _vp, _c_char_p)
_strerror = _fn("dlock_strerror", _c_char_p, _c_int)
_errmsg = _fn("dlock_errmsg", _c_char_p)
_schemes = _fn("dlock_schemes", _c_char_p)
_version = _fn("dlock_version", _c_char_p)
_cancel_new = _fn("dlock_cancel_new", _c_int, _pp)
_cancel_fire = _fn("dlock_cancel_fire", None, _vp)
_cancel_fired = _fn("dlock_cancel_fired", _c_int, _vp)
_cancel_reset = _fn("dlock_cancel_reset", None, _vp)
_cancel_free = _fn("dlock_cancel_free", None, _vp)
_run_begin = _fn("dlock_run_begin", _c_int, _vp, ctypes.POINTER(_RunRule),
                 ctypes.POINTER(_c_int), ctypes.POINTER(ctypes.POINTER(_Run)))
_run_end = _fn("dlock_run_end", _c_int, _vp, _c_int, _c_int)
_history = _fn("dlock_history", _c_int, _vp, _c_char_p, ctypes.c_uint,
               _RUN_CB, _vp)
_last_runs = _fn("dlock_last_runs", _c_int, _vp, _c_char_p, _RUN_CB, _vp)
_run_free = _fn("dlock_run_free", None, ctypes.POINTER(_Run))


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


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else ""


def _error(rc, what=None, exc=None):
    """The exception for rc, with the calling thread's dlock_errmsg() (call
    it right after the failing call, on the same thread)."""
    msg = _s(_errmsg()) or _s(_strerror(rc))
    if what:
        msg = "%s: %s" % (what, msg)
    cls = exc or _EXC.get(rc, DlockError)
    return cls(msg, rc)


def _take_string(p):
    """Copy and dlock_free() a char * the library returned."""
    try:
        return _s(ctypes.string_at(p.value)) if p.value else ""
    finally:
        _free(p)


def _name_bytes(name, what="name"):
    if isinstance(name, str):
        return name.encode("utf-8", "surrogateescape")
    if isinstance(name, (bytes, bytearray, memoryview)):
        return bytes(name)
    raise TypeError("dlock: %s must be str or bytes, not %s"
                    % (what, type(name).__name__))


def _cstr(name, what="name"):
    """For calls that take a NUL-terminated string: refuse an inner NUL
    (ctypes would cut the string there silently)."""
    b = _name_bytes(name, what)
    if b"\0" in b:
        raise InvalidArgument("%s contains a NUL byte" % what, EINVAL)
    return b


_INT64_MAX = 2 ** 63 - 1


def _ms(seconds, what):
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError("dlock: %s must be a number of seconds, not %r"
                        % (what, seconds))
    if math.isnan(seconds) or seconds < 0:
        raise InvalidArgument("%s must be >= 0 seconds, not %r"
                              % (what, seconds), EINVAL)
    if math.isinf(seconds):
        return None
    # Clamped to int64: libdlock takes a wait over 365 days as forever and
    # says a ttl that long is out of range.
    return min(int(math.ceil(seconds * 1000)), _INT64_MAX)


def default_url():
    """The store used when none is named: the SQLite file private to the
    calling user (dlock_default_url())."""
    return _s(_default_url())


def version():
    """libdlock's version string (the loaded library's)."""
    return _s(_version())


def schemes():
    """The URL schemes compiled into the loaded libdlock, as a list."""
    return [x for x in _s(_schemes()).split(",") if x]


def library_path():
    """What was loaded: DLOCK_LIBRARY, the SONAME, or find_library's
    answer."""
    return _libpath


def redact(url):
    """The URL with any password replaced by ``***`` (dlock_url_redact())."""
    out = _vp()
    rc = _url_redact(ctypes.byref(out), _cstr(url, "url"))
    if rc != OK:
        raise _error(rc, "redact")
    return _take_string(out)


def ddl(url=None):
    """The DDL the store of url would run (dlock_ddl(); does not connect)."""
    out = _vp()
    rc = _ddl(ctypes.byref(out), None if url is None else _cstr(url, "url"))
    if rc != OK:
        raise _error(rc, "ddl")
    return _take_string(out)


# --- lost callbacks ---------------------------------------------------------
#
# One trampoline for every lock, alive as long as the module: the payload is
# a key into _lost_targets (weak references to Lock objects), so a Lock
# that is collected can never leave the library a dangling function
# pointer.  The trampoline never lets an exception reach the library.

_lost_targets = {}
_lost_keys = itertools.count(1)
_lost_guard = threading.Lock()


def _lost_trampoline(_handle, payload):
    try:
        with _lost_guard:
            ref = _lost_targets.get(payload or 0)
        lock = ref() if ref is not None else None
        if lock is not None:
            lock._fire_lost()
    except BaseException:  # never into C
        try:
            traceback.print_exc()
        except BaseException:
            pass


_lost_cfunc = _LOST_CB(_lost_trampoline)


# This process's incarnation, one more in every os.fork() child: what
# tells a fork child from its parent, where a pid cannot (a pid 1 forking
# into a new pid namespace has a child that is pid 1 too).  _Owner also
# compares the pid, for a child forked by C code that runs no Python hook.
_generation = 0


def _after_fork_in_child():
    global _lost_guard, _generation
    _lost_guard = threading.Lock()
    _generation += 1


class _Owner:
    """The process (generation and pid) that made an object."""
    __slots__ = ("gen", "pid")

    def __init__(self):
        self.gen = _generation
        self.pid = os.getpid()

    def here(self):
        return self.gen == _generation and self.pid == os.getpid()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

# Interpreter exit.  weakref.finalize's atexit hook releases the locks still
# held (in reverse order of creation: locks before their stores), so that
# no on_lost callback can reach a finalizing interpreter.  Registering
# _mark_exiting after that hook makes it run first (atexit is LIFO): locks
# acquired from then on (by daemon threads, by other atexit handlers) get
# no C callback, since one could fire once the interpreter is gone.
_exiting = False


def _mark_exiting():
    global _exiting
    _exiting = True


class _Anchor:
    pass


_anchor = _Anchor()
weakref.finalize(_anchor, lambda: None)   # makes sure the hook is registered
atexit.register(_mark_exiting)


# --- info -----------------------------------------------------------------

@dataclass(frozen=True)
class LockInfo:
    """What the store knows about one name (dlock_status(), dlock_list()).
    Times in seconds; ``ttl`` None when unknown or not held; ``since`` a
    Unix time or None; ``fence`` 0 when unknown; ``pid`` 0 when unknown."""
    name: str
    held: bool
    shared: bool
    holders: int
    fence: int
    ttl: object
    host: str
    pid: int
    since: object
    other_client: bool
    limit: int

    @classmethod
    def _from(cls, i):
        return cls(
            name=i.name.decode("utf-8", "surrogateescape"),
            held=bool(i.held), shared=bool(i.shared), holders=i.holders,
            fence=i.fence,
            ttl=None if i.ttl_ms < 0 else i.ttl_ms / 1000.0,
            host=_s(i.host), pid=i.pid,
            since=i.since_ms / 1000.0 if i.since_ms > 0 else None,
            other_client=bool(i.other_client), limit=i.limit)


@dataclass(frozen=True)
class Run:
    """One recorded run of a name (dlock_run): :meth:`Store.history`,
    :meth:`Store.last_runs`, :meth:`Lock.run_begin`.  ``start`` and ``end``
    are Unix times in seconds on the store's clock (SQLite: the host's);
    ``end`` is None while running or when abandoned.  ``result`` is one of
    RUN_RUNNING, RUN_EXITED, RUN_SIGNALED, RUN_LOST, RUN_ABANDONED;
    ``status`` the exit status (EXITED), the signal (SIGNALED) or -1.
    ``fence`` identifies the run (the fence of the lock it held)."""
    name: str
    fence: int
    host: str
    pid: int
    start: float
    end: object
    result: int
    status: int

    @property
    def result_name(self):
        """"running", "exited", "signaled", "lost" or "abandoned"."""
        return _RUN_RESULTS.get(self.result, "result %d" % self.result)

    @property
    def succeeded(self):
        """True for a run that exited with status 0."""
        return self.result == RUN_EXITED and self.status == 0

    @classmethod
    def _from(cls, r):
        return cls(
            name=r.name.decode("utf-8", "surrogateescape"), fence=r.fence,
            host=_s(r.host), pid=r.pid, start=r.start_ms / 1000.0,
            end=r.end_ms / 1000.0 if r.end_ms > 0 else None,
            result=r.result, status=r.status)


@dataclass(frozen=True)
class RunOutcome:
    """What :meth:`Store.run_once` did: ``ran`` (fn was called), ``value``
    (what fn returned; None when it did not run) and ``last`` (the
    :class:`Run` that made it skip, or the run before this one)."""
    ran: bool
    value: object
    last: object


def _period_ms(once_per):
    if once_per is None:
        return 0
    ms = _ms(once_per, "once_per")
    if ms is None:
        raise InvalidArgument("once_per must be finite", EINVAL)
    return ms


def _run_result(result):
    if isinstance(result, str):
        for k, v in _RUN_RESULTS.items():
            if v == result:
                return k
        raise InvalidArgument("result %r is not 'exited', 'signaled' or "
                              "'lost'" % result, EINVAL)
    if isinstance(result, bool) or not isinstance(result, int):
        raise TypeError("dlock: result must be RUN_EXITED, RUN_SIGNALED or "
                        "RUN_LOST, not %r" % (result,))
    return result


# --- store ------------------------------------------------------------------

class _StoreState:
    """The store handle and who is using it.  dlock_store_close() must not
    run while another thread is inside a call on the store or on one of
    its locks (it frees what they use), so every such call is counted and
    closing waits for the count to fall to 0; calls begun after close()
    raise InvalidArgument.  Calls on a held lock (release, extend...) go
    on while close() waits for the count (draining: they may be what the
    calls in flight wait for), wait while dlock_store_close() runs
    (closing), and after it go straight to libdlock, which answers LOST
    without touching the store."""
    __slots__ = ("h", "cond", "users", "draining", "closing", "owner")

    def __init__(self, h):
        self.h = h
        self.cond = threading.Condition(threading.Lock())
        self.users = 0
        self.draining = None      # the handle while close() drains
        self.closing = False
        self.owner = _Owner()


class _Using:
    """``with _Using(ss) as h``: h is the store handle, counted as in use;
    with allow_closed, None (not counted) when the store is closed."""
    __slots__ = ("ss", "counted", "allow_closed")

    def __init__(self, ss, allow_closed=False):
        self.ss = ss
        self.counted = False
        self.allow_closed = allow_closed

    def __enter__(self):
        ss = self.ss
        if not ss.owner.here():
            # A fork child: the handle is inert (libdlock answers EINVAL);
            # the condition may have been copied held.
            return ss.h
        with ss.cond:
            if ss.h is None:
                if not self.allow_closed:
                    raise InvalidArgument("the store is closed", EINVAL)
                while ss.closing:
                    ss.cond.wait()
                if ss.draining is None:
                    return None
                ss.users += 1
                self.counted = True
                return ss.draining
            ss.users += 1
            self.counted = True
            return ss.h

    def __exit__(self, *exc):
        if self.counted:
            ss = self.ss
            with ss.cond:
                ss.users -= 1
                if ss.users == 0:
                    ss.cond.notify_all()
        return False


def _close_handle(ss):
    if not ss.owner.here():
        h, ss.h = ss.h, None
        if h:
            _store_close(h)       # frees nothing of the parent's
        return
    with ss.cond:
        h, ss.h = ss.h, None      # from now on, new calls are refused
        if h is None:
            return
        ss.draining = h           # calls on its locks go on meanwhile
        while ss.users > 0:
            if _exiting:
                # A thread (a daemon, at interpreter exit) is still inside
                # a call: leave the store open; libdlock's atexit handler
                # releases what is still held.
                return
            ss.cond.wait(0.1)
        ss.draining = None
        ss.closing = True         # calls on its locks wait for the close
    try:
        _store_close(h)
    finally:
        with ss.cond:
            ss.closing = False
            ss.cond.notify_all()


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
        :class:`InvalidArgument`."""
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

        wait: None or math.inf wait forever; 0 try once; else seconds.
        ttl: the lease in seconds (0.1 up to 365 days), default 30.
        shared: a shared (read) lock.  limit: N > 1 makes it a semaphore of
        N holders.  renew: renew the lease every ttl/3 while held.
        on_lost: called once with the Lock when it is found lost.
        cancel: a :class:`Cancel` whose ``fire()`` stops its waits.
        """
        return Lock(self, name, wait=wait, ttl=ttl, shared=shared,
                    limit=limit, renew=renew, on_lost=on_lost, cancel=cancel)

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
        """The kept runs of ``name`` (at most :data:`RUNS_KEPT`), newest
        first, as a list of :class:`Run`; ``max`` > 0 keeps the newest
        ``max``.  Raises :class:`NotSupported` on a store without run
        records."""
        if isinstance(max, bool) or not isinstance(max, int):
            raise TypeError("dlock: max must be an int, not %r" % (max,))
        if not 0 <= max < 2 ** 32:
            raise InvalidArgument("max %d is out of range" % max, EINVAL)
        return self._runs(_history, "history", _cstr(name), max)

    def last_runs(self, prefix=""):
        """The last :class:`Run` of every name starting with ``prefix``
        that has run records, in no particular order."""
        return self._runs(_last_runs, "last_runs",
                          _cstr(prefix or "", "prefix"))

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
        with _lost_guard:
            _lost_targets.pop(st.key, None)
        st.key = 0


class Lock:
    """A lock on one name in one store.  Not held until ``acquire()`` (or
    ``with``).  Reusable: after ``release()`` it may be acquired again
    (with a new fence).  Made by :meth:`Store.lock`."""

    def __init__(self, store, name, wait=None, ttl=DEFAULT_TTL,
                 shared=False, limit=None, renew=True, on_lost=None,
                 cancel=None):
        if not isinstance(store, Store):
            raise TypeError("dlock: store must be a dlock.Store")
        if cancel is not None and not isinstance(cancel, Cancel):
            raise TypeError("dlock: cancel must be a dlock.Cancel")
        self._cancel = cancel
        if on_lost is not None and not callable(on_lost):
            raise TypeError("dlock: on_lost must be callable")
        self._store = store       # keeps the store open while we live
        self._name = _name_bytes(name)
        self._wait = _ms(wait, "wait") if wait is not None else None
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
            wait_ms = _ms(wait, "wait") if wait is not None else None
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
        if self.on_lost is not None and not _exiting:
            key = next(_lost_keys)
            with _lost_guard:
                _lost_targets[key] = weakref.ref(self)
            o.on_lost = _lost_cfunc
            o.payload = key
        h = _vp()
        # The wait happens outside the Lock's mutex (which a finalizer at
        # interpreter exit may need), flagged by _acquiring.
        with st.guard():
            if st.h is not None or self._acquiring:
                if key:
                    with _lost_guard:
                        _lost_targets.pop(key, None)
                raise InvalidArgument("lock %r is already held (or being "
                                      "acquired) by this Lock" % self.name,
                                      EINVAL)
            self._acquiring = True
            self._was_lost = False
            self._lost_fired = False
        try:
            with self._store._using() as sh:
                rc, h, err = _acquire_call(sh, self._name, o, Timeout)
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
                with _lost_guard:
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
        :meth:`run_end`) or False (skip: a run already did the job); last
        the :class:`Run` that decided a skip, or the run before this one
        (None if there is none).

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
        status, 0 for success), RUN_SIGNALED (``status`` the signal) or
        RUN_LOST (``status`` -1 or what it ended with); the names
        "exited", "signaled", "lost" too.  Works on a lost lock: call it
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
