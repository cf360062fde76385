"""Arguments checked and converted for libdlock: names and URLs to bytes
(no inner NUL where C takes a NUL-terminated string), seconds to ms."""

import math

from ._constants import EINVAL
from ._errors import InvalidArgument

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
    # (A float past ~1.8e305 s is inf in ms: clamped before ceil(), which
    # would raise OverflowError.)
    ms = seconds * 1000
    if ms >= _INT64_MAX:
        return _INT64_MAX
    return int(math.ceil(ms))


def _wait_ms(wait):
    """A wait in ms, None for forever: None, math.inf and WAIT_FOREVER
    (-1, as in C and PHP's Store::FOREVER) wait until acquired, 0 tries
    once, N > 0 waits up to N seconds (docs/library.md's table)."""
    if wait is None or (not isinstance(wait, bool) and wait == -1):
        return None
    return _ms(wait, "wait")


def _value_bytes(value):
    """A leader's value for libdlock: None or "" is no value; str (UTF-8)
    or bytes, no NUL (libdlock checks the UTF-8 and DLOCK_VALUE_MAX)."""
    if value is None:
        return None
    b = _cstr(value, "value")
    return b if b else None
