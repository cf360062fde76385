/*
 * held.c - the PostgreSQL store's calls on a held lock, in both modes:
 * extend, ttl_left and release, what a lock found lost does, and a
 * control statement on a pooled connection (store.c, renew.c and runs.c
 * build on these; this file calls none of them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

/* --- control statements, on a pooled connection ---------------------- */

struct ctl_call {
    struct pg_store *ps;
    const char *what;
    int id;
    const char *sql;
    int n;
    const char *const *v;
    PGresult *res;
};

static int ctl_fn(void *conn, void *arg, int *dead)
{
    struct ctl_call *k = arg;
    /* Lease mode promises to work through PgBouncer's transaction
     * pooling, where a prepared statement may land on another server
     * connection: unnamed statements only. */
    int id = k->ps->lease_mode ? -1 : k->id;
    int rc = dlock__pg_runq(conn, k->ps->base.url, k->what, id, k->sql, k->n,
                            k->v, k->ps->op_timeout_ms, &k->res, NULL);

    *dead = rc == DLOCK_EUNAVAIL;
    return rc;
}

/* One statement on a pooled connection (retried once on a fresh one if
 * the pooled one died while idle: the server never saw it). */
int dlock__pg_ctl_run(struct pg_store *ps, const char *what, int id,
                      const char *sql, int n, const char *const *v,
                      PGresult **res)
{
    struct ctl_call k = {ps, what, id, sql, n, v, NULL};
    int rc = dlock__pool_run(&ps->pool, ctl_fn, &k);

    *res = k.res;
    return rc;
}

/* --- a held lock ----------------------------------------------------- */

/* Run a per-lock statement where it belongs: the lock's session, or a
 * pooled connection in lease mode. */
static int lock_run(struct pg_store *ps, struct dlock_lock *lk,
                    const char *what, int id, const char *sql, int n,
                    const char *const *v, PGresult **res)
{
    if (ps->lease_mode)
        return dlock__pg_ctl_run(ps, what, id, sql, n, v, res);
    return dlock__pg_held_run(ps, lk, what, id, sql, n, v, res);
}

/* The row is gone or past its lease: let the key go now, so nobody waits
 * for a lock we know we lost. */
int dlock__pg_found_lost(struct pg_store *ps, struct dlock_lock *lk)
{
    int live;

    if (!ps->lease_mode)
        (void)dlock__pg_held_drop(ps, lk, &live);
    return dlock__lost(lk, "its lease ran out or it was broken");
}

int dlock__pg_extend(struct dlock_store *s, struct dlock_lock *lk,
                     int64_t ttl_ms)
{
    struct pg_store *ps = (struct pg_store *)s;
    char ttl[24];
    const char *v[3] = {lk->name, lk->token, ttl};
    PGresult *res;
    int rc, changed;

    snprintf(ttl, sizeof(ttl), "%lld", (long long)ttl_ms);
    rc = lock_run(ps, lk, "extend", Q_EXTEND, ps->text.extend[ps->lease_mode],
                  3, v, &res);
    if (rc != DLOCK_OK)
        return rc;
    changed = atoi(PQcmdTuples(res));
    PQclear(res);
    return changed == 0 ? dlock__pg_found_lost(ps, lk) : DLOCK_OK;
}

int dlock__pg_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                       int64_t *left_ms)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[2] = {lk->name, lk->token};
    PGresult *res;
    int rc;

    rc = lock_run(ps, lk, "assert_ttl", Q_TTL, ps->text.ttl[ps->lease_mode], 2,
                  v, &res);
    if (rc != DLOCK_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return dlock__pg_found_lost(ps, lk);
    }
    *left_ms = dlock__pg_col_i64(res, 0, 0, 1);
    PQclear(res);
    return DLOCK_OK;
}

int dlock__pg_release(struct dlock_store *s, struct dlock_lock *lk)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[2] = {lk->name, lk->token};
    PGresult *res;
    int rc, live;

    if (ps->lease_mode) {
        rc = dlock__pg_ctl_run(ps, "release", Q_RELEASE_L, ps->text.release_l,
                               2, v, &res);
        if (rc != DLOCK_OK)
            return rc;
        live = dlock__pg_col_bool(res, 0, 0);
        PQclear(res);
    } else {
        rc = dlock__pg_held_drop(ps, lk, &live);
        dlock__pg_held_free(ps, lk);
        if (rc != DLOCK_OK)
            return rc;
    }
    if (!live)
        return dlock__lost(lk, "its lease ran out or it was broken");
    /* A leader resigned: its observers see it at once (elect.c). */
    if (lk->is_candidate)
        dlock__pg_notify(ps, lk->name);
    return DLOCK_OK;
}
