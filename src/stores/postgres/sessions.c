/*
 * sessions.c - session mode's database sessions (struct sess, pg.h): a
 * session on a pooled connection, the mux that try-locks share, the
 * advisory-key quota, and what a held lock runs on its session (its
 * statements, its release, forgetting it).
 *
 * Sessions' connections come from, and go back to, the store's pool; one
 * that may still hold a key nobody owns ("dirty") is closed instead.  The
 * acquire that puts a lock on a session: acquire.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

/* Advisory keys a holder of lk takes: a semaphore's slot, semaphore key
 * and K; a lock's K. */
int dlock__pg_keys_of(const struct dlock_lock *lk)
{
    return lk->limit > 1 ? 3 : 1;
}

/* Count lk's keys against the handle's limit before taking them: every
 * session advisory key is an entry of the server's shared lock table,
 * and when those run out every client of the server gets "out of shared
 * memory", new connections included. */
int dlock__pg_keys_take(struct pg_store *ps, const struct dlock_lock *lk)
{
    int64_t held;
    /* What this acquire needs: "holds 0" alone left a user who asked
     * max_keys=2 for a semaphore wondering. */
    const char *needs = lk->limit > 1
                            ? "a semaphore holder needs 3 advisory keys "
                              "(its slot's, the semaphore's, the name's)"
                            : "a lock needs 1 advisory key";

    if (dlock__quota_take(&ps->keys, dlock__pg_keys_of(lk), &held))
        return DLOCK_OK;
    if (!ps->keys.is_auto)
        return dlock__seterr(DLOCK_ESTORE,
                             "postgres acquire of '%s': %s; this handle "
                             "holds %lld, and max_keys=%lld (%s)",
                             lk->name, needs, (long long)held,
                             (long long)ps->keys.max, ps->base.url);
    return dlock__seterr(
        DLOCK_ESTORE,
        "postgres acquire of '%s': %s; this handle holds %lld, half of "
        "the server's lock table (%lld entries: "
        "max_locks_per_transaction %lld x its backends); more could leave "
        "every client of the server with \"out of shared memory\". Raise "
        "max_locks_per_transaction, or set ?max_keys=N (0: no limit), or "
        "use ?mode=lease (%s)",
        lk->name, needs, (long long)held, (long long)ps->keys.server,
        (long long)ps->locks_per_xact, ps->base.url);
}

/* A session on a pooled connection, or with `fresh` on a new one (the
 * retry of dlock__pool's policy). */
int dlock__pg_sess_new(struct pg_store *ps, struct sess **out, int fresh)
{
    struct sess *s = calloc(1, sizeof(*s));
    void *c = NULL;
    int pooled = 0, rc;

    if (s == NULL)
        return dlock__enomem();
    rc = fresh ? dlock__pool_open(&ps->pool, &c)
               : dlock__pool_get(&ps->pool, &c, &pooled);
    if (rc != DLOCK_OK) {
        free(s);
        return rc;
    }
    s->c = c;
    s->reused = pooled;
    {
        uint64_t r = 0;

        if (dlock__random(&r, sizeof(r)) != 0)
            r = ((uint64_t)dlock__rand32() << 32) | dlock__rand32();
        snprintf(s->id, sizeof(s->id), "%lld",
                 (long long)(r & 0x7fffffffffffffffULL));
    }
    pthread_mutex_init(&s->mu, NULL);
    s->refs = 1;
    s->own = 1; /* until dlock__pg_mux_get makes it the mux */
    *out = s;
    return DLOCK_OK;
}

static void sess_free(struct pg_store *ps, struct sess *s)
{
    if (s->dirty)
        dlock__pool_discard(&ps->pool, s->c);
    else
        dlock__pool_put(&ps->pool, s->c);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void dlock__pg_sess_unref(struct pg_store *ps, struct sess *s)
{
    int last;

    pthread_mutex_lock(&ps->sess_mu);
    last = --s->refs == 0 && !s->is_mux;
    pthread_mutex_unlock(&ps->sess_mu);
    if (last)
        sess_free(ps, s);
}

/* No new locks on s (it is gone or dirty); caller holds s->mu. */
void dlock__pg_sess_retire(struct pg_store *ps, struct sess *s, int gone)
{
    if (gone && s->c != NULL) {
        PQfinish(s->c);
        s->c = NULL;
    }
    pthread_mutex_lock(&ps->sess_mu);
    if (ps->mux == s) {
        ps->mux = NULL;
        s->is_mux = 0;
        /* The store's own reference goes; holders keep theirs. */
        s->refs--;
    }
    pthread_mutex_unlock(&ps->sess_mu);
}

/* The mux session, with a reference taken (a new one on a fresh
 * connection with `fresh`, unless another thread made one meanwhile).
 * *reused: another thread has it, so it may have run statements and
 * died idle since (read here, under sess_mu: s->reused itself is written
 * under s->mu by whoever runs a statement on it). */
int dlock__pg_mux_get(struct pg_store *ps, struct sess **out, int fresh,
                      int *reused)
{
    struct sess *s;
    int rc;

    pthread_mutex_lock(&ps->sess_mu);
    s = ps->mux;
    if (s != NULL)
        s->refs++;
    pthread_mutex_unlock(&ps->sess_mu);
    if (s != NULL) {
        *out = s;
        *reused = 1;
        return DLOCK_OK;
    }
    rc = dlock__pg_sess_new(ps, &s, fresh); /* refs 1: ours */
    if (rc != DLOCK_OK)
        return rc;
    *reused = s->reused; /* a pooled connection: not yet shared */
    pthread_mutex_lock(&ps->sess_mu);
    if (ps->mux == NULL) {
        ps->mux = s;
        s->is_mux = 1;
        s->own = 0; /* and never again, even once retired */
        s->refs++;  /* the store's */
    } else {
        /* Another thread installed one meanwhile: use that. */
        struct sess *mine = s;

        s = ps->mux;
        s->refs++;
        pthread_mutex_unlock(&ps->sess_mu);
        dlock__pg_sess_unref(ps, mine);
        *out = s;
        *reused = 1;
        return DLOCK_OK;
    }
    pthread_mutex_unlock(&ps->sess_mu);
    *out = s;
    return DLOCK_OK;
}

/* A failed acquire statement may have taken session keys (advisory locks
 * are not transactional): let them go.  A shared session (other locks
 * live on it) takes no new ones and is closed once they are gone; a
 * session of the attempt's own unlocks everything.  DLOCK_OK, or the
 * error that retired the session. */
int dlock__pg_let_keys_go(struct pg_store *ps, struct sess *s)
{
    PGresult *r;
    int rc;

    if (s->is_mux) {
        s->dirty = 1;
        dlock__pg_sess_retire(ps, s, 0);
        return DLOCK_OK;
    }
    rc = dlock__pg_runp(s->c, ps->base.url, "acquire", Q_UNLOCK_ALL,
                        ps->text.unlock_all, 0, NULL, ps->op_timeout_ms, &r,
                        NULL);
    if (rc != DLOCK_OK) {
        dlock__pg_sess_retire(ps, s, 1);
        return rc;
    }
    PQclear(r);
    return DLOCK_OK;
}

/* A statement for a held lock, on its session.  The session's failure
 * means its advisory locks are gone: the lock is lost. */
int dlock__pg_held_run(struct pg_store *ps, struct dlock_lock *lk,
                       const char *what, int id, const char *sql, int n,
                       const char *const *v, PGresult **res)
{
    return dlock__pg_held_run_st(ps, lk, what, id, sql, n, v, res, NULL);
}

int dlock__pg_held_run_st(struct pg_store *ps, struct dlock_lock *lk,
                          const char *what, int id, const char *sql, int n,
                          const char *const *v, PGresult **res, char state[6])
{
    struct held *h = lk->priv;
    struct sess *s;
    char why[600];
    int rc;

    if (h == NULL || !h->keyed)
        return dlock__lost(lk, "its database session ended or it was let go");
    s = h->s;
    pthread_mutex_lock(&s->mu);
    if (s->c == NULL) {
        pthread_mutex_unlock(&s->mu);
        h->keyed = 0;
        return dlock__lost(lk, "its database session ended");
    }
    rc = dlock__pg_runq(s->c, ps->base.url, what, id, sql, n, v,
                        ps->op_timeout_ms, res, state);
    if (rc == DLOCK_EUNAVAIL) {
        snprintf(why, sizeof(why), "its database session ended (%s)",
                 dlock_errmsg());
        dlock__pg_sess_retire(ps, s, 1);
        pthread_mutex_unlock(&s->mu);
        h->keyed = 0;
        /* The release itself cut off: the lock was ours until now, and
         * goes with the session (or its lease); only the goodbye is
         * unconfirmed, as dlock_release() says of a store it could not
         * tell.  (A session killed by release --force since the last
         * renewal reads the same way: the client cannot tell the two
         * apart here.) */
        if (strcmp(what, "release") == 0)
            return dlock__seterr(DLOCK_EUNAVAIL,
                                 "lock '%s': its release could not be "
                                 "confirmed: %s",
                                 lk->name, why);
        return dlock__lost(lk, why);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Delete our row and let our key go (one level: other locks on the same
 * session keep theirs).  *live: the row was there and within its lease. */
int dlock__pg_held_drop(struct pg_store *ps, struct dlock_lock *lk, int *live)
{
    struct held *h = lk->priv;
    char sl[16];
    const char *v[3] = {lk->name, lk->token, sl};
    int q = lk->limit > 1 ? Q_RELEASE_M
            : lk->shared  ? Q_RELEASE_S
                          : Q_RELEASE_X1;
    PGresult *res;
    int rc, gone;

    *live = 0;
    if (h == NULL || !h->keyed)
        return DLOCK_OK;
    snprintf(sl, sizeof(sl), "%d", h->slot);
    rc = dlock__pg_held_run(ps, lk, "release", q, ps->sql[q],
                            lk->limit > 1 ? 3 : 2, v, &res);
    if (rc == DLOCK_LOST)
        return rc;
    h->keyed = 0;
    if (rc != DLOCK_OK) {
        /* Not known whether the key went: no new locks on that session,
         * and it is closed once its other locks are gone. */
        pthread_mutex_lock(&h->s->mu);
        h->s->dirty = 1;
        dlock__pg_sess_retire(ps, h->s, 0);
        pthread_mutex_unlock(&h->s->mu);
        return rc;
    }
    *live = dlock__pg_col_bool(res, 0, 0) && dlock__pg_col_bool(res, 0, 1);
    gone = PQntuples(res) < 1 || PQgetisnull(res, 0, 0);
    PQclear(res);
    if (q == Q_RELEASE_X1 && gone) {
        /* No row of our owner: release --force broke it (renamed it),
         * or it is gone.  Delete a broken one: our session may take the
         * name again, and must keep no row it does not hold. */
        pthread_mutex_lock(&h->s->mu);
        if (h->s->c != NULL &&
            dlock__pg_runp(h->s->c, ps->base.url, "release", Q_DROP_BROKEN,
                           ps->text.drop_broken, 2, v, ps->op_timeout_ms, &res,
                           NULL) == DLOCK_OK) {
            PQclear(res);
        } else if (h->s->c != NULL) {
            h->s->dirty = 1;
            dlock__pg_sess_retire(ps, h->s, 0);
        }
        pthread_mutex_unlock(&h->s->mu);
    }
    return DLOCK_OK;
}

/* Forget lk's session reference and its priv. */
void dlock__pg_held_free(struct pg_store *ps, struct dlock_lock *lk)
{
    struct held *h = lk->priv;

    if (h == NULL)
        return;
    dlock__quota_give(&ps->keys, h->nkeys);
    dlock__pg_sess_unref(ps, h->s);
    free(h);
    lk->priv = NULL;
}

/* A lock lost, or a wait given up: let go of what the session may still
 * hold for it, then of the session. */
int dlock__pg_forget(struct dlock_store *s, struct dlock_lock *lk)
{
    struct pg_store *ps = (struct pg_store *)s;
    int live;

    (void)dlock__pg_held_drop(ps, lk, &live);
    dlock__pg_held_free(ps, lk);
    return DLOCK_OK;
}

/* In a fork child.  No mutexes: a parent thread may have held one at the
 * fork, and nobody else uses this copy of the store here (the core
 * refuses it).  A session still referenced (the mux, or other inherited
 * locks) stays reachable; the last reference frees it without ending the
 * parent's session: libpq's goodbye goes to /dev/null. */
void dlock__pg_forget_inherited(struct dlock_store *st, struct dlock_lock *lk)
{
    struct held *h = lk->priv;
    struct sess *s = h->s;

    lk->priv = NULL;
    free(h);
    if (--s->refs > 0 || s->is_mux)
        return;
    if (s->c != NULL && dlock__fd_detach(PQsocket(s->c)) == 0)
        PQfinish(s->c);
    free(s);
    (void)st;
}

void dlock__pg_sessions_close(struct pg_store *ps)
{
    if (ps->mux != NULL)
        sess_free(ps, ps->mux);
    ps->mux = NULL;
}

/* The session lk's key is on (renew.c groups a batch by it), or NULL when
 * it is on none any more. */
const void *dlock__pg_held_session(const struct dlock_lock *lk)
{
    const struct held *h = lk->priv;

    return h != NULL && h->keyed ? h->s : NULL;
}
