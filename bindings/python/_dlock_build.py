"""A PEP 517 build backend for the dlock binding, standard library only.

The binding is one pure-Python package, so building it is zipping files:
nothing needs setuptools or wheel.  With ``requires = []`` in
pyproject.toml, ``pip install ./bindings/python`` in a venv installs no
build dependency, so it works offline (Debian 12's venv has setuptools
but not wheel, and pip's build isolation would fetch them from an
index).  Hooks: build_wheel, build_sdist, build_editable (a .pth naming
the source directory) and the metadata ones.  The metadata comes from the
[project] table of pyproject.toml.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_PKG = "dlock"
_TAG = "py3-none-any"


def _project():
    """name, version, description, requires-python of pyproject.toml."""
    with open(os.path.join(_HERE, "pyproject.toml"), "rb") as f:
        raw = f.read()
    try:
        import tomllib  # Python 3.11+
        return tomllib.loads(raw.decode("utf-8"))["project"]
    except ImportError:
        pass
    # Older Pythons: the [project] table's plain `key = "string"` lines,
    # all the metadata below uses.
    proj, section = {}, None
    for line in raw.decode("utf-8").splitlines():
        m = re.match(r"\s*\[([^\]]+)\]\s*$", line)
        if m:
            section = m.group(1).strip()
            continue
        m = re.match(r'\s*([A-Za-z0-9_-]+)\s*=\s*"([^"]*)"\s*$', line)
        if m and section == "project":
            proj[m.group(1)] = m.group(2)
    return proj


def _names():
    p = _project()
    name = re.sub(r"[-_.]+", "_", p["name"]).lower()
    return p, name, "%s-%s" % (name, p["version"])


def _metadata():
    p, _, _ = _names()
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % p["name"],
        "Version: %s" % p["version"],
        "Summary: %s" % p.get("description", ""),
    ]
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    classifiers = p.get("classifiers")
    if isinstance(classifiers, list):
        lines += ["Classifier: %s" % c for c in classifiers]
    readme = os.path.join(_HERE, p.get("readme", "README.md"))
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _wheel_file():
    return ("Wheel-Version: 1.0\nGenerator: _dlock_build\n"
            "Root-Is-Purelib: true\nTag: %s\n" % _TAG).encode("ascii")


def _package_files():
    """(archive name, path) of the package's Python files, sorted: what a
    working tree collects beside them (an editor's swap file or backup,
    notes, a libdlock copied in, which a py3-none-any wheel must not
    carry) stays out."""
    out = []
    for d, dirs, files in os.walk(os.path.join(_HERE, _PKG)):
        dirs[:] = sorted(x for x in dirs
                         if x != "__pycache__" and not x.startswith("."))
        for f in sorted(files):
            if f.startswith(".") or not (f.endswith(".py") or f == "py.typed"):
                continue
            path = os.path.join(d, f)
            out.append((os.path.relpath(path, _HERE).replace(os.sep, "/"),
                        path))
    return out


def _epoch():
    # Reproducible: SOURCE_DATE_EPOCH if set, else 1980-01-01 (zip's first).
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")),
               315532800)


def _write_wheel(directory, entries):
    """entries: (archive name, bytes); adds RECORD, returns the basename."""
    _, name, base = _names()
    dist_info = base + ".dist-info"
    whl = "%s-%s.whl" % (base, _TAG)
    entries = list(entries) + [
        (dist_info + "/METADATA", _metadata()),
        (dist_info + "/WHEEL", _wheel_file()),
        (dist_info + "/top_level.txt", (_PKG + "\n").encode("ascii")),
    ]
    record = []
    stamp = time.gmtime(_epoch())[:6]
    tmp = os.path.join(directory, whl + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            digest = base64.urlsafe_b64encode(
                hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
            record.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
            info = zipfile.ZipInfo(arc, stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
        record.append(dist_info + "/RECORD,,")
        info = zipfile.ZipInfo(dist_info + "/RECORD", stamp)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, ("\n".join(record) + "\n").encode("utf-8"))
    os.replace(tmp, os.path.join(directory, whl))
    return whl


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# --- PEP 517 / 660 hooks -----------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    _, _, base = _names()
    d = os.path.join(metadata_directory, base + ".dist-info")
    os.makedirs(d, exist_ok=True)
    for fname, data in (("METADATA", _metadata()), ("WHEEL", _wheel_file()),
                        ("top_level.txt", (_PKG + "\n").encode("ascii"))):
        with open(os.path.join(d, fname), "wb") as f:
            f.write(data)
    return base + ".dist-info"


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    return _write_wheel(wheel_directory,
                        [(arc, _read(p)) for arc, p in _package_files()])


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    # The source directory on sys.path: edits show at once.
    pth = (_HERE + "\n").encode("utf-8")
    return _write_wheel(wheel_directory, [("_%s_editable.pth" % _PKG, pth)])


def build_sdist(sdist_directory, config_settings=None):
    _, _, base = _names()
    files = [("pyproject.toml", os.path.join(_HERE, "pyproject.toml")),
             ("README.md", os.path.join(_HERE, "README.md")),
             ("_dlock_build.py", os.path.abspath(__file__))]
    files += _package_files()
    out = base + ".tar.gz"
    tmp = os.path.join(sdist_directory, out + ".tmp")
    with tarfile.open(tmp, "w:gz", format=tarfile.PAX_FORMAT) as t:
        entries = [("PKG-INFO", _metadata())]
        entries += [(arc, _read(p)) for arc, p in files]
        for arc, data in entries:
            info = tarfile.TarInfo("%s/%s" % (base, arc))
            info.size = len(data)
            info.mtime = _epoch()
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    os.replace(tmp, os.path.join(sdist_directory, out))
    return out
