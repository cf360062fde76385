#!/usr/bin/env python3
"""circles.py OBJDIR [SRCDIR]: the calls between the files of each folder
of src/ must not go around a circle.

For every object file under OBJDIR (the build's CMakeFiles/*.dir/src/...),
nm gives what it defines and what it uses.  Within one folder (src/core,
src/cli, src/stores/mysql, ...), file A depends on file B when A uses a
symbol B defines.  A circle is a strongly connected set of two or more
files: then no file of it can be read, tested or replaced without the
others.  Prints each circle with one use per edge, and exits 1 if there
is one; 0 when every folder is a DAG.  `--graph FOLDER` prints that
folder's edges (A -> B: symbols), for untying a knot."""
import collections
import os
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                         text=True).stdout
    defs, uses = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        name, kind = f[0], f[1]
        if kind == "U":
            uses.add(name)
        elif kind in "TDBRVWGS" and not name.startswith("."):
            defs.add(name)
    return defs, uses


def objects(objdir):
    """{folder: {file: path of its .o}} for the sources under src/."""
    found = collections.defaultdict(dict)
    for root, _, files in os.walk(objdir):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            path = os.path.join(root, f)
            rel = path.split("/src/", 1)
            if len(rel) != 2 or "/CMakeFiles/" not in path:
                continue
            src = rel[1][:-2]                       # stores/mysql/acquire.c
            folder, name = os.path.split(src)
            # One build target per file is enough (dlock_obj holds the
            # library, dlock_cli the CLI); the first one seen wins.
            found[folder].setdefault(name, path)
    return found


def sccs(nodes, edges):
    """Tarjan: the strongly connected sets of two or more nodes."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def folder_graph(files):
    info = {f: symbols(p) for f, p in files.items()}
    owner = {}
    for f, (defs, _) in info.items():
        for s in defs:
            owner[s] = f
    edges = collections.defaultdict(dict)       # a -> b -> [symbols]
    for f, (_, uses) in info.items():
        for s in sorted(uses):
            g = owner.get(s)
            if g is not None and g != f:
                edges[f].setdefault(g, []).append(s)
    return edges


def main(argv):
    graph_of = None
    if len(argv) >= 3 and argv[1] == "--graph":
        graph_of = argv[2]
        argv = [argv[0]] + argv[3:]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    found = objects(argv[1])
    if not found:
        print("circles.py: no object files of src/ under %s" % argv[1],
              file=sys.stderr)
        return 2
    bad = 0
    for folder in sorted(found):
        edges = folder_graph(found[folder])
        if graph_of is not None:
            if folder == graph_of:
                for a in sorted(edges):
                    for b in sorted(edges[a]):
                        print("%s -> %s: %s" % (a, b, " ".join(edges[a][b])))
            continue
        for comp in sccs(found[folder].keys(), edges):
            bad += 1
            print("src/%s: a circle of %d files: %s" %
                  (folder, len(comp), " ".join(comp)))
            for a in comp:
                for b in sorted(edges[a]):
                    if b in comp:
                        print("    %s -> %s (%s)" % (a, b, ", ".join(
                            edges[a][b][:3]) + (" ..." if len(edges[a][b]) > 3 else "")))
    if graph_of is None:
        print("circles.py: %d folder(s), %d circle(s)" % (len(found), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
