"""The layout of the structures bindings/python/dlock/_ffi.py declares, as
ctypes computes it, in tests/bindings/layout.c's format (test_layout.sh
compares the two).  Needs DLOCK_LIBRARY: importing the binding loads
libdlock."""

import ctypes
import sys

sys.path.insert(0, sys.argv[1])  # bindings/python

from dlock import _constants, _ffi  # noqa: E402

print("const options_version %d" % _constants._OPTIONS_VERSION)
for cname, cls in (("dlock_options", _ffi._Options), ("dlock_info", _ffi._Info),
                   ("dlock_run_rule", _ffi._RunRule), ("dlock_run", _ffi._Run),
                   ("dlock_suspension", _ffi._Suspension)):
    print("struct %s %d" % (cname, ctypes.sizeof(cls)))
    for name, _ in cls._fields_:
        f = getattr(cls, name)
        print("field %s %s %d %d" % (cname, name, f.offset, f.size))
