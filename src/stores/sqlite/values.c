/*
 * values.c - an election's leader value on the SQLite store (store.h:
 * value_set, value_get), in dlock_leaders (schema.sql): one row per name,
 * the value and the fence (term) it was written under.
 *
 * value_set is one BEGIN IMMEDIATE transaction that first checks the
 * caller still owns its lock row (as run_begin does), so a holder whose
 * lease ran out writes nothing, and no later holder's value is replaced
 * by an earlier term's.  No notifications: dlock_observe() re-reads every
 * DLOCK_OBSERVE_POLL_MS.
 *
 * A row is read as dlock may have written it: one that is not a positive
 * integer fence with a TEXT value of at most DLOCK_VALUE_MAX bytes of
 * UTF-8 (planted by anyone who can write the file) is no value at all,
 * as is the empty value a leader without one writes (dlock.h: NULL and ""
 * are no value).
 */
#include <stdlib.h>
#include <string.h>

#include "sq.h"

int dlock__sq_value_set(struct dlock_store *st, struct dlock_lock *lk,
                        const char *value, size_t len)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int own, rc;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    if (dlock__sq_begin(ss) != SQLITE_OK) {
        rc = dlock__sq_error(ss, "proclaim");
        goto out;
    }
    own = dlock__sq_owns(ss, lk);
    if (own < 0)
        goto sqlerr;
    if (own == 0) {
        dlock__sq_rollback(ss);
        rc = dlock__lost(lk, "its lease ran out or it was broken");
        goto out;
    }
    s = dlock__sq_stmt(ss, Q_VALUE_SET);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)lk->fence);
    sqlite3_bind_text(s, 3, value != NULL ? value : "", (int)len,
                      SQLITE_STATIC);
    rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE || dlock__sq_exec(ss, Q_COMMIT) != SQLITE_OK)
        goto sqlerr;
    rc = DLOCK_OK;
    goto out;
sqlerr:
    rc = dlock__sq_error(ss, "proclaim");
    dlock__sq_rollback(ss);
out:
    dlock__sq_unlock(ss);
    return rc;
}

int dlock__sq_value_get(struct dlock_store *st, const char *name,
                        uint64_t *fence, char **value, size_t *len)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int rc, src;

    *fence = 0;
    *value = NULL;
    *len = 0;
    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    s = dlock__sq_stmt(ss, Q_VALUE_GET);
    if (s == NULL) {
        rc = dlock__sq_error(ss, "leader value");
        goto out;
    }
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    rc = DLOCK_OK;
    if (src == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER &&
        sqlite3_column_int64(s, 0) > 0 &&
        sqlite3_column_type(s, 1) == SQLITE_TEXT) {
        const unsigned char *v = sqlite3_column_text(s, 1);
        size_t n = (size_t)sqlite3_column_bytes(s, 1);

        if (v != NULL && n > 0 && n <= DLOCK_VALUE_MAX &&
            dlock__utf8_valid(v, n)) {
            *value = dlock__strndup((const char *)v, n);
            if (*value == NULL) {
                rc = dlock__enomem();
            } else {
                *fence = (uint64_t)sqlite3_column_int64(s, 0);
                *len = n;
            }
        }
    } else if (src != SQLITE_ROW && src != SQLITE_DONE) {
        rc = dlock__sq_error(ss, "leader value");
    }
    sqlite3_reset(s);
out:
    dlock__sq_unlock(ss);
    return rc;
}
