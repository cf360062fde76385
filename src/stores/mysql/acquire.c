/*
 * acquire.c - acquiring a MySQL lock: GET_LOCK, the row, taking over a
 * holder that is dead or past its lease, the try and the wait's slices.
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

/* Best effort: drop our GET_LOCK (once) on this connection. */
void dlock__my_release_getlock(struct my_store *ms, struct conn *c,
                               const struct my_lock *ml)
{
    struct sb b = {0};
    long long v;
    int found;

    dlock__my_sb_add(&b, "SELECT RELEASE_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, ")");
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

    dlock__my_sb_add(&b, "DELETE FROM %s WHERE name = ", ms->table);
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, " AND owner = '%s'", lk->token);
    rc = dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
    dlock__my_sb_free(&b);
    return rc;
}

/* End the session conn_id that holds ml's GET_LOCK past its lease, so it
 * loses the GET_LOCK and its pending work fails.  *killed is set when the
 * KILL was sent. */
static int kill_holder(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, unsigned long long conn_id,
                       int *killed)
{
    char sql[64];
    int n = snprintf(sql, sizeof(sql), "KILL CONNECTION %llu", conn_id);

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
static int take_over(struct my_store *ms, struct conn *c,
                     const struct my_lock *ml, const struct holder *h,
                     int *killed)
{
    struct sb b = {0};
    long long used = 0;
    int found, rc;

    dlock__my_sb_add(&b, "DELETE FROM %s WHERE name = ", ms->table);
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, " AND connection_id = %llu AND created = %lld AND ",
                     h->conn_id, h->created);
    if (h->has_owner)
        dlock__my_sb_add(&b, "owner = '%s'", h->owner);
    else
        dlock__my_sb_add(&b, "owner IS NULL");
    dlock__my_sb_add(&b,
                     " AND (" EXPIRES " <= " NOWMS " OR (lock_acquired AND "
                     "IFNULL(IS_USED_LOCK(" ROW_KEY "), 0) <> connection_id))");
    rc = dlock__my_run(ms, c, &b, NULL, "taking over an expired lock");
    if (rc != DLOCK_OK || mysql_affected_rows(c->db) != 1 || h->conn_id == 0 ||
        h->conn_id == c->id) {
        dlock__my_sb_free(&b);
        return rc;
    }
    dlock__my_sb_reset(&b);
    dlock__my_sb_add(&b, "SELECT IFNULL(IS_USED_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, "), 0)");
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && found && (unsigned long long)used == h->conn_id)
        rc = kill_holder(ms, c, ml, h->conn_id, killed);
    return rc;
}

/* The row holding ml's key, if any (*found). */
static int read_row(struct my_store *ms, struct conn *c,
                    const struct my_lock *ml, struct holder *h, int *found)
{
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    *found = 0;
    dlock__my_sb_add(&b,
                     "SELECT %s FROM %s WHERE name = ", dlock__my_columns(ms),
                     ms->table);
    dlock__my_sb_key(&b, c, ml);
    rc = dlock__my_run(ms, c, &b, &res, "acquire");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    row = res != NULL ? mysql_fetch_row(res) : NULL;
    if (row != NULL) {
        dlock__my_read_holder(row, mysql_fetch_lengths(res), h, 0);
        *found = 1;
    }
    mysql_free_result(res);
    return DLOCK_OK;
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
    int rc = DLOCK_OK;

    for (int tries = 0;; tries++) {
        unsigned e;

        *dup = 0;
        if (mysql_real_query(c->db, "START TRANSACTION", 17) != 0) {
            rc = dlock__my_db_err(ms, c, "acquire");
            break;
        }
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(
            &b,
            "INSERT INTO %s (name, connection_id, created, ttl, "
            "lock_acquired, owner, expires_ms, acquired_ms, host, "
            "pid, full_name) VALUES (",
            ms->table);
        dlock__my_sb_key(&b, c, ml);
        dlock__my_sb_add(&b,
                         ", CONNECTION_ID(), UNIX_TIMESTAMP(), %lld, %d, '%s', "
                         NOWMS " + %lld, " NOWMS ", ",
                         (long long)((lk->ttl_ms + 999) / 1000),
                         ms->lease_mode ? 0 : 1, lk->token,
                         (long long)lk->ttl_ms);
        dlock__my_sb_lit(&b, c, dlock__hostname(), strlen(dlock__hostname()));
        dlock__my_sb_add(&b, ", %lld, ", (long long)getpid());
        dlock__my_sb_lit(&b, c, lk->name, lk->name_len);
        dlock__my_sb_add(&b, ")");
        if (b.oom) {
            rc = dlock__enomem();
            goto rollback;
        }
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
            (void)mysql_real_query(c->db, "ROLLBACK", 8);
            dlock__my_sb_reset(&b);
            dlock__my_sb_add(&b, "DELETE FROM %s WHERE owner = '%s'", ms->table,
                             lk->token);
            (void)dlock__my_run(ms, c, &b, NULL, "deleting a lock row");
            rc = dlock__my_unstorable(
                ms, lk->name, "the server stored it with substitutions");
            break;
        }
        /* LAST_INSERT_ID(expr) hands the new value back to this session
         * only: an atomic per-name increment in one statement. */
        dlock__my_sb_reset(&b);
        dlock__my_sb_fence(&b, ms, c, ml->key, ml->key_len, ms->lease_mode);
        if (b.oom) {
            rc = dlock__enomem();
            goto undo;
        }
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
            goto failed;
        fence = (uint64_t)mysql_insert_id(c->db);
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, "UPDATE %s SET fence = %llu WHERE name = ",
                         ms->table, (unsigned long long)fence);
        dlock__my_sb_key(&b, c, ml);
        dlock__my_sb_add(&b, " AND owner = '%s'", lk->token);
        if (b.oom) {
            rc = dlock__enomem();
            goto undo;
        }
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0 ||
            mysql_real_query(c->db, "COMMIT", 6) != 0)
            goto failed;
        if (fence == 0) {
            rc = dlock__seterr(DLOCK_ESTORE,
                               "taking a fence on %s: the "
                               "server returned no value",
                               ms->base.url);
            break; /* committed a row with no fence: caller cleans up */
        }
        lk->fence = fence;
        rc = DLOCK_OK;
        break;
    failed:
        e = mysql_errno(c->db);
        rc = dlock__my_db_err(ms, c, "acquire");
        (void)mysql_real_query(c->db, "ROLLBACK", 8);
        /* A deadlock or lock wait timeout undid the whole transaction:
         * run it again (a MyISAM row stays: ours, deleted first). */
        if ((e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT) && tries < 20) {
            (void)dlock__my_delete_own_row(ms, c, lk, ml);
            continue;
        }
        /* The caller deletes our row if the connection still works. */
        break;
    undo:
        (void)mysql_real_query(c->db, "ROLLBACK", 8);
        (void)dlock__my_delete_own_row(ms, c, lk, ml);
        break;
    rollback:
        (void)mysql_real_query(c->db, "ROLLBACK", 8);
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
        /* While we hold the GET_LOCK, a row marked acquired is dead: its
         * session does not hold the GET_LOCK any more. */
        if (!dlock__my_holder_dead(&h)) {
            *retry_ms = h.left;
            break;
        }
        rc = take_over(ms, c, ml, &h, &killed);
        if (rc != DLOCK_OK)
            break;
        rc = DLOCK_BUSY;
    }
    return rc;
}

/* Remember who holds the key with a row (see rowless()). */
static void saw_row(struct my_lock *ml, const struct holder *h)
{
    if (h->conn_id == 0 || h->used_by != h->conn_id)
        return;
    ml->seen_conn = h->conn_id;
    ml->seen_until = dlock__now_ms() + (h->left > 0 ? h->left : 0);
    ml->rowless_since = 0;
}

/* The key's GET_LOCK is held and no row is there.  A session this acquire
 * saw holding it with a row lost that row to someone else (its-mieger's
 * clean-up of an expired row, `release --force` without KILL rights, a
 * DBA): it has no lease left to honour once that row's lease is over, and
 * is KILLed then like any holder past its lease, but not before it has
 * been seen without a row for ?timeout= (a session taking the key again
 * holds the GET_LOCK for a moment before its row is in).  Any other
 * session never had a row: a GET_LOCK-only client (an application using
 * GET_LOCK directly, mpyw/laravel-database-advisory-lock) is a legitimate
 * holder with no lease, waited for without bound, never KILLed.  *retry_ms
 * is when to look again (-1: when it lets go). */
static int rowless(struct my_store *ms, struct conn *c, struct my_lock *ml,
                   int64_t *retry_ms, int *killed)
{
    struct sb b = {0};
    struct holder h;
    long long used = 0;
    int64_t now, bound;
    int found, rc;

    dlock__my_sb_add(&b, "SELECT IFNULL(IS_USED_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, "), 0)");
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    if (used == 0) {
        *retry_ms = 0; /* let go meanwhile */
        return DLOCK_BUSY;
    }
    if ((unsigned long long)used != ml->seen_conn) {
        ml->rowless_since = 0;
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held by MySQL session %lld "
                             "with GET_LOCK only, with no row in %s (not "
                             "a lease this acquire saw): waiting for it "
                             "to let go, without a lease to bound the wait",
                             c->name ? c->name : ml->key, used, ms->raw_table);
    }
    now = dlock__now_ms();
    if (ml->rowless_since == 0)
        ml->rowless_since = now;
    bound = ml->rowless_since + ms->timeout_ms;
    if (bound < ml->seen_until)
        bound = ml->seen_until;
    if (now < bound) {
        *retry_ms = bound - now;
        return DLOCK_BUSY;
    }
    /* Still no row (a row back means a holder with a lease again)? */
    rc = read_row(ms, c, ml, &h, &found);
    if (rc != DLOCK_OK)
        return rc;
    if (found) {
        *retry_ms = 0;
        return DLOCK_BUSY;
    }
    return kill_holder(ms, c, ml, ml->seen_conn, killed);
}

/* GET_LOCK(key, wait_ms): *got 1 if this session now holds it. */
static int get_lock(struct my_store *ms, struct conn *c,
                    const struct my_lock *ml, int64_t wait_ms, int *got)
{
    struct sb b = {0};
    long long v = 0;
    int found, rc;

    dlock__my_sb_add(&b, "SELECT GET_LOCK(");
    dlock__my_sb_key(&b, c, ml);
    /* MariaDB takes fractional seconds; MySQL whole ones (rounded down
     * here, never up past the caller's deadline). */
    if (c->frac)
        dlock__my_sb_add(&b, ", %lld.%03lld)", (long long)(wait_ms / 1000),
                         (long long)(wait_ms % 1000));
    else
        dlock__my_sb_add(&b, ", %lld)", (long long)(wait_ms / 1000));
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

/* The uncontended acquire in one statement: CALL NAME_acq1 (see ddl_procs
 * in schema.c).  *got: 0, the GET_LOCK is taken and nothing happened; 1,
 * acquired (lk->fence set); 2, we hold the GET_LOCK and a row is there.
 * DLOCK_ENOTSUP: use the plain statements. */
static int call_acquire(struct my_store *ms, struct dlock_lock *lk,
                        const struct my_lock *ml, int *got)
{
    struct conn *c = ml->c;
    struct sb b = {0};
    long long v = 0, fence = 0;
    int rc;

    dlock__my_sb_add(&b, "CALL %s(", ms->proc_acq);
    dlock__my_sb_key(&b, c, ml);
    dlock__my_sb_add(&b, ", ");
    dlock__my_sb_lit(&b, c, lk->name, lk->name_len);
    dlock__my_sb_add(&b, ", '%s', %lld, ", lk->token, (long long)lk->ttl_ms);
    dlock__my_sb_lit(&b, c, dlock__hostname(), strlen(dlock__hostname()));
    dlock__my_sb_add(&b, ", %lld)", (long long)getpid());
    rc = dlock__my_call(ms, c, &b, &v, &fence, "acquire");
    dlock__my_sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    if (v == 1 && fence <= 0) {
        /* Cannot happen: the row and the GET_LOCK go again. */
        (void)dlock__my_delete_own_row(ms, c, lk, ml);
        dlock__my_release_getlock(ms, c, ml);
        return dlock__seterr(DLOCK_ESTORE,
                             "taking a fence on %s: the server returned "
                             "no value",
                             ms->base.url);
    }
    if (v == 1)
        lk->fence = (uint64_t)fence;
    *got = (int)v;
    return DLOCK_OK;
}

/* One attempt on ml->c: GET_LOCK(key, 0), then our row.  have_gl: this
 * session holds the key's GET_LOCK already (from a wait).  Unless we
 * return DLOCK_OK, the GET_LOCK is given up again. */
static int attempt(struct my_store *ms, struct dlock_lock *lk,
                   struct my_lock *ml, int have_gl, int64_t deadline,
                   int64_t *retry_ms)
{
    struct conn *c = ml->c;
    int rc, got = -1;

    if (!ms->lease_mode && !have_gl &&
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
            rc = get_lock(ms, c, ml, 0, &got);
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
                rc = rowless(ms, c, ml, retry_ms, &killed);
            } else if (!dlock__my_holder_dead(&h)) {
                saw_row(ml, &h);
                *retry_ms = h.left;
                return DLOCK_BUSY;
            } else {
                saw_row(ml, &h);
                rc = take_over(ms, c, ml, &h, &killed);
            }
            if (rc != DLOCK_OK || !killed)
                return rc != DLOCK_OK ? rc : DLOCK_BUSY;
            /* A KILLed session lets go of its GET_LOCK a moment later. */
            wait = dlock__remaining_ms(deadline);
            if (wait > 2000)
                wait = 2000;
            if (wait > dlock__my_max_slice(ms->timeout_ms))
                wait = dlock__my_max_slice(ms->timeout_ms);
            rc = get_lock(ms, c, ml, wait, &got);
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

/* --- the try and the wait ---------------------------------------------- */

static struct my_lock *new_lock(struct my_store *ms, struct dlock_lock *lk)
{
    struct my_lock *ml = calloc(1, sizeof(*ml));

    if (ml != NULL)
        ml->key_len =
            dlock__mysql_key(lk->name, lk->name_len, ms->mariadb, ml->key);
    return ml;
}

/* Pin a connection to ml: a pooled one, or with `fresh` a new one (the
 * retry of dlock__pool's policy).  *pooled: it came from the pool. */
static int pin(struct my_store *ms, struct dlock_lock *lk, struct my_lock *ml,
               int fresh, int *pooled)
{
    void *c = NULL;
    int rc;

    *pooled = 0;
    rc = fresh ? dlock__pool_open(&ms->pool, &c)
               : dlock__pool_get(&ms->pool, &c, pooled);
    if (rc != DLOCK_OK)
        return rc;
    ml->c = c;
    ml->c->name = lk->name;
    return DLOCK_OK;
}

/* Let go of ml's pinned connection: back to the pool after a clean
 * outcome, closed after a failure (its session's state is unknown). */
static void unpin(struct my_store *ms, struct my_lock *ml, int ok)
{
    if (ok)
        dlock__pool_put(&ms->pool, ml->c);
    else
        dlock__pool_discard(&ms->pool, ml->c);
    ml->c = NULL;
}

/* One try on a pinned connection (lock mode).  dlock__pool's policy: a
 * pooled connection that died while idle (a server restart, wait_timeout,
 * a KILL) fails before the server saw anything, so the try runs once more
 * on a fresh one; a fresh one's failure is final. */
static int pinned_try(struct my_store *ms, struct dlock_lock *lk,
                      struct my_lock *ml, int64_t deadline, int64_t *retry_ms)
{
    for (int fresh = 0;; fresh = 1) {
        int pooled, rc = pin(ms, lk, ml, fresh, &pooled);

        if (rc != DLOCK_OK)
            return rc;
        rc = attempt(ms, lk, ml, 0, deadline, retry_ms);
        if (rc == DLOCK_EUNAVAIL && pooled &&
            dlock__my_conn_error(mysql_errno(ml->c->db))) {
            unpin(ms, ml, 0);
            continue;
        }
        return rc;
    }
}

struct lease_call {
    struct my_store *ms;
    struct dlock_lock *lk;
    struct my_lock *ml;
    int64_t deadline, *retry_ms;
};

/* One try in lease mode, on a pooled connection lent for the call. */
static int lease_fn(void *conn, void *arg, int *dead)
{
    struct lease_call *k = arg;
    struct conn *c = conn;
    int rc;

    c->name = k->lk->name;
    k->ml->c = c;
    rc = attempt(k->ms, k->lk, k->ml, 0, k->deadline, k->retry_ms);
    k->ml->c = NULL;
    *dead = rc == DLOCK_EUNAVAIL && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

int dlock__my_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock *ml = new_lock(ms, lk);
    int rc;

    if (ml == NULL)
        return dlock__enomem();
    if (ms->lease_mode) {
        /* Nothing is pinned in lease mode. */
        struct lease_call k = {ms, lk, ml, deadline, retry_ms};

        rc = dlock__pool_run(&ms->pool, lease_fn, &k);
    } else {
        rc = pinned_try(ms, lk, ml, deadline, retry_ms);
        if (rc != DLOCK_OK && ml->c != NULL)
            unpin(ms, ml, rc == DLOCK_BUSY);
    }
    if (rc != DLOCK_OK) {
        free(ml);
        return rc;
    }
    ml->held = 1;
    lk->priv = ml;
    return DLOCK_OK;
}

/* A backoff nap of the wait, at most max_ms. */
static void nap(struct my_lock *ml, int64_t max_ms)
{
    int64_t d = dlock__backoff_ms(ml->spins++, dlock__rand32());

    dlock__sleep_ms(d < max_ms ? d : max_ms);
}

/* The body of one slice on ml->c (see dlock__my_wait_slice). */
static int slice(struct my_store *ms, struct dlock_lock *lk, struct my_lock *ml,
                 int first, int64_t slice_ms, int64_t *retry_ms)
{
    int64_t end = dlock__now_ms() + slice_ms, left, sent;
    int rc, got = 0;

    /* The try before the wait looked at the holder on a connection it
     * has given back: look again on this one, so that a holder whose row
     * goes while we wait is known to have had one (see rowless()). */
    if (first) {
        rc = attempt(ms, lk, ml, 0, end, retry_ms);
        if (rc != DLOCK_BUSY)
            return rc;
        *retry_ms = -1;
    }
    left = dlock__remaining_ms(end);
    if (!ml->c->frac && left < 1000) {
        /* The sub-second tail on MySQL, whose GET_LOCK takes whole seconds
         * only: a nap, then one more look. */
        nap(ml, left);
        return attempt(ms, lk, ml, 0, end, retry_ms);
    }
    rc = get_lock(ms, ml->c, ml, left, &got);
    if (rc != DLOCK_OK)
        return rc;
    if (!got) {
        /* Slice over: look at the holder again (past its lease? its lease
         * left for the next slice). */
        return attempt(ms, lk, ml, 0, end, retry_ms);
    }
    sent = dlock__now_ms();
    rc = attempt(ms, lk, ml, 1, end, retry_ms);
    if (rc == DLOCK_OK) {
        /* The row was written after the GET_LOCK came back: the lease
         * started then at the earliest. */
        if (sent + lk->ttl_ms > lk->lease_end)
            lk->lease_end = sent + lk->ttl_ms;
    } else if (rc == DLOCK_BUSY) {
        /* The GET_LOCK was free but a row is still there (a lease-mode or
         * half-made holder): do not spin on it. */
        nap(ml, dlock__remaining_ms(end));
    }
    return rc;
}

/* One slice of a wait, natively: GET_LOCK(key, slice) sleeps on the
 * server until the holder lets go or its session ends, on a connection of
 * the wait's own, kept in lk->priv from slice to slice (and with it what
 * the wait has seen of the holder).  The core sizes the slices; a slice
 * is clipped to what the connection's read timeout allows. */
int dlock__my_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                         int64_t slice_ms, int64_t *retry_ms)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock *ml = lk->priv;
    int first = ml == NULL, rc;

    if (first) {
        int pooled;

        ml = new_lock(ms, lk);
        if (ml == NULL)
            return dlock__enomem();
        rc = pin(ms, lk, ml, 0, &pooled);
        if (rc != DLOCK_OK) {
            free(ml);
            return rc;
        }
        lk->priv = ml;
    }
    if (slice_ms > dlock__my_max_slice(ms->timeout_ms))
        slice_ms = dlock__my_max_slice(ms->timeout_ms);
    rc = slice(ms, lk, ml, first, slice_ms, retry_ms);
    if (rc == DLOCK_OK) {
        ml->held = 1;
    } else if (rc != DLOCK_BUSY) {
        /* The wait is over, and the connection's state unknown. */
        unpin(ms, ml, 0);
        free(ml);
        lk->priv = NULL;
    }
    return rc;
}

void dlock__my_unwait(struct my_store *ms, struct dlock_lock *lk)
{
    struct my_lock *ml = lk->priv;

    lk->priv = NULL;
    if (ml->c != NULL)
        unpin(ms, ml, 1);
    free(ml);
}
