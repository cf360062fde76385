/*
 * acquire.c - the SQLite store's try_acquire: in one BEGIN IMMEDIATE
 * transaction, read the name's rows, delete those whose holder is gone,
 * and insert ours with the next fence if the live ones leave room (a
 * lock, a shared lock, a semaphore of N).
 */
#include <sqlite3.h>
#include <stdint.h>

#include "sq.h"

int dlock__sq_try_acquire(struct dlock_store *st, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    char dead[16][DLOCK_TOKEN_HEX + 1];
    size_t ndead = 0;
    int64_t now_boot, wait = -1;
    unsigned live = 0, in_force = 0;
    int conflict = 0, rc, src;
    sqlite3_stmt *s;

    dlock__sq_lock(ss, deadline);
    if (dlock__sq_begin(ss) != SQLITE_OK) {
        rc = dlock__sq_is_busy(ss) ? DLOCK_BUSY : dlock__sq_error(ss, "begin");
        goto out;
    }
    now_boot = dlock__sq_host_ms(&ss->id);
    s = dlock__sq_stmt(ss, Q_HOLDERS);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *owner = (const char *)sqlite3_column_text(s, 0);

        if (dlock__sq_row_dead(&ss->id, s, now_boot)) {
            if (ndead < sizeof(dead) / sizeof(dead[0]) && owner != NULL)
                dlock__strlcpy(dead[ndead++], owner, sizeof(dead[0]));
            continue;
        }
        /* Every live holder counts against the limit, and the soonest
         * lease to end is when a slot may free.  Shared holders (limit 1)
         * only conflict with exclusive ones. */
        live++;
        if (dlock__sq_row_limit(s) != lk->limit)
            in_force = dlock__sq_row_limit(s);
        if (!lk->shared || !sqlite3_column_int(s, 1)) {
            int64_t left = sqlite3_column_int64(s, 2) - now_boot;

            conflict++;
            if (wait < 0 || left < wait)
                wait = left;
        }
    }
    sqlite3_reset(s);
    if (src != SQLITE_DONE)
        goto sqlerr;
    /* A semaphore of N admits while fewer than N hold it; a lock (N = 1)
     * and a shared lock keep the rule above. */
    conflict = (unsigned)conflict >= lk->limit;
    for (size_t i = 0; i < ndead; i++) {
        s = dlock__sq_stmt(ss, Q_DELETE_ROW);
        if (s == NULL)
            goto sqlerr;
        dlock__sq_bind_name(s, 1, lk);
        sqlite3_bind_text(s, 2, dead[i], -1, SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_DONE)
            goto sqlerr;
        sqlite3_reset(s);
    }
    if (in_force != 0 || conflict) {
        /* Keep the clean-up of dead rows. */
        if (dlock__sq_exec(ss, Q_COMMIT) != SQLITE_OK)
            goto sqlerr;
        if (in_force != 0) {
            /* Admitting under two limits would let the larger one in past
             * the smaller: refuse, whatever the caller's wait. */
            rc = dlock__seterr(DLOCK_EINVAL,
                               "'%s' is held with limit %u (%u holder%s); "
                               "this acquire asked for limit %u: every "
                               "holder of a name must ask the same limit",
                               lk->name, in_force, live, live == 1 ? "" : "s",
                               lk->limit);
            goto out;
        }
        *retry_ms = wait;
        rc = DLOCK_BUSY;
        goto out;
    }
    /* The fence counter lives apart from the lock rows and is never
     * deleted, so fences never go back, whatever happens to the rows. */
    s = dlock__sq_stmt(ss, Q_BUMP_FENCE);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    if (sqlite3_step(s) != SQLITE_ROW)
        goto sqlerr;
    lk->fence = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);

    s = dlock__sq_stmt(ss, Q_INSERT);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_text(s, 2, lk->token, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, lk->shared);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)lk->fence);
    /* dlock__sq_host_ms() rounds down, up to 1 ms before now: the row would end
     * that much before the lease the holder counts (from its attempt, on
     * CLOCK_MONOTONIC, whose ms do not line up with these), and another
     * holder could be admitted while this one still holds its slot (the
     * semaphore torture caught it).  Round up instead. */
    sqlite3_bind_int64(s, 5, now_boot + 1 + lk->ttl_ms);
    sqlite3_bind_text(s, 6, ss->id.boot_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 7, dlock__wall_ms());
    sqlite3_bind_text(s, 8, dlock__hostname(), -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 9, (sqlite3_int64)dlock__pid());
    sqlite3_bind_int64(s, 10, ss->id.start);
    sqlite3_bind_text(s, 11, ss->id.pid_ns, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 12, (sqlite3_int64)lk->limit);
    if (sqlite3_step(s) != SQLITE_DONE)
        goto sqlerr;
    sqlite3_reset(s);
    if (dlock__sq_exec(ss, Q_COMMIT) != SQLITE_OK)
        goto sqlerr;
    rc = DLOCK_OK;
    goto out;
sqlerr:
    /* Out of time on SQLite's write lock is "not acquired in time"; a
     * real error is an error. */
    rc = dlock__sq_is_busy(ss) ? DLOCK_BUSY : dlock__sq_error(ss, "acquire");
    dlock__sq_rollback(ss);
out:
    dlock__sq_unlock(ss);
    return rc;
}
