"""Process-wide state: the one on_lost trampoline every lock's callback
goes through, the fork generation that tells a child from its parent,
and interpreter exit.  Read _generation, _lost_guard and _exiting as
attributes of this module (they are rebound after a fork and at exit)."""

import atexit
import itertools
import os
import threading
import traceback
import weakref

from ._ffi import _LOST_CB

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
