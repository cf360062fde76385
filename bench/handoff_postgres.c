/*
 * handoff_postgres.c - PostgreSQL's hand-off floor (handoff.h): the
 * waiter blocks in the server on the session advisory lock and takes its
 * fence (a sequence) in the same statement; the releaser's one statement
 * unlocks it, and the server wakes the blocked backend itself: no NOTIFY,
 * no second request.  Two requests per cycle.
 */
#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "bench.h"
#include "handoff.h"

struct pg_floor {
    struct bench_noop *n;
    PGconn *c;
    char name[128];
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
                   "CREATE SEQUENCE IF NOT EXISTS dlock_bench_handoff_seq");
}

static void pg_teardown(const char *url)
{
    pg_once(url, "DROP SEQUENCE IF EXISTS dlock_bench_handoff_seq");
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
    if (pg_ok(f->c, PQexec(f->c, "SET lock_timeout = 0"), "set") != 0 ||
        pg_ok(f->c,
              PQprepare(f->c, "acq",
                        "SELECT pg_advisory_lock(hashtext($1)), "
                        "nextval('dlock_bench_handoff_seq')",
                        1, NULL),
              "prepare") != 0 ||
        pg_ok(f->c,
              PQprepare(f->c, "rel", "SELECT pg_advisory_unlock(hashtext($1))",
                        1, NULL),
              "prepare") != 0) {
        bench_noop_close(f->n);
        free(f);
        return NULL;
    }
    return f;
}

static int pg_stmt(void *p, const char *stmt)
{
    struct pg_floor *f = p;
    const char *v[1] = {f->name};

    return pg_ok(f->c, PQexecPrepared(f->c, stmt, 1, v, NULL, NULL, 0), stmt);
}

static int pg_acquire(void *p)
{
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
    "a blocked pg_advisory_lock() + nextval() in one statement; "
    "pg_advisory_unlock()",
    pg_setup,
    pg_open,
    pg_acquire,
    pg_release,
    pg_close,
    pg_teardown};
