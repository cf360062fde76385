/*
 * renew.c - the renew thread's batches (extend_many): one UPDATE for many
 * leases, the batch's names, owners and leases sent as three arrays.
 *
 * Where it runs is where pg_extend() runs, so the answers mean the same:
 *
 * - Session mode: on the session that holds the lock's advisory key.
 *   Auto-renewed try-locks share the mux session, so a batch is mostly
 *   one statement; a lock that waited for its key has a session of its
 *   own and is its own group.  A session that fails or does not answer
 *   is gone, and with it every key on it: each lock of that group is
 *   LOST (dlock__pg_held_run() retires the session).
 * - Lease mode: on any pooled connection, under the pool's retry-once
 *   policy (renewing twice is harmless).
 *
 * The statement: sql/renew.sql ($1 names, $2 owners, $3 leases in ms).
 *
 * A lock whose row did not match (gone, or past its lease) is LOST, and
 * in session mode its key is let go at once, as pg_extend() does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

/* One statement's worth: the locks and their array parameters. */
struct group {
    struct dlock_lock *lk[DLOCK_RENEW_BATCH];
    int *rc[DLOCK_RENEW_BATCH];
    unsigned char hit[DLOCK_RENEW_BATCH];
    size_t n;
    char *arr[3];
};

/* Append s[0..len) to *p as a quoted array element. */
static char *put_elem(char *p, const char *s, size_t len)
{
    *p++ = '"';
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '"' || s[i] == '\\')
            *p++ = '\\';
        *p++ = s[i];
    }
    *p++ = '"';
    return p;
}

/* The three array literals of g (malloc'd into g->arr). */
static int build_arrays(struct group *g)
{
    size_t nlen = 3, olen = 3, tlen = 3;
    char *p;

    for (size_t i = 0; i < g->n; i++) {
        nlen += 2 * g->lk[i]->name_len + 3;
        olen += DLOCK_TOKEN_HEX + 3;
        tlen += 24;
    }
    g->arr[0] = malloc(nlen);
    g->arr[1] = malloc(olen);
    g->arr[2] = malloc(tlen);
    if (g->arr[0] == NULL || g->arr[1] == NULL || g->arr[2] == NULL)
        return dlock__enomem();
    for (int a = 0; a < 3; a++) {
        p = g->arr[a];
        *p++ = '{';
        for (size_t i = 0; i < g->n; i++) {
            const struct dlock_lock *lk = g->lk[i];

            if (i > 0)
                *p++ = ',';
            if (a == 0)
                p = put_elem(p, lk->name, lk->name_len);
            else if (a == 1)
                p = put_elem(p, lk->token, strlen(lk->token));
            else
                p += snprintf(p, 24, "%lld", (long long)lk->ttl_ms);
        }
        *p++ = '}';
        *p = '\0';
    }
    return DLOCK_OK;
}

/* What the UPDATE answered: rows renewed are OK, the others LOST. */
static void read_result(struct pg_store *ps, struct group *g, PGresult *res)
{
    int live;

    memset(g->hit, 0, g->n);
    for (int r = 0; r < PQntuples(res); r++) {
        int64_t i = dlock__pg_col_i64(res, r, 0, 0);

        if (i >= 1 && (size_t)i <= g->n)
            g->hit[i - 1] = 1;
    }
    for (size_t i = 0; i < g->n; i++) {
        if (g->hit[i]) {
            *g->rc[i] = DLOCK_OK;
            continue;
        }
        if (!ps->lease_mode)
            (void)dlock__pg_held_drop(ps, g->lk[i], &live);
        *g->rc[i] = dlock__lost(g->lk[i], "its lease ran out or it was "
                                          "broken");
    }
}

struct lease_call {
    struct pg_store *ps;
    struct group *g;
    PGresult *res;
};

static int lease_fn(void *conn, void *arg, int *dead)
{
    struct lease_call *k = arg;
    const char *v[3] = {k->g->arr[0], k->g->arr[1], k->g->arr[2]};
    int rc = dlock__pg_run(conn, k->ps->base.url, "renew", k->ps->text.renew[1],
                           3, v, k->ps->op_timeout_ms, &k->res, NULL);

    *dead = rc == DLOCK_EUNAVAIL;
    return rc;
}

/* One statement for g: on its session (g->lk[0]'s), or pooled. */
static void run_group(struct pg_store *ps, struct group *g)
{
    PGresult *res = NULL;
    int rc;

    for (size_t i = 0; i < g->n; i++)
        *g->rc[i] = DLOCK_ESTORE;
    rc = build_arrays(g);
    if (rc == DLOCK_OK && ps->lease_mode) {
        struct lease_call k = {ps, g, NULL};

        rc = dlock__pool_run(&ps->pool, lease_fn, &k);
        res = k.res;
    } else if (rc == DLOCK_OK) {
        const char *v[3] = {g->arr[0], g->arr[1], g->arr[2]};

        rc = dlock__pg_held_run(ps, g->lk[0], "renew", -1, ps->text.renew[0], 3,
                                v, &res);
    }
    if (rc == DLOCK_OK) {
        read_result(ps, g, res);
        PQclear(res);
    } else {
        /* The session's failure (DLOCK_LOST) is every key's on it. */
        for (size_t i = 0; i < g->n; i++)
            *g->rc[i] =
                rc == DLOCK_LOST
                    ? dlock__lost(g->lk[i], "its database session ended")
                    : rc;
    }
    for (int a = 0; a < 3; a++) {
        free(g->arr[a]);
        g->arr[a] = NULL;
    }
    g->n = 0;
}

int dlock__pg_extend_many(struct dlock_store *s,
                          struct dlock_lock *const *locks, size_t n, int *rcs)
{
    struct pg_store *ps = (struct pg_store *)s;
    struct group *g = calloc(1, sizeof(*g));
    unsigned char *done = calloc(n, 1);

    if (g == NULL || done == NULL) {
        free(g);
        free(done);
        return dlock__enomem();
    }
    for (size_t i = 0; i < n; i++) {
        const void *sess;

        if (done[i])
            continue;
        sess = ps->lease_mode ? NULL : dlock__pg_held_session(locks[i]);
        if (!ps->lease_mode && sess == NULL) {
            /* Its key is on no session any more. */
            rcs[i] = dlock__lost(locks[i], "its database session ended or "
                                           "it was let go");
            done[i] = 1;
            continue;
        }
        for (size_t j = i; j < n && g->n < DLOCK_RENEW_BATCH; j++) {
            if (done[j] ||
                (!ps->lease_mode && dlock__pg_held_session(locks[j]) != sess))
                continue;
            done[j] = 1;
            g->lk[g->n] = locks[j];
            g->rc[g->n++] = &rcs[j];
        }
        run_group(ps, g);
    }
    free(g);
    free(done);
    return DLOCK_OK;
}
