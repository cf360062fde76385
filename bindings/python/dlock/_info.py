"""What the store tells, as frozen values: LockInfo (dlock_info), Leader
(dlock_info of dlock_leader()/dlock_observe()), Run (dlock_run),
RunOutcome (Store.run_once()) and Suspension (dlock_suspension); and the
checks of a run's arguments (once_per, result)."""

import ctypes
from dataclasses import dataclass

from ._args import _ms
from ._constants import EINVAL, RUN_EXITED, _RUN_RESULTS
from ._errors import InvalidArgument
from ._ffi import _s

# --- info -----------------------------------------------------------------

@dataclass(frozen=True)
class LockInfo:
    """What the store knows about one name (dlock_status(), dlock_list()).
    Times in seconds; ``ttl`` None when unknown or not held; ``since`` a
    Unix time or None; ``fence`` 0 when unknown; ``pid`` 0 when unknown.
    A holder that is not dlock (``other_client``), on PostgreSQL and
    MariaDB/MySQL: ``client_id`` its session's id (0 if unknown),
    ``client_user`` and ``client_addr`` its login and address as the server
    shows them ("" if it does not)."""
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
    client_id: int
    client_user: str
    client_addr: str

    @classmethod
    def _from(cls, i):
        return cls(
            name=i.name.decode("utf-8", "surrogateescape"),
            held=bool(i.held), shared=bool(i.shared), holders=i.holders,
            fence=i.fence,
            ttl=None if i.ttl_ms < 0 else i.ttl_ms / 1000.0,
            host=_s(i.host), pid=i.pid,
            since=i.since_ms / 1000.0 if i.since_ms > 0 else None,
            other_client=bool(i.other_client), limit=i.limit,
            client_id=i.client_id, client_user=_s(i.client_user),
            client_addr=_s(i.client_addr))


@dataclass(frozen=True)
class Leader:
    """Who leads a name (:meth:`Store.leader`, :meth:`Store.observe`): the
    holder of the lock ``name`` as the store has it.  ``fence`` is the
    term (strictly greater than every earlier leader's); ``value`` what
    the leader published (str, or None: none, or none the store can
    vouch is this term's); ``host``, ``pid`` ("" / 0 when unknown),
    ``since`` (a Unix time or None) and ``ttl`` (seconds of lease left,
    or None) as in :class:`LockInfo`."""
    name: str
    value: object
    fence: int
    host: str
    pid: int
    since: object
    ttl: object

    @classmethod
    def _from(cls, i):
        """A Leader, or None when the info says nobody leads."""
        if not i.held:
            return None
        value = None
        if i.value:
            value = ctypes.string_at(i.value, i.value_len).decode(
                "utf-8", "surrogateescape")
        return cls(
            name=i.name.decode("utf-8", "surrogateescape"), value=value,
            fence=i.fence, host=_s(i.host), pid=i.pid,
            since=i.since_ms / 1000.0 if i.since_ms > 0 else None,
            ttl=None if i.ttl_ms < 0 else i.ttl_ms / 1000.0)


@dataclass(frozen=True)
class Run:
    """One recorded run of a name (dlock_run): :meth:`Store.history`,
    :meth:`Store.last_runs`, :meth:`Lock.run_begin`.  ``start`` and ``end``
    are Unix times in seconds on the store's clock (SQLite: the host's);
    ``end`` is None while running or when abandoned.  ``result`` is one of
    RUN_RUNNING, RUN_EXITED, RUN_SIGNALED, RUN_LOST, RUN_ABANDONED,
    RUN_TIMEDOUT, or RUN_SUSPENDED: never a stored run, the ``last`` of a
    :meth:`Lock.run_begin` that skipped because the name is suspended
    (``host`` is who suspended it, ``start`` since when; ``fence``,
    ``pid`` 0, ``end`` None; the reason is :meth:`Store.suspended`'s);
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
        """"running", "exited", "signaled", "lost", "abandoned",
        "timedout" or "suspended"."""
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


@dataclass(frozen=True)
class Suspension:
    """A name's suspension (dlock_suspension): :meth:`Store.suspend`,
    :meth:`Store.resume`, :meth:`Store.suspended`,
    :meth:`Store.suspensions`.  ``by`` is who suspended it (USER@HOST
    unless the caller said otherwise), ``since`` a Unix time in seconds on
    the store's clock (as :attr:`Run.start`), ``reason`` why ("" if none).
    Text the library could not vouch for (a record planted in the store)
    reads "?"."""
    name: str
    by: str
    since: float
    reason: str

    @classmethod
    def _from(cls, s):
        return cls(
            name=s.name.decode("utf-8", "surrogateescape"), by=_s(s.by),
            since=s.since_ms / 1000.0, reason=_s(s.reason))


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
        raise InvalidArgument("result %r is not 'exited', 'signaled', "
                              "'lost' or 'timedout'" % result, EINVAL)
    if isinstance(result, bool) or not isinstance(result, int):
        raise TypeError("dlock: result must be RUN_EXITED, RUN_SIGNALED or "
                        "RUN_LOST, not %r" % (result,))
    return result
