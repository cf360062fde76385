"""A store handle shared by threads: every call on the store or on one
of its locks is counted (_Using), so that closing it (_close_handle())
waits for the calls in flight and refuses new ones."""

import threading

from . import _process
from ._constants import EINVAL
from ._errors import InvalidArgument
from ._ffi import _store_close
from ._process import _Owner

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
    __slots__ = ("h", "cond", "users", "draining", "closing", "owner",
                 "mine", "iters")

    def __init__(self, h):
        self.h = h
        self.cond = threading.Condition(threading.Lock())
        self.users = 0
        self.draining = None      # the handle while close() drains
        self.closing = False
        self.owner = _Owner()
        self.mine = threading.local()  # .n: this thread's calls in flight
        # The cancels of the observe_iter() generators running on it: a
        # close fires them (a generator nobody drains would keep its
        # observe() in flight, and the close waiting for it, forever).
        self.iters = set()

    def in_call_here(self):
        """Is this thread inside a call on the store (an observe()
        callback): close() would wait for itself."""
        return getattr(self.mine, "n", 0) > 0


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
                ss.mine.n = getattr(ss.mine, "n", 0) + 1
                return ss.draining
            ss.users += 1
            self.counted = True
            ss.mine.n = getattr(ss.mine, "n", 0) + 1
            return ss.h

    def __exit__(self, *exc):
        if self.counted:
            ss = self.ss
            ss.mine.n -= 1
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
        for c in list(ss.iters):
            c.fire()
        while ss.users > 0:
            if _process._exiting:
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
