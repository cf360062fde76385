#!/usr/bin/env python3
"""stores.py --check [DLOCK_DIR]: every text that lists dlock's stores
names each store of cmake/stores.list, and the library's scheme table
(src/core/store.c) has the schemes the list has, no more, no fewer.

The list is the one for the texts written by hand (man pages, READMEs,
debian/control, dlock.pc); the runtime texts (`dlock --help`,
`--version`, the "unknown store scheme" error) are made from the scheme
table.  Given the directory of a built dlock, it checks those too:
`--help` names every scheme `--version` says is compiled in, and the
unknown-scheme error names every scheme of the list.

A store is named when one of its names (the list's last column, each
part of "A/B") or schemes is a word of the text, in any case.  TEXTS
says which part of each file lists the stores.  Each failure names the
file (and part) and the store it leaves out; exit 1 if there is one."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = "cmake/stores.list"

# (file, part): "all", "para1" (the first paragraph after the title),
# "sh:A,B" (those .SH sections of a man page), "field:F" (every F: field
# of a deb822 file, its continuation lines too), "line:P" (the lines
# that start with P).
TEXTS = [
    ("README.md", "para1"),
    ("docs/cli.md", "all"),
    ("docs/getting-started.md", "all"),
    ("docs/man/dlock.1", "sh:DESCRIPTION"),
    ("docs/man/libdlock.3", "sh:NAME,DESCRIPTION"),
    ("debian/control", "field:Description"),
    ("cmake/dlock.pc.in", "line:Description:"),
    ("bindings/python/README.md", "para1"),
    ("bindings/php/README.md", "para1"),
]


def read_list():
    stores = []
    with open(os.path.join(ROOT, LIST)) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) != 3:
                sys.exit("%s:%d: want STORE SCHEMES NAME: %r" % (LIST, n, line))
            stores.append((parts[0], parts[1].split(","), parts[2].strip()))
    return stores


def scheme_table():
    with open(os.path.join(ROOT, "src/core/store.c")) as f:
        src = f.read()
    m = re.search(r"schemes\[\]\s*=\s*\{(.*?)\n\};", src, re.S)
    if m is None:
        sys.exit("src/core/store.c: no schemes[] table found")
    return re.findall(r'\.scheme\s*=\s*"([^"]+)"', m.group(1))


def parts(path, how):
    """[(label, text)] of path for how (see TEXTS)."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    if how == "all":
        return [(path, text)]
    if how == "para1":
        body = re.sub(r"\A#[^\n]*\n\s*", "", text)
        return [(path + " (first paragraph)", body.split("\n\n", 1)[0])]
    if how.startswith("sh:"):
        out = []
        for sec in how[3:].split(","):
            m = re.search(r"^\.SH %s\n(.*?)(?=^\.SH |\Z)" % re.escape(sec),
                          text, re.S | re.M)
            out.append((path + " (" + sec + ")", m.group(1) if m else ""))
        return out
    if how.startswith("field:"):
        name = how[6:]
        return [(path + " (%s: of %s)" % (name, pkg), val)
                for pkg, val in fields(text, name)]
    if how.startswith("line:"):
        lines = [l for l in text.splitlines() if l.startswith(how[5:])]
        return [(path + " (" + how[5:] + ")", "\n".join(lines))]
    raise ValueError(how)


def fields(text, name):
    out, pkg = [], "Source"
    for para in text.split("\n\n"):
        m = re.search(r"^Package:\s*(\S+)", para, re.M)
        pkg = m.group(1) if m else pkg
        m = re.search(r"^%s:(.*(?:\n[ \t].*)*)" % re.escape(name), para, re.M)
        if m:
            out.append((pkg, m.group(1)))
    return out


def names(store):
    _, schemes, name = store
    return [n for n in name.split("/")] + schemes


def named(store, text):
    # A man page's \- is a hyphen; words are compared in any case.
    text = text.replace("\\-", "-")
    return any(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(n), text,
                         re.I) for n in names(store))


def run(exe, *args):
    p = subprocess.run([exe] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, DLOCK_STORE=""))
    return p.stdout + p.stderr


def main():
    args = sys.argv[1:]
    if not args or args[0] != "--check":
        sys.exit(__doc__)
    stores = read_list()
    fails = []
    listed = [s for st in stores for s in st[1]]
    table = scheme_table()
    for s in table:
        if s not in listed:
            fails.append("src/core/store.c: scheme %s is not in %s" %
                         (s, LIST))
    for s in listed:
        if s not in table:
            fails.append("%s: scheme %s is not in src/core/store.c's "
                         "scheme table" % (LIST, s))
    for path, how in TEXTS:
        for label, text in parts(path, how):
            for st in stores:
                if not named(st, text):
                    fails.append("%s leaves out the store %s (%s)" %
                                 (label, st[2], st[0]))
    if len(args) > 1:
        exe = os.path.join(args[1], "dlock")
        version = run(exe, "--version")
        m = re.search(r"\(stores: ([^)]*)\)", version)
        compiled = m.group(1).split(",") if m and m.group(1) else []
        if not compiled:
            fails.append("dlock --version names no store: %s" % version)
        helptext = run(exe, "--help")
        for s in compiled:
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(s),
                             helptext):
                fails.append("dlock --help leaves out the scheme %s "
                             "(compiled in)" % s)
        err = run(exe, "-s", "nosuchstore://h/x", "status", "x")
        for s in listed:
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(s), err):
                fails.append("the unknown-scheme error leaves out the "
                             "scheme %s: %s" % (s, err.strip()))
    for f in fails:
        print("FAIL " + f)
    if not fails:
        print("ok   %d stores, %d schemes, named in every text" %
              (len(stores), len(listed)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
