/*
 * renew.c - the renew thread's batches (extend_many): one round trip on
 * one pooled connection renews up to DLOCK_RENEW_BATCH leases and reads
 * back which of them it renewed.
 *
 * The batch travels as a derived table b(i, tok, ms, s[, k, cid]) of
 * literals, one row per lock: its position, owner token, lease in ms and
 * in seconds, and in lock mode its GET_LOCK key (utf8mb4 text, as every
 * key we send: see sql/frag_row_key.sql) and its pinned connection's id.
 * Three statements go in one packet (the connection allows
 * multi-statements, see conn.c):
 *
 *   SET @dlock_now = now in ms;
 *   UPDATE table AS l STRAIGHT_JOIN (b) ON l.owner = b.tok
 *     SET expires_ms = @dlock_now + b.ms, created, ttl
 *     WHERE l.name IN (keys) AND live [AND l.connection_id = b.cid
 *       AND IS_USED_LOCK(b.k) = b.cid];
 *   SELECT b.i FROM the same join WHERE the same AND
 *     l.expires_ms = @dlock_now + b.ms
 *
 * Each row's condition is extend()'s for the lock whose token owns it
 * (the token is random and unique to one acquire: the row it owns has
 * that lock's name; `name IN` is there for the index): the row is there,
 * ours, not past its lease, and in lock mode recorded for the lock's
 * pinned connection, whose session still holds the GET_LOCK of the
 * lock's own key.  extend() asks `= CONNECTION_ID()` on the pinned
 * connection; here the id is the one read when it connected, and
 * IS_USED_LOCK answers the same from any session.  A pinned session that
 * ended (killed, timed out, the server restarted) holds no GET_LOCK, so
 * its lock is LOST as before.  The SELECT finds exactly the rows the
 * UPDATE renewed: only this UPDATE (the core holds each lock's mu) sets a
 * row it owns to @dlock_now + its lease.
 *
 * Where it runs: a pooled connection under the pool's retry-once policy
 * in both modes (renewing twice is harmless).  Its failure says nothing
 * of the pinned sessions, so it is a transient failure of every lock of
 * the batch (the core retries), not a loss.
 *
 * Two things stay per lock, as extend() does them:
 * - A lock found LOST is tidied (its row deleted, its GET_LOCK dropped
 *   if its session still holds it): on its pinned connection, or in lease
 *   mode on the batch's.  Rare, and each is one lock's end.
 * - A pinned connection that has sat idle for half the server's
 *   wait_timeout is renewed through extend() on it, which uses it: the
 *   batch alone never would, and the server would end the session (and
 *   its GET_LOCK) after wait_timeout.  With the default 8 h, that is one
 *   extra round trip per lock every 4 h.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

/* One statement's worth. */
struct batch {
    struct my_store *ms;
    struct dlock_lock *lk[DLOCK_RENEW_BATCH];
    int *rc[DLOCK_RENEW_BATCH];
    unsigned char hit[DLOCK_RENEW_BATCH];
    size_t n;
};

static struct my_lock *ml_of(const struct dlock_lock *lk)
{
    return lk->priv;
}

/* The text of a batch of n locks (sql/renew.sql), '?' for every value:
 * its {{join}} (renew_join.sql, a renew_row_*.sql per lock) and {{where}}
 * (renew_where.sql, a renew_key_*.sql per lock) filled for n.  The one
 * text completed per call, not once at open: its length is the batch's
 * (docs/internals.md).  Malloc'd; NULL (the error set) on a failure. */
char *dlock__my_renew_text(const struct my_sql *q, size_t n)
{
    struct sb rows = {0}, keys = {0};
    char *join = NULL, *where = NULL, *text = NULL;

    for (size_t i = 0; i < n; i++) {
        dlock__my_sb_add(&rows, "%s", q->renew_row[i != 0]);
        dlock__my_sb_add(&keys, "%s", q->renew_key[i != 0]);
    }
    if (rows.oom || keys.oom) {
        (void)dlock__enomem();
        goto out;
    }
    join = dlock__text_expand(q->renew_join,
                              (const char *const[]){"rows", rows.p, NULL});
    where = dlock__text_expand(q->renew_where,
                               (const char *const[]){"keys", keys.p, NULL});
    if (join != NULL && where != NULL)
        text = dlock__text_expand(
            q->renew,
            (const char *const[]){"join", join, "where", where, NULL});
out:
    dlock__my_sb_free(&rows);
    dlock__my_sb_free(&keys);
    free(join);
    free(where);
    return text;
}

/* The batch's statements: its text with its values, the join's and the
 * WHERE's, each twice (the UPDATE's and the SELECT's).  A row: position,
 * token, ttl in ms and in s, and in lock mode the GET_LOCK key and the
 * pinned session. */
static void sb_renew(struct sb *b, struct conn *c, const struct batch *g,
                     int lease)
{
    size_t per = lease ? 4 : 6, half = g->n * (per + 1), k = 0;
    struct my_val *v = malloc(2 * half * sizeof(*v));
    char *text = dlock__my_renew_text(&g->ms->sql, g->n);

    if (v == NULL || text == NULL) {
        b->oom = 1;
        free(v);
        free(text);
        return;
    }
    for (size_t i = 0; i < g->n; i++) {
        const struct dlock_lock *lk = g->lk[i];
        long long ms = (long long)lk->ttl_ms;

        v[k++] = MV_U(i);
        v[k++] = MV_TOK(lk);
        v[k++] = MV_I(ms);
        v[k++] = MV_I((ms + 999) / 1000);
        if (!lease) {
            v[k++] = MV_KEY(ml_of(lk));
            v[k++] = MV_U(ml_of(lk)->c->id);
        }
    }
    for (size_t i = 0; i < g->n; i++)
        v[k++] = MV_KEY(ml_of(g->lk[i]));
    memcpy(v + half, v, half * sizeof(*v));
    dlock__my_bind(b, c, text, v, 2 * half);
    free(v);
    free(text);
}

/* Mark the positions the SELECT answered. */
static void read_hits(struct batch *g, MYSQL_RES *res)
{
    MYSQL_ROW row;

    while ((row = mysql_fetch_row(res)) != NULL) {
        unsigned long long i;

        if (row[0] == NULL)
            continue;
        i = strtoull(row[0], NULL, 10);
        if (i < g->n)
            g->hit[i] = 1;
    }
}

/* Send b's three statements and read their three results (all of them:
 * a connection with results left unread is out of sync).  An InnoDB
 * deadlock or lock wait timeout ends the packet at that statement, which
 * rolled back alone (autocommit): the whole packet goes again. */
static int run_batch(struct my_store *ms, struct conn *c, struct sb *b,
                     struct batch *g)
{
    if (b->oom)
        return dlock__enomem();
    for (int tries = 0;; tries++) {
        int st, step = 0, bad = 0;
        unsigned e;

        memset(g->hit, 0, g->n);
        c->used_ms = dlock__now_ms();
        st = mysql_real_query(c->db, b->p, (unsigned long)b->len);
        while (st == 0) {
            MYSQL_RES *res = mysql_store_result(c->db);

            if (res != NULL) {
                if (step == 2)
                    read_hits(g, res);
                else
                    bad = 1;
                mysql_free_result(res);
            } else if (mysql_field_count(c->db) != 0) {
                st = 1; /* the result did not arrive */
                break;
            } else if (step == 2) {
                bad = 1;
            }
            step++;
            st = mysql_next_result(c->db);
        }
        if (st == -1) {
            if (bad || step != 3)
                return dlock__seterr(DLOCK_ESTORE,
                                     "renew on %s: %d results, not the "
                                     "3 expected",
                                     ms->base.url, step);
            return DLOCK_OK;
        }
        e = mysql_errno(c->db);
        if ((e != ER_LOCK_DEADLOCK && e != ER_LOCK_WAIT_TIMEOUT) || tries >= 20)
            return dlock__my_db_err(ms, c, "renew");
        dlock__sleep_ms(tries < 3 ? 0 : 1);
    }
}

/* Lease mode tidies its lost rows on the batch's connection (as extend()
 * does on its pooled one). */
static void tidy_lease(struct batch *g, struct conn *c)
{
    for (size_t i = 0; i < g->n; i++)
        if (!g->hit[i])
            dlock__my_tidy_lost(g->ms, c, g->lk[i], ml_of(g->lk[i]));
}

static int batch_fn(void *conn, void *arg, int *dead)
{
    struct batch *g = arg;
    struct conn *c = conn;
    struct sb b = {0};
    uint64_t w;
    int rc;

    c->name = NULL;
    sb_renew(&b, c, g, g->ms->lease_mode);
    w = dlock__my_watch(g->ms, c);
    rc = run_batch(g->ms, c, &b, g);
    dlock__io_unwatch(w);
    dlock__my_sb_free(&b);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    if (rc == DLOCK_OK && g->ms->lease_mode)
        tidy_lease(g, c);
    return rc;
}

/* One round trip for g, then each lock's answer. */
static void run_group(struct batch *g)
{
    struct my_store *ms = g->ms;
    int rc = dlock__pool_run(&ms->pool, batch_fn, g);

    for (size_t i = 0; i < g->n; i++) {
        struct dlock_lock *lk = g->lk[i];
        struct my_lock *ml = ml_of(lk);

        if (rc != DLOCK_OK) {
            *g->rc[i] = rc;
            continue;
        }
        if (g->hit[i]) {
            *g->rc[i] = DLOCK_OK;
            continue;
        }
        if (!ms->lease_mode) {
            dlock__my_tidy_lost(ms, ml->c, lk, ml);
            if (mysql_errno(ml->c->db) != 0 &&
                dlock__my_conn_error(mysql_errno(ml->c->db))) {
                /* Its session is gone (as its GET_LOCK was). */
                dlock__pool_discard(&ms->pool, ml->c);
                ml->c = NULL;
            }
        }
        *g->rc[i] = dlock__lost(lk, "its lease ran out or it was broken");
    }
    g->n = 0;
}

int dlock__my_extend_many(struct dlock_store *s,
                          struct dlock_lock *const *locks, size_t n, int *rcs)
{
    struct my_store *ms = (struct my_store *)s;
    struct batch *g = calloc(1, sizeof(*g));
    int64_t now = dlock__now_ms();

    if (g == NULL)
        return dlock__enomem();
    g->ms = ms;
    for (size_t i = 0; i < n; i++) {
        struct dlock_lock *lk = locks[i];
        struct my_lock *ml = ml_of(lk);

        if (ml == NULL || (!ms->lease_mode && ml->c == NULL)) {
            rcs[i] = dlock__lost(lk, "its connection was lost earlier");
            continue;
        }
        if (!ms->lease_mode && ml->c->idle_max_ms > 0 &&
            now - ml->c->used_ms >= ml->c->idle_max_ms / 2) {
            /* Keep its session from wait_timeout: renew on it. */
            rcs[i] = dlock__my_extend(s, lk, lk->ttl_ms);
            continue;
        }
        g->lk[g->n] = lk;
        g->rc[g->n++] = &rcs[i];
        if (g->n == DLOCK_RENEW_BATCH)
            run_group(g);
    }
    if (g->n > 0)
        run_group(g);
    free(g);
    return DLOCK_OK;
}
