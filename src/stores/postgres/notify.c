/*
 * notify.c - the bottom layer of the PostgreSQL store's run records
 * (runs.c), leader values (elect.c) and a candidate's release (held.c):
 * one statement on a pooled connection, and the NOTIFY that wakes a
 * name's observers.  A file of its own so that held.c and elect.c each
 * depend on it, not on each other (scripts/circles.py).
 */
#include <string.h>

#include "pg.h"

struct eq_call {
    struct pg_store *ps;
    const char *what, *sql;
    int n;
    const char *const *v;
    PGresult *res;
    char state[6];
};

static int eq_fn(void *conn, void *arg, int *dead)
{
    struct eq_call *k = arg;
    int rc = dlock__pg_run(conn, k->ps->base.url, k->what, k->sql, k->n, k->v,
                           k->ps->op_timeout_ms, &k->res, k->state);

    *dead = rc == DLOCK_EUNAVAIL;
    return rc;
}

int dlock__pg_pooled(struct pg_store *ps, const char *what, const char *sql,
                     int n, const char *const *v, PGresult **res, char state[6])
{
    struct eq_call k = {ps, what, sql, n, v, NULL, ""};
    int rc = dlock__pool_run(&ps->pool, eq_fn, &k);

    *res = k.res;
    if (state != NULL)
        memcpy(state, k.state, sizeof(k.state));
    return rc;
}

void dlock__pg_notify(struct pg_store *ps, const char *name)
{
    const char *v[1] = {name};
    char state[6];
    PGresult *res = NULL;

    /* Best effort: an observer that misses it reads again within a
     * second anyway. */
    (void)dlock__pg_pooled(ps, "notify", ps->text.notify, 1, v, &res, state);
    PQclear(res);
    dlock__clearerr();
}
