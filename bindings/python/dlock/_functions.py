"""The module-level calls: default_url(), version(), schemes(),
library_path(), redact(), ddl()."""

import ctypes

from ._args import _cstr
from ._constants import OK
from ._errors import _error
from ._ffi import (_ddl, _default_url, _libpath, _s, _schemes,
                   _take_string, _url_redact, _version, _vp)

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
