"""libdlock through ctypes: finding and loading the library (DLOCK_LIBRARY,
the SONAME, find_library), the C structures the binding passes or reads,
the prototype of every function it calls, and C strings back to str."""

import ctypes
import ctypes.util
import os

from ._constants import NAME_MAX, REASON_MAX, SONAME

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
    # dlock_options, version 3 (_OPTIONS_VERSION); the layout is checked
    # against include/dlock.h by the bindings-layout test.
    _fields_ = [
        ("version", ctypes.c_uint),
        ("wait_ms", ctypes.c_int64),
        ("ttl_ms", ctypes.c_int64),
        ("auto_renew", ctypes.c_int),
        ("shared", ctypes.c_int),
        ("on_lost", _LOST_CB),
        ("payload", _vp),
        ("limit", ctypes.c_uint),         # version 2
        ("cancel", _vp),                  # version 3
    ]


class _Info(ctypes.Structure):
    # dlock_info, every field of include/dlock.h's (the bindings-layout test
    # compares them).  Only ever read through a pointer the library hands
    # out: a later library may add fields at the end.
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
        ("client_id", ctypes.c_int64),
        ("client_user", ctypes.c_char * 128),
        ("client_addr", ctypes.c_char * 128),
        ("value", _vp),                   # election: dlock_leader/observe
        ("value_len", ctypes.c_size_t),
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


class _Suspension(ctypes.Structure):
    # dlock_suspension: only ever read through a pointer the library hands
    # out (dlock_resume/_suspended, lent to dlock_suspensions's callback).
    _fields_ = [
        ("name", ctypes.c_char * (NAME_MAX + 1)),
        ("by", ctypes.c_char * 256),
        ("since_ms", ctypes.c_int64),
        ("reason", ctypes.c_char * (REASON_MAX + 1)),
    ]


_SUSPENSION_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Suspension),
                                  _vp)
_OBSERVE_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Info), _vp)


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
_keep_runs = _fn("dlock_keep_runs", _c_int, _vp, _c_char_p, ctypes.c_uint)
_kept_runs = _fn("dlock_kept_runs", _c_int, ctypes.POINTER(ctypes.c_uint),
                 _vp, _c_char_p)
_suspend = _fn("dlock_suspend", _c_int, ctypes.POINTER(_c_int), _vp,
               _c_char_p, _c_char_p, _c_char_p)
_SUSP_PP = ctypes.POINTER(ctypes.POINTER(_Suspension))
_resume = _fn("dlock_resume", _c_int, _SUSP_PP, _vp, _c_char_p)
_suspended = _fn("dlock_suspended", _c_int, _SUSP_PP, _vp, _c_char_p)
_suspensions = _fn("dlock_suspensions", _c_int, _vp, _c_char_p,
                   _SUSPENSION_CB, _vp)
_suspension_free = _fn("dlock_suspension_free", None,
                       ctypes.POINTER(_Suspension))
_elect = _fn("dlock_elect", _c_int, _pp, _vp, _c_char_p, _c_char_p,
             ctypes.POINTER(_Options))
_proclaim = _fn("dlock_proclaim", _c_int, _vp, _c_char_p)
_leader = _fn("dlock_leader", _c_int, ctypes.POINTER(ctypes.POINTER(_Info)),
              _vp, _c_char_p)
_observe = _fn("dlock_observe", _c_int, _vp, _c_char_p, _OBSERVE_CB, _vp,
               _vp)


def _s(b):
    return b.decode("utf-8", "replace") if b is not None else ""


def _take_string(p):
    """Copy and dlock_free() a char * the library returned."""
    try:
        return _s(ctypes.string_at(p.value)) if p.value else ""
    finally:
        _free(p)
