#!/usr/bin/env python3
"""run_mysql.py GOLDEN_DIR [URL]: every golden file of every variant of
the MySQL store (tests/golden/mysql/VARIANT/NAME), as it is, on the
throwaway MariaDB (URL, else $DLOCK_TEST_MYSQL_URL; exit 77 without one
outside CI, a failure with CI=true).

The DDL files (create_*.sql, ddl.sql: CREATE ... IF NOT EXISTS, the
procedures) run as they are, with the mysql client; "already exists" is
the only error they may give (other entries share the database).  Every
other statement is prepared on the server as it is, PREPARE g FROM
'<text>', a text of several statements one statement at a time: a '?'
is a parameter there, and a statement that is not valid SQL for the
server, or names a table or column the DDL did not make, fails.  They are
prepared rather than run because running them (an ALTER, a DELETE, a
KILL) would change the database the other entries use.  Fragments (a
WHERE, a select list, a derived table's rows) are not statements: they
are run inside the statements they are part of (renew_batch2.sql is the
renew thread's batch for two locks).  SETVAL takes literal numbers only
(fseq_setval.sql, fseq_raise.sql): there each '?' is written as a number,
as dlock's binder does, before the PREPARE.  A packet's own PREPARE x
FROM '<text>' (run_begin's trim, whose LIMIT is a variable) cannot be
prepared: its <text> is, and its EXECUTE x and DEALLOCATE PREPARE x must
come after it.  The ansi variant runs with
sql_mode ANSI_QUOTES, as a client of ?quote=ansi does.

Fails with the file's name and the server's error; passes when every
file ran or prepared.  --self-test breaks a copy of a golden file and
checks that it fails."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

# Not statements: parts the expanded statements are made of.
FRAGMENTS = {
    "own.sql", "idle_set.sql", "renew.sql", "renew_join.sql",
    "renew_where.sql", "renew_row_first.sql", "renew_row_next.sql",
    "renew_key_first.sql", "renew_key_next.sql", "columns_mysql.sql",
    "columns_mysql_nolim.sql", "columns_mariadb.sql",
    "columns_mariadb_nolim.sql",
}
ALREADY = ("ERROR 1050 ", "ERROR 1304 ")  # table, procedure exists
# SETVAL takes literals only (MariaDB's grammar): these are prepared with
# each '?' bound to 1 as dlock's binder would write a number.
LITERAL_ONLY = {"fseq_setval.sql", "fseq_raise.sql"}
# A packet's own PREPARE (not preparable itself): its quoted text is
# prepared instead; its EXECUTE and DEALLOCATE only need the PREPARE
# before them.
PREPARED = re.compile(r"^PREPARE\s+(\w+)\s+FROM\s+'(.*)'$", re.S | re.I)
USES_PREPARED = re.compile(r"^(?:EXECUTE|DEALLOCATE\s+PREPARE)\s+(\w+)\b",
                           re.I)


def client(url):
    u = urllib.parse.urlsplit(url)
    args = ["mysql", "--batch", "--skip-column-names",
            "--protocol=TCP", "-h", u.hostname or "127.0.0.1",
            "-P", str(u.port or 3306), "-u", urllib.parse.unquote(u.username or "")]
    env = dict(os.environ)
    if u.password:
        env["MYSQL_PWD"] = urllib.parse.unquote(u.password)
    args.append(u.path.lstrip("/"))
    return args, env


def statements(text):
    """text split at its top-level ';' (outside quotes and comments)."""
    out, cur, i, n = [], [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if text[j] == "\\" and ch != "`" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if ch == ";":
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def quote(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "''") + "'"


def run(args, env, sql, force=False):
    p = subprocess.run(args + (["--force"] if force else []), input=sql,
                       text=True, capture_output=True, env=env)
    return p.returncode, p.stderr.strip()


def check_dir(gdir, args, env):
    failed = done = 0
    for variant in sorted(os.listdir(gdir)):
        vdir = os.path.join(gdir, variant)
        if not os.path.isdir(vdir):
            continue
        mode = ("SET SESSION sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES');\n"
                if variant == "ansi" else "")
        names = sorted(os.listdir(vdir))
        ddl = [f for f in names if f.startswith("create_") or f == "ddl.sql"]
        # The DDL first, tables before the procedures that read them.
        ddl.sort(key=lambda f: (f == "ddl.sql", "_proc_" in f, f))
        for f in ddl + [f for f in names if f not in ddl]:
            if f in FRAGMENTS:
                continue
            text = open(os.path.join(vdir, f)).read()
            if f in ddl:
                body = text if f == "ddl.sql" else \
                    "DELIMITER //\n" + text + "\n//\nDELIMITER ;\n"
                rc, err = run(args, env, mode + body, force=True)
                errs = [e for e in err.splitlines()
                        if e.startswith("ERROR") and not e.startswith(ALREADY)]
                if rc != 0 and errs:
                    print("FAIL %s/%s: %s" % (variant, f, errs[0]))
                    failed += 1
                done += 1
                continue
            sql = mode
            named, bad = set(), None
            for st in statements(text):
                if f in LITERAL_ONLY:
                    st = st.replace("?", "1")
                m = PREPARED.match(st)
                if m:
                    # A statement the packet prepares itself (run_begin's
                    # trim): its text is what is prepared here.
                    named.add(m.group(1))
                    st = m.group(2).replace("''", "'")
                else:
                    m = USES_PREPARED.match(st)
                    if m:
                        if m.group(1) not in named:
                            bad = "%s before its PREPARE" % st
                        continue
                sql += "PREPARE g FROM %s;\nDEALLOCATE PREPARE g;\n" % quote(st)
            if bad is not None:
                print("FAIL %s/%s: %s" % (variant, f, bad))
                failed += 1
                done += 1
                continue
            rc, err = run(args, env, sql)
            if rc != 0:
                print("FAIL %s/%s: %s" % (variant, f, err.splitlines()[-1]
                                           if err else "exit %d" % rc))
                failed += 1
            done += 1
    return failed, done


def main():
    argv = sys.argv[1:]
    self_test = argv[:1] == ["--self-test"]
    if self_test:
        argv = argv[1:]
    gdir = argv[0]
    url = argv[1] if len(argv) > 1 else os.environ.get("DLOCK_TEST_MYSQL_URL", "")
    if not url:
        print("DLOCK_TEST_MYSQL_URL is not set (scripts/test.sh sets it)")
        sys.exit(1 if os.environ.get("CI") == "true" else 77)
    args, env = client(url)
    if self_test:
        # A broken copy must fail: a column that does not exist.
        tmp = tempfile.mkdtemp()
        try:
            shutil.copytree(os.path.join(gdir, "default"),
                            os.path.join(tmp, "default"))
            p = os.path.join(tmp, "default", "read_row_mariadb.sql")
            t = open(p).read().replace("WHERE name = ?", "WHERE nme = ?")
            open(p, "w").write(t)
            failed, done = check_dir(tmp, args, env)
        finally:
            shutil.rmtree(tmp)
        if failed != 1:
            print("FAIL self-test: a broken golden file gave %d failures, "
                  "not 1" % failed)
            sys.exit(1)
        print("ok   a broken golden file fails")
        return
    failed, done = check_dir(gdir, args, env)
    print("%d golden files, %d failed" % (done, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
