#!/usr/bin/env python3
"""run_sqlite.py GOLDEN_DIR: every golden file of the SQLite store
(GOLDEN_DIR/VARIANT/*.sql, what `make golden` wrote), run as it is by
SQLite itself (python3's sqlite3 module) in a fresh database file.

wal.sql and schema.sql (scripts of several statements, no parameters)
run first, as every open runs them.  Then, inside BEGIN IMMEDIATE
(begin.sql) ... COMMIT (commit.sql), every other file is prepared and
stepped with its ?N parameters bound to sample values (?1, the name, a
string; the others 1).  rollback.sql then ends a second begin.sql.
migrate-limit.sql runs on a second file whose dlock_locks lacks the
"limit" column (schema.sql less that line: a file of dlock 0.1 or 0.2),
between two has-limit.sql that must answer no, then yes.

A statement SQLite refuses fails the entry with the file's name and
SQLite's message.  So that a broken golden cannot pass unseen, a text
that is no SQL must be refused too (else the check itself is broken)."""
import os
import re
import sqlite3
import sys
import tempfile

# Run by hand, in this order, around the others.
SCRIPTS = ("wal.sql", "schema.sql")
SPECIAL = SCRIPTS + ("begin.sql", "commit.sql", "rollback.sql",
                     "migrate-limit.sql", "has-limit.sql")

failures = []


def short(path):
    """VARIANT/NAME of a golden file's path."""
    return os.path.join(os.path.basename(os.path.dirname(path)),
                        os.path.basename(path))


def fail(where, what):
    where = short(where) if os.sep in where else where
    failures.append("%s: %s" % (where, what))
    print("FAIL %s: %s" % (where, what), file=sys.stderr)


def params(text):
    """Sample values for the ?N parameters of text."""
    if re.search(r"\?(?![0-9])|[:@$][A-Za-z_]", text):
        raise ValueError("a parameter other than ?N (the SQLite store "
                         "binds ?N only)")
    n = max([int(m) for m in re.findall(r"\?([0-9]+)", text)] or [0])
    return ["golden"] + [1] * (n - 1) if n else []


def run(db, path, script=False):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        if script:
            db.executescript(text)
            return None
        return db.execute(text, params(text)).fetchall()
    except (sqlite3.Error, ValueError) as e:
        fail(path, e)
        return None


def connect(path):
    # isolation_level=None: the golden BEGIN / COMMIT / ROLLBACK are the
    # only transaction control, as in the store.
    return sqlite3.connect(path, isolation_level=None)


def variant(vdir, tmp):
    before = len(failures)
    have = set(f for f in os.listdir(vdir) if f.endswith(".sql"))
    for f in SPECIAL:
        if f not in have:
            fail(os.path.join(vdir, f), "missing (renamed? this script "
                 "runs it by name)")
    if failures:
        return
    g = lambda f: os.path.join(vdir, f)
    db = connect(os.path.join(tmp, os.path.basename(vdir) + ".db"))
    for f in SCRIPTS:
        run(db, g(f), script=True)
    if run(db, g("has-limit.sql")) != [(1,)]:
        fail(g("has-limit.sql"), "no row on the schema of schema.sql")
    run(db, g("begin.sql"))
    if not db.in_transaction:
        fail(g("begin.sql"), "no transaction open after it")
    others = sorted(have - set(SPECIAL))
    for f in others:
        run(db, g(f))
    run(db, g("commit.sql"))
    run(db, g("begin.sql"))
    run(db, g("rollback.sql"))
    if db.in_transaction:
        fail(g("rollback.sql"), "the transaction is still open")
    db.close()

    # A file from before semaphores: the limit column migrated in.
    with open(g("schema.sql"), encoding="utf-8") as f:
        old = re.sub(r'(?m)^\s*"limit"[^\n]*\n', "", f.read())
    db = connect(os.path.join(tmp, os.path.basename(vdir) + "-0.2.db"))
    try:
        db.executescript(old)
    except sqlite3.Error as e:
        fail(g("schema.sql"), "less its limit column: %s" % e)
    if run(db, g("has-limit.sql")) != []:
        fail(g("has-limit.sql"), "a row without the limit column")
    run(db, g("begin.sql"))
    run(db, g("migrate-limit.sql"))
    run(db, g("commit.sql"))
    if run(db, g("has-limit.sql")) != [(1,)]:
        fail(g("migrate-limit.sql"), "has-limit.sql sees no column after it")
    db.close()
    print("%s %s: %d files run" % ("FAIL" if len(failures) > before else "ok",
                                    os.path.basename(vdir), len(have)))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    top = sys.argv[1]
    variants = sorted(d for d in os.listdir(top)
                      if os.path.isdir(os.path.join(top, d)))
    if not variants:
        print("no variants under %s" % top, file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="dlock-golden-sqlite.") as tmp:
        # The check can fail: SQLite refuses what is not SQL.
        db = connect(os.path.join(tmp, "self.db"))
        try:
            db.execute("SELEC 1 FROM")
            fail("self-test", "SQLite took a broken statement")
        except sqlite3.Error:
            pass
        db.close()
        for v in variants:
            variant(os.path.join(top, v), tmp)
    if failures:
        print("%d golden file(s) failed" % len(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
