#!/usr/bin/env python3
# run_postgres.py - every golden file of the PostgreSQL store
# (tests/golden/postgres/VARIANT/NAME) run by the server as it is
# (ctest golden-run-postgres; issue 44, item 2):
#
#   run_postgres.py GOLDEN_DIR PSQL
#
# Against DLOCK_TEST_POSTGRES_URL (without it: skip, 77; a failure with
# CI=true).  Each variant gets a fresh schema (dropped at the end), made
# from the DDL goldens (default/init.sql).  A file without parameters is
# run as it is (psql's \i, as psql -f); a file with $n parameters has
# each of its statements prepared (PREPARE g AS <text>), the statements
# without parameters run, all in a transaction rolled back; xact_*.sql
# (dlock_pg_xact_lock()'s) run inside a transaction, after the savepoint
# they expect.  A failure names the
# file and prints the server's error.  First it checks that it can fail:
# a copy of one golden with a typo must be refused, by name.
import os
import re
import shutil
import subprocess
import sys
import tempfile


def statements(text):
    """text split at its top-level semicolons: [(statement, has_params)]."""
    out, start, params, i, n = [], 0, False, 0, len(text)
    while i < n:
        c = text[i]
        if c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif c == "/" and text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth > 0:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "'":
            esc = i > 0 and text[i - 1] in "eE" and (
                i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_"))
            i += 1
            while i < n:
                if esc and text[i] == "\\":
                    i += 2
                elif text[i] == "'" and text.startswith("''", i):
                    i += 2
                elif text[i] == "'":
                    i += 1
                    break
                else:
                    i += 1
        elif c == '"':
            j = text.find('"', i + 1)
            i = n if j < 0 else j + 1
        elif c == "$":
            m = re.match(r"\$(\d+)", text[i:])
            t = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", text[i:])
            if m:
                params, i = True, i + len(m.group(0))
            elif t:
                j = text.find(t.group(0), i + len(t.group(0)))
                i = n if j < 0 else j + len(t.group(0))
            else:
                i += 1
        elif c == ";":
            out.append((text[start:i], params))
            start, params, i = i + 1, False, i + 1
        else:
            i += 1
    if text[start:].strip():
        out.append((text[start:], params))
    return [(s, p) for s, p in out if strip_comments(s).strip()]


def strip_comments(s):
    return re.sub(r"--[^\n]*", "", s)


def psql(psql_bin, url, schema, script, stop=True):
    """(ok, stderr) of psql running script (stop: at the first error)."""
    env = dict(os.environ, PGOPTIONS="-c search_path=%s" % schema)
    cmd = [psql_bin, "-X", "-q", "-v", "ON_ERROR_STOP=%d" % stop, "-d", url,
           "-f", "-"]
    p = subprocess.run(cmd, input=script, env=env, capture_output=True,
                       text=True, timeout=600)
    return p.returncode == 0, p.stderr.strip()


def include(path):
    return "\\i '%s'\n" % path.replace("'", "''")


def file_script(path, tmp):
    """(psql's lines for the golden at path, the file they include): the
    file itself (no parameters), or a script that prepares it (written in
    tmp)."""
    with open(path) as f:
        stmts = statements(f.read())
    if not any(p for _, p in stmts):
        if os.path.basename(path).startswith("xact_"):
            # dlock_pg_xact_lock()'s: inside the caller's transaction,
            # after its savepoint.
            return ("BEGIN;\nSAVEPOINT dlock_xact_lock;\n" + include(path) +
                    "ROLLBACK;\n", path)
        return include(path), path
    script = "BEGIN;\n"
    for s, p in stmts:
        if p:
            script += "PREPARE g AS %s;\nDEALLOCATE g;\n" % s.strip()
        else:
            script += "%s;\n" % s.strip()
    script += "ROLLBACK;\n"
    prep = os.path.join(tmp, "%d.sql" % len(os.listdir(tmp)))
    with open(prep, "w") as f:
        f.write(script)
    return include(prep), prep


def errors(stderr, names):
    """The first error of each file psql reported: {golden name: text}.
    psql prefixes each message with psql:FILE:LINE:."""
    out, cur = {}, None
    for line in stderr.splitlines():
        m = re.match(r"psql:(.*?):\d+: (\w+):", line)
        if m:
            cur = None
            name = names.get(m.group(1), m.group(1))
            if m.group(2) in ("ERROR", "FATAL") and name not in out:
                cur = name
                out[name] = line
        elif cur is not None:
            out[cur] += "\n" + line
    return out


def run_all(golden, psql_bin, url, tag):
    """The failures [(file, error)] of every variant under golden, each in
    a schema of its own: one psql session for its DDL, one for its files
    (run on past an error, so that every failing file is named)."""
    fails = []
    ddl = os.path.join(golden, "default", "init.sql")
    for variant in sorted(os.listdir(golden)):
        vdir = os.path.join(golden, variant)
        if not os.path.isdir(vdir):
            continue
        schema = "dlock_golden_%s_%d_%s" % (tag, os.getpid(),
                                            re.sub(r"\W", "_", variant))
        ok, err = psql(psql_bin, url, schema,
                       "DROP SCHEMA IF EXISTS %s CASCADE;\n"
                       "CREATE SCHEMA %s;\n" % (schema, schema) +
                       include(ddl))
        if not ok:
            fails.append(("%s: the schema from default/init.sql" % variant,
                          err))
            continue
        with tempfile.TemporaryDirectory(prefix="dlock-golden-") as tmp:
            script, names = "", {}
            for name in sorted(os.listdir(vdir)):
                path = os.path.join(vdir, name)
                line, inc = file_script(path, tmp)
                names[inc] = "%s/%s" % (variant, name)
                script += line
            ok, err = psql(psql_bin, url, schema, script, stop=False)
            found = errors(err, names)
            fails += sorted(found.items())
            if not ok and not found:
                fails.append((variant, err or "psql failed"))
        psql(psql_bin, url, "public",
             "DROP SCHEMA IF EXISTS %s CASCADE;\n" % schema)
    return fails


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: run_postgres.py GOLDEN_DIR PSQL")
    golden = os.path.join(sys.argv[1], "postgres")
    psql_bin = sys.argv[2]
    url = os.environ.get("DLOCK_TEST_POSTGRES_URL", "")
    if not url:
        print("golden-run-postgres: DLOCK_TEST_POSTGRES_URL is not set")
        sys.exit(1 if os.environ.get("CI") == "true" else 77)
    url = url.split("?", 1)[0]  # dlock's options are not libpq's

    # It must be able to fail: one file broken, the rest as they are.
    with tempfile.TemporaryDirectory(prefix="dlock-golden-") as tmp:
        shutil.copytree(os.path.join(golden, "default"),
                        os.path.join(tmp, "default"))
        for name in ("names.sql", "status.sql"):
            shutil.copy(os.path.join(golden, "default", name),
                        os.path.join(tmp, "default", "broken_" + name))
        with open(os.path.join(tmp, "default", "broken_names.sql"), "a") as f:
            f.write("AND nosuchcolumn\n")  # parameterised: PREPARE
        with open(os.path.join(tmp, "default", "broken_status.sql"), "w") as f:
            f.write("SELECT 1 FROM nosuchtable\n")  # parameterless: run
        bad = [n for n, _ in run_all(tmp, psql_bin, url, "selftest")
               if "/broken_" in n]
        if bad != ["default/broken_names.sql", "default/broken_status.sql"]:
            print("golden-run-postgres: the self-check expected both "
                  "broken copies to fail, got %s" % bad)
            sys.exit(1)

    fails = run_all(golden, psql_bin, url, "run")
    for name, err in fails:
        print("golden-run-postgres: %s: %s" % (name, err))
    if fails:
        sys.exit(1)
    print("golden-run-postgres: every golden file ran or prepared")


if __name__ == "__main__":
    main()
