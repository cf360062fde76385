/*
 * acquire.c - one attempt at a MySQL lock (or a semaphore's slot):
 * GET_LOCK, the row and its fence, taking over a holder that is dead or
 * past its lease, the session-mode procedures and one-statement acquire.
 * Semaphores' head row and slots: semaphore.c; waiter rows: waiter.c; the
 * try and the wait's slices around an attempt: try_wait.c.
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "my.h"

void dlock__my_sb_key(struct sb *b, struct conn *c, const struct my_lock *ml)
{
    dlock__my_sb_lit(b, c, ml->key, ml->key_len);
}

const char *dlock__my_key_lit(struct conn *c, const struct my_lock *ml,
                              char out[KEY_LIT_MAX])
{
    unsigned long n;

    out[0] = '\'';
    n = mysql_real_escape_string(c->db, out + 1, ml->key,
                                 (unsigned long)ml->key_len);
    out[n + 1] = '\'';
    out[n + 2] = '\0';
    return out;
}

/* Best effort: drop our GET_LOCK (once) on this connection. */
void dlock__my_release_getlock(struct my_store *ms, struct conn *c,
                               const struct my_lock *ml)
{
    struct sb b = {0};
    long long v;
    int found;

    char k[KEY_LIT_MAX];

    dlock__my_sb_add(&b, ms->sql.release_getlock, dlock__my_key_lit(c, ml, k));
    (void)dlock__my_run_int(ms, c, &b, &v, &found, "RELEASE_LOCK");
    dlock__my_sb_free(&b);
}

/* Delete our own row (whatever state it is in). */
int dlock__my_delete_own_row(struct my_store *ms, struct conn *c,
                             const struct dlock_lock *lk,
                             const struct my_lock *ml)
{
    struct sb b = {0};
    int rc;

    char k[KEY_LIT_MAX];

    dlock__my_sb_add(&b, ms->sql.delete_own_row, dlock__my_key_lit(c, ml, k),
                     lk->token);
    rc = dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
    dlock__my_sb_free(&b);
    return rc;
}

/* End the session conn_id that holds ml's GET_LOCK past its lease, so it
 * loses the GET_LOCK and its pending work fails.  *killed is set when the
 * KILL was sent. */
int dlock__my_kill_holder(struct my_store *ms, struct conn *c,
                          const struct my_lock *ml, unsigned long long conn_id,
                          int *killed)
{
    char sql[64];
    int n = snprintf(sql, sizeof(sql), ms->sql.kill, conn_id);

    if (dlock__my_query(c, sql, (size_t)n) == 0) {
        *killed = 1;
        return DLOCK_OK;
    }
    if (mysql_errno(c->db) == ER_KILL_DENIED_ERROR)
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%.*s': its holder's lease ran out "
                             "but this user may not KILL its connection "
                             "%llu (needs CONNECTION ADMIN or SUPER): %s",
                             (int)ml->key_len, ml->key, conn_id,
                             mysql_error(c->db));
    if (mysql_errno(c->db) != ER_NO_SUCH_THREAD)
        return dlock__my_db_err(ms, c, "KILL of an expired holder");
    return DLOCK_OK;
}

/* Take over a dead holder's row: delete exactly that row if it is still
 * dead, then KILL its session if (and only if) that session still holds
 * our key's GET_LOCK.  *killed is set when a KILL was sent. */
int dlock__my_take_over(struct my_store *ms, struct conn *c,
                        const struct my_lock *ml, const struct holder *h,
                        int *killed)
{
    struct sb b = {0};
    char k[KEY_LIT_MAX];
    long long used = 0;
    int found, rc;

    dlock__my_key_lit(c, ml, k);
    /* sql/take_over.sql: owner NULL has no '%s'. */
    dlock__my_sb_add(&b, ms->sql.take_over[h->has_owner != 0], k, h->conn_id,
                     h->created, h->owner);
    rc = dlock__my_run(ms, c, &b, NULL, "taking over an expired lock");
    if (rc != DLOCK_OK || mysql_affected_rows(c->db) != 1 || h->conn_id == 0 ||
        h->conn_id == c->id) {
        dlock__my_sb_free(&b);
        return rc;
    }
    dlock__my_sb_reset(&b);
    dlock__my_sb_add(&b, ms->sql.used_by, k);
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && found && (unsigned long long)used == h->conn_id)
        rc = dlock__my_kill_holder(ms, c, ml, h->conn_id, killed);
    return rc;
}

/* The row holding ml's key, if any (*found). */
int dlock__my_read_row(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, struct holder *h, int *found,
                       int want_name)
{
    struct sb b = {0};
    char k[KEY_LIT_MAX];
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    *found = 0;
    dlock__my_sb_add(&b, ms->sql.read_row[ms->mariadb != 0][ms->have_lim != 0],
                     dlock__my_key_lit(c, ml, k));
    rc = dlock__my_run(ms, c, &b, &res, "acquire");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    row = res != NULL ? mysql_fetch_row(res) : NULL;
    if (row != NULL) {
        dlock__my_read_holder(row, mysql_fetch_lengths(res), h, want_name);
        *found = 1;
        if (want_name && h->name == NULL)
            rc = dlock__enomem();
    }
    mysql_free_result(res);
    return rc;
}

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
    struct sb b = {0}, host = {0}, nm = {0};
    char key[KEY_LIT_MAX];
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
        dlock__my_sb_reset(&host);
        dlock__my_sb_reset(&nm);
        dlock__my_sb_lit(&host, c, dlock__hostname(),
                         strlen(dlock__hostname()));
        dlock__my_sb_lit(&nm, c, lk->name, lk->name_len);
        if (host.oom || nm.oom)
            b.oom = 1;
        else /* sql/insert_row.sql: a lock's has no "%u, %d" */
            dlock__my_sb_add(
                &b, ms->sql.insert_row[lk->limit > 1],
                dlock__my_key_lit(c, ml, key),
                (long long)((lk->ttl_ms + 999) / 1000), ms->lease_mode ? 0 : 1,
                lk->token, (long long)lk->ttl_ms, host.p,
                (long long)dlock__pid(), nm.p, lk->limit, ml->slot);
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
            dlock__my_sb_add(&b, ms->sql.delete_by_owner, lk->token);
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
                struct sb k = {0};

                dlock__my_sb_reset(&b);
                dlock__my_sb_lit(&k, c, ml->nkey, ml->nkey_len);
                dlock__my_sb_add(&b, ms->sql.fence_record, k.oom ? "''" : k.p,
                                 (unsigned long long)n, (unsigned long long)n);
                if (k.oom)
                    b.oom = 1;
                dlock__my_sb_free(&k);
                if (b.oom) {
                    rc = dlock__enomem();
                    goto undo;
                }
                if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
                    goto failed;
                fence = (uint64_t)mysql_insert_id(c->db);
                if (fence > n) {
                    dlock__my_sb_reset(&b);
                    dlock__my_sb_add(&b, ms->sql.fseq_raise,
                                     (unsigned long long)fence);
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
        dlock__my_sb_add(&b, ms->sql.set_fence, (unsigned long long)fence,
                         dlock__my_key_lit(c, ml, key), lk->token);
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
    dlock__my_sb_free(&host);
    dlock__my_sb_free(&nm);
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

/* GET_LOCK(key, wait_ms): *got 1 if this session now holds it. */
int dlock__my_get_lock(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, int64_t wait_ms, int *got)
{
    struct sb b = {0};
    char k[KEY_LIT_MAX];
    long long v = 0;
    int found, rc;

    /* MariaDB takes fractional seconds; MySQL whole ones (rounded down
     * here, never up past the caller's deadline). */
    dlock__my_sb_add(&b, ms->sql.get_lock[c->frac != 0],
                     dlock__my_key_lit(c, ml, k), (long long)(wait_ms / 1000),
                     (long long)(wait_ms % 1000));
    rc = dlock__my_run_int(ms, c, &b, &v, &found, "GET_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && !found)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "GET_LOCK failed on %s (the "
                           "server returned NULL)",
                           ms->base.url);
    *got = rc == DLOCK_OK && v == 1;
    return rc;
}

/* The procedure was refused or is gone (dropped, EXECUTE revoked, a
 * server of another version): the plain statements from now on. */
static int proc_unusable(unsigned e)
{
    return e == ER_SP_DOES_NOT_EXIST || e == ER_PROCACCESS_DENIED_ERROR ||
           e == ER_SP_WRONG_NO_OF_ARGS || e == ER_TABLEACCESS_DENIED_ERROR ||
           e == ER_DBACCESS_DENIED_ERROR || e == ER_NO_SUCH_TABLE;
}

/* Read the one-row answer of a CALL and the end of the CALL after it. */
static int call_result(struct my_store *ms, struct conn *c, long long *v0,
                       long long *v1, const char *what)
{
    MYSQL_RES *res = mysql_store_result(c->db);
    MYSQL_ROW row;
    int rc = DLOCK_OK, st;

    if (res == NULL)
        return mysql_errno(c->db) != 0
                   ? dlock__my_db_err(ms, c, what)
                   : dlock__seterr(DLOCK_ESTORE, "%s on %s: no result", what,
                                   ms->base.url);
    row = mysql_fetch_row(res);
    if (row == NULL || row[0] == NULL)
        rc = dlock__seterr(DLOCK_ESTORE, "%s on %s: no result", what,
                           ms->base.url);
    else {
        *v0 = strtoll(row[0], NULL, 10);
        if (v1 != NULL)
            *v1 = mysql_num_fields(res) > 1 && row[1] != NULL
                      ? strtoll(row[1], NULL, 10)
                      : 0;
    }
    mysql_free_result(res);
    while ((st = mysql_next_result(c->db)) == 0) {
        res = mysql_store_result(c->db);
        mysql_free_result(res);
    }
    if (st > 0 && rc == DLOCK_OK)
        rc = dlock__my_db_err(ms, c, what);
    return rc;
}

/* Run a CALL of a session-mode procedure: DLOCK_OK with its answer, a
 * failure, or DLOCK_ENOTSUP (nothing happened) if the procedure cannot be
 * used, and then never again on this handle. */
int dlock__my_call(struct my_store *ms, struct conn *c, struct sb *b,
                   long long *v0, long long *v1, const char *what)
{
    if (b->oom)
        return dlock__enomem();
    c->used_ms = dlock__now_ms();
    if (mysql_real_query(c->db, b->p, (unsigned long)b->len) != 0) {
        if (proc_unusable(mysql_errno(c->db))) {
            __atomic_store_n(&ms->have_proc, 0, __ATOMIC_RELAXED);
            return DLOCK_ENOTSUP;
        }
        return dlock__my_db_err(ms, c, what);
    }
    return call_result(ms, c, v0, v1, what);
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
    struct sb b = {0}, nm = {0}, host = {0};
    char k[KEY_LIT_MAX];
    long long v = 0, fence = 0;
    int64_t sent;
    int rc;

    dlock__my_sb_lit(&nm, c, lk->name, lk->name_len);
    dlock__my_sb_lit(&host, c, dlock__hostname(), strlen(dlock__hostname()));
    if (nm.oom || host.oom)
        b.oom = 1;
    else
        dlock__my_sb_add(&b, ms->sql.call_acquire, dlock__my_key_lit(c, ml, k),
                         nm.p, lk->token, (long long)lk->ttl_ms, host.p,
                         (long long)dlock__pid());
    dlock__my_sb_free(&nm);
    dlock__my_sb_free(&host);
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
    struct sb b = {0}, host = {0}, nm = {0};
    char k[KEY_LIT_MAX];
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
    dlock__my_key_lit(c, ml, k);
    dlock__my_sb_lit(&host, c, dlock__hostname(), strlen(dlock__hostname()));
    if (full)
        dlock__my_sb_lit(&nm, c, lk->name, lk->name_len);
    if (host.oom || nm.oom)
        b.oom = 1;
    else if (full)
        dlock__my_sb_add(&b, ms->sql.fast_acquire[1], k,
                         (long long)((lk->ttl_ms + 999) / 1000), lk->token,
                         (long long)lk->ttl_ms, host.p, (long long)dlock__pid(),
                         nm.p, k);
    else
        dlock__my_sb_add(&b, ms->sql.fast_acquire[0], k,
                         (long long)((lk->ttl_ms + 999) / 1000), lk->token,
                         (long long)lk->ttl_ms, host.p, (long long)dlock__pid(),
                         k);
    dlock__my_sb_free(&nm);
    dlock__my_sb_free(&host);
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

/* One attempt on ml->c: GET_LOCK(key, 0), then our row.  have_gl: this
 * session holds the key's GET_LOCK already (from a wait).  Unless we
 * return DLOCK_OK, the GET_LOCK is given up again. */
int dlock__my_attempt(struct my_store *ms, struct dlock_lock *lk,
                      struct my_lock *ml, int have_gl, int64_t deadline,
                      int64_t *retry_ms)
{
    struct conn *c = ml->c;
    int rc, got = -1;

    if (!ms->lease_mode && !have_gl && lk->limit == 1 && ms->fast) {
        rc = fast_acquire(ms, lk, ml, &got);
        if (rc != DLOCK_OK || got == 1)
            return rc;
        if (got == 0)
            got = -1; /* the plain statements say why */
    } else if (!ms->lease_mode && !have_gl && lk->limit == 1 &&
               __atomic_load_n(&ms->have_proc, __ATOMIC_RELAXED)) {
        rc = call_acquire(ms, lk, ml, &got);
        if (rc == DLOCK_OK && got == 1)
            return DLOCK_OK;
        if (rc != DLOCK_OK && rc != DLOCK_ENOTSUP)
            return rc;
        if (rc == DLOCK_ENOTSUP)
            got = -1; /* nothing happened: the plain statements */
    }
    if (!ms->lease_mode && !have_gl && got != 2) {
        if (got != 0) {
            rc = dlock__my_get_lock(ms, c, ml, 0, &got);
            if (rc != DLOCK_OK)
                return rc;
        }
        if (!got) {
            struct holder h;
            int found, killed = 0;
            int64_t wait;

            /* Someone holds the GET_LOCK: live, or past its lease? */
            rc = read_row(ms, c, ml, &h, &found);
            if (rc != DLOCK_OK)
                return rc;
            if (!found) {
                rc = dlock__my_rowless(ms, c, ml, retry_ms, &killed);
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
            if (!got)
                return DLOCK_BUSY;
        }
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
