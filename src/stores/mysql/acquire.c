/*
 * acquire.c - one attempt at a MySQL lock (or a semaphore's slot): in
 * session mode the key's GET_LOCK, taken by one of three strategies (the
 * one-statement INSERT ... SELECT, the procedure, the plain GET_LOCK,
 * with what to do when another session holds it), then the row and its
 * fence.  The row's own statements: row.c; a semaphore's head and slots:
 * head.c, semaphore.c; waiter rows: waiter.c; the try and the wait's
 * slices around an attempt: try_wait.c.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "my.h"

static int read_row(struct my_store *ms, struct conn *c,
                    const struct my_lock *ml, struct holder *h, int *found)
{
    return dlock__my_read_row(ms, c, ml, h, found, 0);
}

/* lk was taken by a statement sent at `sent` (this process's clock) that
 * wrote a lease of a whole ttl on the server's clock, which started when
 * the server ran it: no earlier than `sent`.  The lease this process
 * counts starts there too, not when the attempt or the wait slice began
 * (the core's guess): a takeover comes after a wait for the old holder's
 * lease, and after a KILL, which must not come out of the new one. */
static void lease_from(struct dlock_lock *lk, int64_t sent)
{
    if (sent + lk->ttl_ms > lk->lease_end)
        lk->lease_end = sent + lk->ttl_ms;
}

/* Send a transaction's START, COMMIT or ROLLBACK (sql/tx_*.sql). */
static int tx(struct conn *c, const char *sql)
{
    return mysql_real_query(c->db, sql, (unsigned long)strlen(sql));
}

/* Insert our row, then take a fence as its holder and write it into the
 * row, in one transaction where the tables are transactional (InnoDB:
 * one commit; on MyISAM each statement stands alone, and a failure
 * deletes the row again).  *dup: a row for the key is there already
 * (nothing changed). */
static int insert_row(struct my_store *ms, struct conn *c,
                      struct dlock_lock *lk, const struct my_lock *ml, int *dup)
{
    struct sb b = {0};
    uint64_t fence = 0;
    int64_t sent = 0;
    int rc = DLOCK_OK;

    for (int tries = 0;; tries++) {
        unsigned e;

        *dup = 0;
        if (tx(c, ms->sql.tx_begin) != 0) {
            rc = dlock__my_db_err(ms, c, "acquire");
            break;
        }
        dlock__my_sb_reset(&b);
        /* sql/insert_row.sql: a lock's has no '?' for limit and slot */
        MY_BIND(&b, c, ms->sql.insert_row[lk->limit > 1], MV_KEY(ml),
                MV_I((lk->ttl_ms + 999) / 1000), MV_I(ms->lease_mode ? 0 : 1),
                MV_TOK(lk), MV_I(lk->ttl_ms), MV_Z(dlock__hostname()),
                MV_I(dlock__pid()), MV_S(lk->name, lk->name_len),
                MV_U(lk->limit), MV_I(ml->slot));
        if (b.oom) {
            rc = dlock__enomem();
            goto rollback;
        }
        /* The row's lease starts when the server runs this INSERT. */
        sent = dlock__now_ms();
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0) {
            if (mysql_errno(c->db) == ER_DUP_ENTRY) {
                *dup = 1;
                rc = DLOCK_OK;
                goto rollback;
            }
            goto failed;
        }
        if (mysql_warning_count(c->db) != 0) {
            /* Without a strict sql_mode the server stores what the column
             * cannot hold as '?' and warns: that row is not our key.  A
             * MyISAM table keeps it through ROLLBACK, so it goes by its
             * owner token (the name in it is not ours to match). */
            (void)tx(c, ms->sql.tx_rollback);
            dlock__my_sb_reset(&b);
            MY_BIND(&b, c, ms->sql.delete_by_owner, MV_TOK(lk));
            (void)dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
            rc = dlock__my_unstorable(
                ms, lk->name, "the server stored it with substitutions");
            break;
        }
        if (ms->have_fseq) {
            /* The fence sequence (schema.c).  Lease mode also records
             * it in the name's durable counter, and if that counter was
             * higher (set there by an earlier client, or a DBA), raises
             * the sequence to it: every later fence is above it. */
            uint64_t n = 0;

            rc = dlock__my_fseq_next(ms, c, &n);
            if (rc != DLOCK_OK) {
                if (dlock__my_conn_error(mysql_errno(c->db)))
                    break;
                goto undo;
            }
            fence = n;
            if (ms->lease_mode) {
                dlock__my_sb_reset(&b);
                MY_BIND(&b, c, ms->sql.fence_record,
                        MV_S(ml->nkey, ml->nkey_len), MV_U(n), MV_U(n));
                if (b.oom) {
                    rc = dlock__enomem();
                    goto undo;
                }
                if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
                    goto failed;
                fence = (uint64_t)mysql_insert_id(c->db);
                if (fence > n) {
                    dlock__my_sb_reset(&b);
                    MY_BIND(&b, c, ms->sql.fseq_raise, MV_U(fence));
                    if (b.oom) {
                        rc = dlock__enomem();
                        goto undo;
                    }
                    if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
                        goto failed;
                }
            }
        } else {
            /* LAST_INSERT_ID(expr) hands the new value back to this session
             * only: an atomic per-name increment in one statement. */
            dlock__my_sb_reset(&b);
            dlock__my_sb_fence(&b, ms, c, ml->nkey, ml->nkey_len,
                               ms->lease_mode);
            if (b.oom) {
                rc = dlock__enomem();
                goto undo;
            }
            if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
                goto failed;
            fence = (uint64_t)mysql_insert_id(c->db);
        }
        if (ms->lease_mode && ms->have_seq && !ms->have_fseq && fence != 0) {
            dlock__my_sb_reset(&b);
            dlock__my_sb_seq_raise(&b, ms, c, ml->nkey, ml->nkey_len, fence);
            if (b.oom) {
                rc = dlock__enomem();
                goto undo;
            }
            if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
                goto failed;
        }
        dlock__my_sb_reset(&b);
        MY_BIND(&b, c, ms->sql.set_fence, MV_U(fence), MV_KEY(ml), MV_TOK(lk));
        if (b.oom) {
            rc = dlock__enomem();
            goto undo;
        }
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0 ||
            tx(c, ms->sql.tx_commit) != 0)
            goto failed;
        if (fence == 0) {
            rc = dlock__seterr(DLOCK_ESTORE,
                               "taking a fence on %s: the "
                               "server returned no value",
                               ms->base.url);
            break; /* committed a row with no fence: caller cleans up */
        }
        lk->fence = fence;
        lease_from(lk, sent);
        rc = DLOCK_OK;
        break;
    failed:
        e = mysql_errno(c->db);
        rc = dlock__my_db_err(ms, c, "acquire");
        (void)tx(c, ms->sql.tx_rollback);
        /* A deadlock or lock wait timeout undid the whole transaction:
         * run it again (a MyISAM row stays: ours, deleted first). */
        if ((e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT) &&
            tries < 20) {
            (void)dlock__my_delete_own_row(ms, c, lk, ml);
            continue;
        }
        /* The caller deletes our row if the connection still works. */
        break;
    undo:
        (void)tx(c, ms->sql.tx_rollback);
        (void)dlock__my_delete_own_row(ms, c, lk, ml);
        break;
    rollback:
        (void)tx(c, ms->sql.tx_rollback);
        break;
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* Insert our row (in lock mode: holding the key's GET_LOCK).  DLOCK_OK:
 * inserted; DLOCK_BUSY: a live holder has it (*retry_ms its lease left). */
static int claim_row(struct my_store *ms, struct conn *c, struct dlock_lock *lk,
                     const struct my_lock *ml, int64_t *retry_ms)
{
    int rc = DLOCK_BUSY;

    for (int tries = 0; tries < 4; tries++) {
        struct holder h;
        int dup, found, killed = 0;

        rc = insert_row(ms, c, lk, ml, &dup);
        if (rc != DLOCK_OK || !dup)
            break;
        /* Taken: look at the holder. */
        rc = read_row(ms, c, ml, &h, &found);
        if (rc != DLOCK_OK)
            break;
        rc = DLOCK_BUSY;
        if (!found)
            continue; /* gone meanwhile: insert again */
        if (lk->limit == 1 && h.lim > 1 && !h.has_owner) {
            int gone;

            /* A semaphore's head: EINVAL while it has holders. */
            rc = dlock__my_lock_meets_head(ms, c, lk, ml, &gone);
            if (rc != DLOCK_OK)
                break;
            rc = DLOCK_BUSY;
            continue;
        }
        /* While we hold the GET_LOCK, a row marked acquired is dead: its
         * session does not hold the GET_LOCK any more. */
        if (!dlock__my_holder_dead(&h)) {
            *retry_ms = h.left;
            break;
        }
        rc = dlock__my_take_over(ms, c, ml, &h, &killed);
        if (rc != DLOCK_OK)
            break;
        rc = DLOCK_BUSY;
    }
    return rc;
}

/* Remember who holds the key with a row (see dlock__my_rowless()). */
static void saw_row(struct my_lock *ml, const struct holder *h)
{
    if (h->conn_id == 0 || h->used_by != h->conn_id)
        return;
    ml->seen_conn = h->conn_id;
    ml->seen_until = dlock__now_ms() + (h->left > 0 ? h->left : 0);
    ml->rowless_since = 0;
}

/* An acquire that took the row but got no fence (cannot happen): the
 * row and the GET_LOCK go again. */
static int no_fence(struct my_store *ms, const struct dlock_lock *lk,
                    const struct my_lock *ml)
{
    (void)dlock__my_delete_own_row(ms, ml->c, lk, ml);
    dlock__my_release_getlock(ms, ml->c, ml);
    return dlock__seterr(DLOCK_ESTORE,
                         "taking a fence on %s: the server returned no value",
                         ms->base.url);
}

/* The uncontended acquire in one statement: CALL NAME_acq2 (see
 * sql/create_proc_acq.sql).  *got: 0, the GET_LOCK is taken and nothing
 * happened; 1, acquired (lk->fence set); 2, we hold the GET_LOCK and a
 * row is there.
 * DLOCK_ENOTSUP: use the plain statements. */
static int call_acquire(struct my_store *ms, struct dlock_lock *lk,
                        const struct my_lock *ml, int *got)
{
    struct conn *c = ml->c;
    struct sb b = {0};
    long long v = 0, fence = 0;
    int64_t sent;
    int rc;

    MY_BIND(&b, c, ms->sql.call_acquire, MV_KEY(ml),
            MV_S(lk->name, lk->name_len), MV_TOK(lk), MV_I(lk->ttl_ms),
            MV_Z(dlock__hostname()), MV_I(dlock__pid()));
    sent = dlock__now_ms();
    rc = dlock__my_call(ms, c, &b, &v, &fence, "acquire");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    if (v == 1 && fence <= 0)
        return no_fence(ms, lk, ml);
    if (v == 1) {
        lk->fence = (uint64_t)fence;
        lease_from(lk, sent);
    }
    *got = (int)v;
    return DLOCK_OK;
}

/* The uncontended acquire in one plain statement (ms->fast): GET_LOCK,
 * the row and the fence (NEXTVAL, under the GET_LOCK) in one
 * INSERT ... SELECT.  The fence sequence is seeded since the server
 * started (NAME_boot) before a connection's first use of it: a
 * connection does not outlive the server process, so it looks once.
 * *got: 1, acquired (lk->fence set); 2, we hold the GET_LOCK and a row
 * is there (the caller judges it); 0, the GET_LOCK is taken (the
 * caller's plain path says by whom). */
static int fast_acquire(struct my_store *ms, struct dlock_lock *lk,
                        const struct my_lock *ml, int *got)
{
    struct conn *c = ml->c;
    struct sb b = {0};
    int64_t sent;
    unsigned e;
    int full;

    *got = 0;
    if (!c->seeded) {
        int rc = dlock__my_fseq_seed(ms, c);

        if (rc != DLOCK_OK)
            return rc;
    }
    /* full_name only where the key is not the name itself (readers take
     * COALESCE(full_name, name)): a shorter row to copy in and out. */
    full = ml->key_len != lk->name_len ||
           memcmp(ml->key, lk->name, lk->name_len) != 0;
    if (full)
        MY_BIND(&b, c, ms->sql.fast_acquire[1], MV_KEY(ml),
                MV_I((lk->ttl_ms + 999) / 1000), MV_TOK(lk), MV_I(lk->ttl_ms),
                MV_Z(dlock__hostname()), MV_I(dlock__pid()),
                MV_S(lk->name, lk->name_len), MV_KEY(ml));
    else
        MY_BIND(&b, c, ms->sql.fast_acquire[0], MV_KEY(ml),
                MV_I((lk->ttl_ms + 999) / 1000), MV_TOK(lk), MV_I(lk->ttl_ms),
                MV_Z(dlock__hostname()), MV_I(dlock__pid()), MV_KEY(ml));
    if (b.oom) {
        dlock__my_sb_free(&b);
        return dlock__enomem();
    }
    c->used_ms = sent = dlock__now_ms();
    if (mysql_real_query(c->db, b.p, (unsigned long)b.len) == 0) {
        dlock__my_sb_free(&b);
        if (mysql_affected_rows(c->db) != 1)
            return DLOCK_OK; /* taken */
        lk->fence = (uint64_t)mysql_insert_id(c->db);
        if (lk->fence == 0)
            return no_fence(ms, lk, ml);
        lease_from(lk, sent);
        *got = 1;
        return DLOCK_OK;
    }
    dlock__my_sb_free(&b);
    e = mysql_errno(c->db);
    if (e == ER_DUP_ENTRY) {
        /* The row is inserted after GET_LOCK answered 1: we hold it. */
        *got = 2;
        return DLOCK_OK;
    }
    if (dlock__my_conn_error(e))
        return dlock__my_db_err(ms, c, "acquire");
    {
        /* Whether GET_LOCK ran is not known: let go of it (a no-op if
         * not ours), keeping the error's message. */
        int rc = dlock__my_db_err(ms, c, "acquire");

        dlock__my_release_getlock(ms, c, ml);
        return rc;
    }
}

/* The uncontended acquire in one statement, where the tables allow it
 * (session mode, a lock): the plain INSERT ... SELECT of ms->fast, else
 * the procedure.  *got: -1, nothing was done, or the one statement cannot
 * tell whether the GET_LOCK is taken (the plain statements follow); 0,
 * the GET_LOCK is another session's; 1, acquired (lk->fence set); 2,
 * this session holds the GET_LOCK and a row is there (claim_row() judges
 * it). */
static int one_statement(struct my_store *ms, struct dlock_lock *lk,
                         const struct my_lock *ml, int *got)
{
    int rc;

    *got = -1;
    if (ms->fast) {
        /* *got 0, the GET_LOCK is taken: contended() reads by whom (its
         * row, and IS_USED_LOCK), with no second GET_LOCK before it. */
        return fast_acquire(ms, lk, ml, got);
    }
    if (!__atomic_load_n(&ms->have_proc, __ATOMIC_RELAXED))
        return DLOCK_OK;
    rc = call_acquire(ms, lk, ml, got);
    if (rc == DLOCK_ENOTSUP) {
        *got = -1; /* nothing happened: the plain statements */
        rc = DLOCK_OK;
    }
    return rc;
}

/* Another session holds the key's GET_LOCK: a live holder (DLOCK_BUSY,
 * *retry_ms its lease left), a semaphore's head, a session with no row
 * (dlock__my_rowless()), or a holder past its lease, taken over and
 * KILLed.  DLOCK_OK once this session holds the GET_LOCK after such a
 * KILL. */
static int contended(struct my_store *ms, struct dlock_lock *lk,
                     struct my_lock *ml, int64_t deadline, int64_t *retry_ms)
{
    struct conn *c = ml->c;
    struct holder h, w;
    long long used;
    int found, wfound, killed = 0, got, rc;
    int64_t wait;

    /* The row, and for a key held without one (a hand-off's moment
     * between the last holder's release and the next one's claim, say)
     * who holds the GET_LOCK and its waiter row: one statement. */
    rc = dlock__my_read_contended(ms, c, ml, &h, &found, &used, &w, &wfound);
    if (rc != DLOCK_OK)
        return rc;
    if (!found) {
        rc = dlock__my_rowless_read(ms, c, ml, used, &w, wfound, retry_ms,
                                    &killed);
    } else if (lk->limit == 1 && h.lim > 1 && !h.has_owner) {
        int gone;

        /* A semaphore's head (someone is looking at it). */
        rc = dlock__my_lock_meets_head(ms, c, lk, ml, &gone);
        if (rc != DLOCK_OK)
            return rc;
        *retry_ms = 0;
        return DLOCK_BUSY;
    } else if (!dlock__my_holder_dead(&h)) {
        saw_row(ml, &h);
        *retry_ms = h.left;
        return DLOCK_BUSY;
    } else {
        saw_row(ml, &h);
        rc = dlock__my_take_over(ms, c, ml, &h, &killed);
    }
    if (rc != DLOCK_OK || !killed)
        return rc != DLOCK_OK ? rc : DLOCK_BUSY;
    /* A KILLed session lets go of its GET_LOCK a moment later. */
    wait = dlock__remaining_ms(deadline);
    if (wait > 2000)
        wait = 2000;
    if (wait > dlock__my_max_slice(ms->timeout_ms))
        wait = dlock__my_max_slice(ms->timeout_ms);
    rc = dlock__my_get_lock(ms, c, ml, wait, &got);
    if (rc != DLOCK_OK)
        return rc;
    return got ? DLOCK_OK : DLOCK_BUSY;
}

/* Session mode, before the row: this session takes the key's GET_LOCK
 * (in one statement with the row where it can: *done, acquired).
 * DLOCK_OK: the GET_LOCK is ours, the row is claim_row()'s to write. */
static int hold_get_lock(struct my_store *ms, struct dlock_lock *lk,
                         struct my_lock *ml, int64_t deadline,
                         int64_t *retry_ms, int *done)
{
    int rc, got = -1;

    *done = 0;
    if (lk->limit == 1) {
        rc = one_statement(ms, lk, ml, &got);
        if (rc != DLOCK_OK)
            return rc;
        *done = got == 1;
        if (got == 1 || got == 2)
            return DLOCK_OK;
    }
    if (got != 0) {
        rc = dlock__my_get_lock(ms, ml->c, ml, 0, &got);
        if (rc != DLOCK_OK || got)
            return rc;
    }
    return contended(ms, lk, ml, deadline, retry_ms);
}

/* One attempt on ml->c: in session mode the key's GET_LOCK
 * (hold_get_lock()), then our row (claim_row()).  have_gl: this session
 * holds the key's GET_LOCK already (from a wait).  Unless we return
 * DLOCK_OK, the GET_LOCK is given up again. */
int dlock__my_attempt(struct my_store *ms, struct dlock_lock *lk,
                      struct my_lock *ml, int have_gl, int64_t deadline,
                      int64_t *retry_ms)
{
    struct conn *c = ml->c;
    int rc;

    if (!ms->lease_mode && !have_gl) {
        int done;

        rc = hold_get_lock(ms, lk, ml, deadline, retry_ms, &done);
        if (rc != DLOCK_OK || done)
            return rc;
    }
    rc = claim_row(ms, c, lk, ml, retry_ms);
    if (rc != DLOCK_OK) {
        if (rc != DLOCK_BUSY && mysql_errno(c->db) == 0)
            (void)dlock__my_delete_own_row(ms, c, lk,
                                           ml); /* committed, unusable */
        if (!ms->lease_mode)
            dlock__my_release_getlock(ms, c, ml);
    }
    return rc;
}
