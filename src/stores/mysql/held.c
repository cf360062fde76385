/*
 * held.c - the MySQL store's calls on a held lock: extend, ttl_left and
 * release (on the lock's pinned connection, or in lease mode a pooled
 * one), and forgetting a lock that is not held or a fork child's copy.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

/* --- held locks --------------------------------------------------------- */

/* The pinned connection failed: its session, and with it our GET_LOCK,
 * is gone (or will be when we close it), so the lock is lost. */
static int pinned_failed(struct my_store *ms, struct dlock_lock *lk,
                         struct my_lock *ml)
{
    char why[512];

    snprintf(why, sizeof(why),
             "its connection to %s failed (%s), and its "
             "GET_LOCK went with the session",
             ms->base.url, mysql_error(ml->c->db));
    dlock__pool_discard(&ms->pool, ml->c);
    ml->c = NULL;
    return dlock__lost(lk, why);
}

/* The pinned connection failed under the release itself: the lock was
 * ours until then and goes with the session (or its lease); only the
 * goodbye is unconfirmed, as dlock_release() says of a store it could
 * not tell (rc, not DLOCK_LOST). */
static int release_failed(struct my_store *ms, struct dlock_lock *lk,
                          struct my_lock *ml, int rc)
{
    char why[512];

    snprintf(why, sizeof(why), "%s", mysql_error(ml->c->db));
    dlock__pool_discard(&ms->pool, ml->c);
    ml->c = NULL;
    return dlock__seterr(rc,
                         "lock '%s': its release could not be "
                         "confirmed: its connection to %s failed (%s); "
                         "its GET_LOCK goes with the session",
                         lk->name, ms->base.url, why);
}

struct held_call;
static int release_op(struct held_call *k, struct conn *c);

/* A call on a held lock: op runs on c, the lock's pinned connection or in
 * lease mode a pooled one, and returns DLOCK_OK, DLOCK_LOST (having
 * tidied up) or the failure of its statement. */
struct held_call {
    struct my_store *ms;
    struct dlock_lock *lk;
    struct my_lock *ml;
    int (*op)(struct held_call *k, struct conn *c);
    int64_t ttl_ms, left_ms;
};

static int held_fn(void *conn, void *arg, int *dead)
{
    struct held_call *k = arg;
    struct conn *c = conn;
    uint64_t w = dlock__my_watch(k->ms, c);
    int rc = k->op(k, c);

    dlock__io_unwatch(w);

    *dead = rc != DLOCK_OK && rc != DLOCK_LOST &&
            dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

/* Run k->op where the lock lives.  A pooled connection is under
 * dlock__pool's retry-once policy; the pinned one's failure means its
 * session, and with it our GET_LOCK, is gone: the lock is lost. */
static int held_run(struct held_call *k)
{
    uint64_t w;
    int rc;

    if (k->ml == NULL || (!k->ms->lease_mode && k->ml->c == NULL))
        return dlock__lost(k->lk, "its connection was lost earlier");
    if (k->ml->c == NULL)
        return dlock__pool_run(&k->ms->pool, held_fn, k);
    /* Within the lease (the connector takes no deadline per call). */
    w = dlock__my_watch(k->ms, k->ml->c);
    rc = k->op(k, k->ml->c);
    dlock__io_unwatch(w);
    if (rc != DLOCK_OK && rc != DLOCK_LOST)
        rc = k->op == release_op ? release_failed(k->ms, k->lk, k->ml, rc)
                                 : pinned_failed(k->ms, k->lk, k->ml);
    return rc;
}

static int extend_op(struct held_call *k, struct conn *c)
{
    struct sb b = {0};
    int rc;

    /* sql/extend.sql: in lease mode the last '?' is not there. */
    MY_BIND(&b, c, k->ms->sql.extend, MV_I(k->ttl_ms),
            MV_I((k->ttl_ms + 999) / 1000), MV_KEY(k->ml), MV_TOK(k->lk),
            MV_KEY(k->ml));
    rc = dlock__my_run(k->ms, c, &b, NULL, "extend");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && mysql_affected_rows(c->db) != 1) {
        dlock__my_tidy_lost(k->ms, c, k->lk, k->ml);
        rc = dlock__lost(k->lk, "its lease ran out or it was broken");
    }
    return rc;
}

int dlock__my_extend(struct dlock_store *s, struct dlock_lock *lk,
                     int64_t ttl_ms)
{
    struct held_call k = {
        (struct my_store *)s, lk, lk->priv, extend_op, ttl_ms, 0};

    return held_run(&k);
}

static int ttl_op(struct held_call *k, struct conn *c)
{
    struct sb b = {0};
    long long left = 0;
    int found, rc;

    MY_BIND(&b, c, k->ms->sql.ttl_left, MV_KEY(k->ml), MV_TOK(k->lk),
            MV_KEY(k->ml));
    rc = dlock__my_run_int(k->ms, c, &b, &left, &found, "assert_ttl");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && !found) {
        dlock__my_tidy_lost(k->ms, c, k->lk, k->ml);
        rc = dlock__lost(k->lk, "its lease ran out or it was broken");
    } else if (rc == DLOCK_OK) {
        k->left_ms = left > 0 ? left : 1;
    }
    return rc;
}

int dlock__my_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                       int64_t *left_ms)
{
    struct held_call k = {(struct my_store *)s, lk, lk->priv, ttl_op, 0, 0};
    int rc = held_run(&k);

    if (rc == DLOCK_OK)
        *left_ms = k.left_ms;
    return rc;
}

/* Run the release's DELETE in b (freed here): exactly our row must go,
 * else the lock was lost (its row and GET_LOCK are tidied away). */
static int run_release(struct held_call *k, struct conn *c, struct sb *b)
{
    int rc = dlock__my_run(k->ms, c, b, NULL, "release");

    dlock__my_sb_free(b);
    if (rc != DLOCK_OK)
        return rc;
    if (mysql_affected_rows(c->db) != 1) {
        dlock__my_tidy_lost(k->ms, c, k->lk, k->ml);
        return dlock__lost(k->lk, "its lease ran out or it was broken");
    }
    return DLOCK_OK;
}

/* Delete the row first, then drop the GET_LOCK: a waiter woken by the
 * GET_LOCK finds the row gone. */
static int release_op(struct held_call *k, struct conn *c)
{
    struct sb b = {0};
    int rc;

    if (!k->ms->lease_mode && k->ms->fast && k->lk->limit == 1) {
        /* One statement: the row goes, and with it the GET_LOCK, only if
         * the row is ours, recorded for this connection and this session
         * holds the GET_LOCK (RELEASE_LOCK answers 1 only then; IF runs
         * it only when the rest holds).
         * No lease check here: this session held the GET_LOCK throughout
         * (it is given up only by this statement or the session's end,
         * and a waiter takes over a holder past its lease only by KILLing
         * its session), so nobody else held the name meanwhile; and the
         * core has already answered LOST for a lease past its local end,
         * which is never later than the server's.  The check cost ~9% of
         * the server's CPU per cycle (NOW(3) in a DELETE's WHERE).
         * The table lock of a MEMORY (or MyISAM) table keeps a waiter
         * woken by the GET_LOCK from reading the row until it is gone. */
        MY_BIND(&b, c, k->ms->sql.release_fast, MV_KEY(k->ml), MV_TOK(k->lk),
                MV_KEY(k->ml));
        return run_release(k, c, &b);
    }
    if (!k->ms->lease_mode &&
        __atomic_load_n(&k->ms->have_proc, __ATOMIC_RELAXED)) {
        /* One statement: CALL NAME_rel1 (sql/create_proc_rel.sql). */
        long long n = 0;

        MY_BIND(&b, c, k->ms->sql.release_call, MV_KEY(k->ml), MV_TOK(k->lk));
        rc = dlock__my_call(k->ms, c, &b, &n, NULL, "release");
        dlock__my_sb_free(&b);
        if (rc == DLOCK_OK && n != 1) {
            dlock__my_tidy_lost(k->ms, c, k->lk, k->ml);
            return dlock__lost(k->lk, "its lease ran out or it was broken");
        }
        if (rc == DLOCK_OK && k->lk->limit > 1)
            dlock__my_sem_tidy(k->ms, c, k->lk, k->ml);
        if (rc != DLOCK_ENOTSUP)
            return rc;
    }
    MY_BIND(&b, c, k->ms->sql.release, MV_KEY(k->ml), MV_TOK(k->lk),
            MV_KEY(k->ml));
    rc = run_release(k, c, &b);
    if (rc != DLOCK_OK)
        return rc;
    if (!k->ms->lease_mode)
        dlock__my_release_getlock(k->ms, c, k->ml);
    if (k->lk->limit > 1)
        dlock__my_sem_tidy(k->ms, c, k->lk, k->ml);
    return DLOCK_OK;
}

int dlock__my_release(struct dlock_store *s, struct dlock_lock *lk)
{
    struct my_store *ms = (struct my_store *)s;
    struct held_call k = {ms, lk, lk->priv, release_op, 0, 0};
    int rc;

    if (k.ml == NULL)
        return dlock__lost(lk, "it was not held");
    lk->priv = NULL;
    rc = held_run(&k);
    /* The pinned connection (if it did not fail) goes back to the pool,
     * unless its last statement failed. */
    if (k.ml->c != NULL)
        dlock__pool_put(&ms->pool, k.ml->c);
    dlock__my_free_lock(ms, k.ml);
    return rc;
}

/* A lock not held: a wait given up (its connection goes back), or a lost
 * lock (its row and GET_LOCK tidied away as release would). */
int dlock__my_forget(struct dlock_store *s, struct dlock_lock *lk)
{
    struct my_lock *ml = lk->priv;

    if (!ml->held)
        dlock__my_unwait((struct my_store *)s, lk);
    else
        (void)dlock__my_release(s, lk);
    return DLOCK_OK;
}

/* In a fork child: the pinned connection is the parent's.  Its socket is
 * pointed at /dev/null first, so that mysql_close() frees the memory
 * while its goodbye goes nowhere and the parent's session lives on. */
void dlock__my_forget_inherited(struct dlock_store *s, struct dlock_lock *lk)
{
    struct my_lock *ml = lk->priv;

    (void)s;
    lk->priv = NULL;
    if (ml->c != NULL &&
        dlock__fd_detach((int)mysql_get_socket(ml->c->db)) == 0) {
        mysql_close(ml->c->db);
        free(ml->c);
    }
    free(ml);
}
