/*
 * handoff_postgres.c - PostgreSQL's hand-off floor (handoff.h): the
 * contract floor's cycle (contract.h: the lock, a fence and the holder
 * row in one statement; the row deleted and the lock let go in one) with
 * its try made a wait: the waiter blocks in the server on the session
 * advisory lock, and the same statement goes on to the fence and the row
 * once granted.  The releaser's one statement unlocks it, and the server
 * wakes the blocked backend itself: no NOTIFY, no second request.  Two
 * requests per cycle.
 */
#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "bench.h"
#include "contract.h"
#include "handoff.h"

struct pg_floor {
    struct bench_noop *n;
    PGconn *c;
    char name[128];
    char owner[40];
};

static int pg_ok(PGconn *c, PGresult *r, const char *what)
{
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;

    if (!ok)
        fprintf(stderr, "dlock-bench: hand-off floor: %s: %s", what,
                PQerrorMessage(c));
    PQclear(r);
    return ok ? 0 : -1;
}

/* One statement on a connection of its own. */
static int pg_once(const char *url, const char *sql)
{
    struct bench_noop *n;
    int rc;

    if (bench_noop_open(&n, url) != 0)
        return -1;
    rc = pg_ok(bench_noop_conn(n), PQexec(bench_noop_conn(n), sql), sql);
    bench_noop_close(n);
    return rc;
}

static int pg_setup(const char *url)
{
    return pg_once(url,
                   "CREATE UNLOGGED SEQUENCE IF NOT EXISTS "
                   "dlock_bench_handoff_seq; CREATE UNLOGGED TABLE IF NOT "
                   "EXISTS dlock_bench_handoff_held (name text NOT NULL, "
                   "owner text NOT NULL, fence bigint NOT NULL, backend_pid "
                   "integer NOT NULL, host text NOT NULL, pid bigint NOT "
                   "NULL, expires_at timestamptz NOT NULL, PRIMARY KEY "
                   "(name, owner))");
}

static void pg_teardown(const char *url)
{
    pg_once(url, "DROP TABLE IF EXISTS dlock_bench_handoff_held; DROP "
                 "SEQUENCE IF EXISTS dlock_bench_handoff_seq");
}

static void *pg_open(const char *url, const char *name)
{
    struct pg_floor *f = calloc(1, sizeof(*f));

    if (f == NULL || bench_noop_open(&f->n, url) != 0) {
        free(f);
        return NULL;
    }
    f->c = bench_noop_conn(f->n);
    snprintf(f->name, sizeof(f->name), "%s", name);
    /* As dlock's own sessions and the contract floor: generic plans. */
    if (pg_ok(f->c, PQexec(f->c, "SET lock_timeout = 0"), "set") != 0 ||
        pg_ok(f->c, PQexec(f->c, "SET plan_cache_mode = force_generic_plan"),
              "set") != 0 ||
        pg_ok(f->c,
              PQprepare(f->c, "acq",
                        "WITH l AS (SELECT pg_advisory_lock(hashtextextended("
                        "$1, 0)) IS NOT NULL AS got), i AS (INSERT INTO "
                        "dlock_bench_handoff_held SELECT $1, $2, "
                        "nextval('dlock_bench_handoff_seq'), "
                        "pg_backend_pid(), 'benchhost', 4242, "
                        "clock_timestamp() + interval '30 s' FROM l WHERE "
                        "got RETURNING fence) SELECT (SELECT fence FROM i)",
                        2, NULL),
              "prepare") != 0 ||
        pg_ok(f->c,
              PQprepare(f->c, "rel",
                        "WITH d AS (DELETE FROM dlock_bench_handoff_held "
                        "WHERE name = $1 AND owner = $2 RETURNING 1) SELECT "
                        "(SELECT count(*) FROM d) = 1 AND "
                        "pg_advisory_unlock(hashtextextended($1, 0))",
                        2, NULL),
              "prepare") != 0) {
        bench_noop_close(f->n);
        free(f);
        return NULL;
    }
    return f;
}

/* stmt on the name and the holder's owner token; its one value must be
 * there (a fence; the release's true). */
static int pg_stmt(void *p, const char *stmt)
{
    struct pg_floor *f = p;
    const char *v[2] = {f->name, f->owner};
    PGresult *r = PQexecPrepared(f->c, stmt, 2, v, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
             !PQgetisnull(r, 0, 0) &&
             (stmt[0] == 'a' || PQgetvalue(r, 0, 0)[0] == 't');

    if (!ok)
        fprintf(stderr, "dlock-bench: hand-off floor: %s: %s", stmt,
                PQerrorMessage(f->c));
    PQclear(r);
    return ok ? 0 : -1;
}

static int pg_acquire(void *p)
{
    struct pg_floor *f = p;

    /* A new owner token per acquire, as dlock's (contract.c). */
    snprintf(f->owner, sizeof(f->owner), "%s", cfloor_owner());
    return pg_stmt(p, "acq");
}

static int pg_release(void *p)
{
    return pg_stmt(p, "rel");
}

static void pg_close(void *p)
{
    struct pg_floor *f = p;

    bench_noop_close(f->n);
    free(f);
}

const struct handoff_ops handoff_floor_postgres = {
    "the contract floor with a blocked pg_advisory_lock(): lock, fence and "
    "holder row in one statement; row deleted and unlock in one",
    pg_setup,
    pg_open,
    pg_acquire,
    pg_release,
    pg_close,
    pg_teardown};
