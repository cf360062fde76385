/*
 * lease.c - a held lock's lease on the SQLite store: extend, ttl_left,
 * release, and the renew thread's batches (extend_many, one transaction).
 * A row that is gone or past its lease makes the lock LOST and is tidied
 * away.
 */
#include <sqlite3.h>
#include <stdint.h>

#include "sq.h"

/* Run an UPDATE/DELETE on lk's row; *changed gets the row count. */
static int run_on_row(struct sqlite_store *ss, int q,
                      const struct dlock_lock *lk, int64_t ttl_ms, int *changed,
                      const char *what)
{
    sqlite3_stmt *s;
    int64_t now;
    int rc;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    s = dlock__sq_stmt(ss, q);
    if (s == NULL) {
        rc = dlock__sq_error(ss, what);
        goto out;
    }
    now = dlock__sq_host_ms(&ss->id);
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    if (q == Q_EXTEND) {
        /* + 1: dlock__sq_host_ms() rounds down (see the insert). */
        sqlite3_bind_int64(s, 3, now + 1 + ttl_ms);
        sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 5, now);
    } else if (q == Q_RELEASE) {
        sqlite3_bind_text(s, 3, ss->id.boot_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 4, now);
    }
    if (sqlite3_step(s) != SQLITE_DONE) {
        rc = dlock__sq_error(ss, what);
        sqlite3_reset(s);
        goto out;
    }
    sqlite3_reset(s);
    *changed = sqlite3_changes(ss->db);
    rc = DLOCK_OK;
out:
    dlock__sq_unlock(ss);
    return rc;
}

#define LOST_WHY "its lease ran out or it was broken"

int dlock__sq_extend(struct dlock_store *st, struct dlock_lock *lk,
                     int64_t ttl_ms)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int changed = 0, rc;

    rc = run_on_row(ss, Q_EXTEND, lk, ttl_ms, &changed, "extend");
    if (rc != DLOCK_OK)
        return rc;
    if (changed == 0) {
        /* Expired but not yet taken: tidy our row away. */
        (void)run_on_row(ss, Q_DELETE_ROW, lk, 0, &changed, "extend");
        return dlock__lost(lk, LOST_WHY);
    }
    /* Committed: the oldest waiter on this host looks again (wake.c). */
    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    dlock__sq_wake(ss, lk->name, lk->name_len);
    dlock__sq_unlock(ss);
    return DLOCK_OK;
}

int dlock__sq_ttl_left(struct dlock_store *st, struct dlock_lock *lk,
                       int64_t *left_ms)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int64_t now = dlock__sq_host_ms(&ss->id);
    int rc, src;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    s = dlock__sq_stmt(ss, Q_TTL);
    if (s == NULL) {
        rc = dlock__sq_error(ss, "assert_ttl");
        goto out;
    }
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, now);
    sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        *left_ms = sqlite3_column_int64(s, 0);
        rc = DLOCK_OK;
    } else if (src == SQLITE_DONE) {
        rc = dlock__lost(lk, LOST_WHY);
    } else {
        rc = dlock__sq_error(ss, "assert_ttl");
    }
    sqlite3_reset(s);
out:
    dlock__sq_unlock(ss);
    return rc;
}

int dlock__sq_release(struct dlock_store *st, struct dlock_lock *lk)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int changed = 0, rc;

    rc = run_on_row(ss, Q_RELEASE, lk, 0, &changed, "release");
    if (rc != DLOCK_OK)
        return rc;
    if (changed == 0) {
        (void)run_on_row(ss, Q_DELETE_ROW, lk, 0, &changed, "release");
        return dlock__lost(lk, LOST_WHY);
    }
    /* Committed: the oldest waiter on this host looks again (wake.c). */
    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    dlock__sq_wake(ss, lk->name, lk->name_len);
    dlock__sq_unlock(ss);
    return DLOCK_OK;
}

/* --- batched renewal (the renew thread's extend_many) ---------------- */

/* Every lease of the batch in one BEGIN IMMEDIATE transaction: one wait
 * for the write lock and one commit (one WAL append) instead of one per
 * lock, and the same UPDATE per row as dlock__sq_extend().  A row that is
 * gone or past its lease is tidied away in the same transaction, and that
 * lock is LOST.  If the transaction fails nothing was written: the whole
 * batch gets the failure (a transient one, retried while leases last). */
int dlock__sq_extend_many(struct dlock_store *st,
                          struct dlock_lock *const *locks, size_t n, int *rcs)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int64_t now;
    int rc;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    if (dlock__sq_begin(ss) != SQLITE_OK) {
        rc = dlock__sq_error(ss, "renew");
        goto out;
    }
    now = dlock__sq_host_ms(&ss->id);
    for (size_t i = 0; i < n; i++) {
        const struct dlock_lock *lk = locks[i];

        s = dlock__sq_stmt(ss, Q_EXTEND);
        if (s == NULL)
            goto sqlerr;
        dlock__sq_bind_name(s, 1, lk);
        sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, now + 1 + lk->ttl_ms); /* as extend */
        sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 5, now);
        if (sqlite3_step(s) != SQLITE_DONE)
            goto sqlerr;
        sqlite3_reset(s);
        if (sqlite3_changes(ss->db) > 0) {
            rcs[i] = DLOCK_OK;
            continue;
        }
        s = dlock__sq_stmt(ss, Q_DELETE_ROW);
        if (s == NULL)
            goto sqlerr;
        dlock__sq_bind_name(s, 1, lk);
        sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_DONE)
            goto sqlerr;
        sqlite3_reset(s);
        rcs[i] = dlock__lost(lk, LOST_WHY);
    }
    if (dlock__sq_exec(ss, Q_COMMIT) != SQLITE_OK)
        goto sqlerr;
    rc = DLOCK_OK;
    goto out;
sqlerr:
    rc = dlock__sq_error(ss, "renew");
    dlock__sq_rollback(ss);
out:
    dlock__sq_unlock(ss);
    return rc;
}

/* Does lk still own its row?  (runs.c, inside its transaction.) */
int dlock__sq_owns(struct sqlite_store *ss, const struct dlock_lock *lk)
{
    sqlite3_stmt *s = dlock__sq_stmt(ss, Q_TTL);
    int src;

    if (s == NULL)
        return -1;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, dlock__sq_host_ms(&ss->id));
    sqlite3_bind_text(s, 4, ss->id.boot_id, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    sqlite3_reset(s);
    return src == SQLITE_ROW ? 1 : src == SQLITE_DONE ? 0 : -1;
}
