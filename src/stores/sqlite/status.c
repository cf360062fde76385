/*
 * status.c - reading and breaking the SQLite store's locks from outside:
 * status, list, force_release.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <string.h>

#include "sq.h"

/* Fill out from the live rows of name (caller holds the connection). */
static int describe(struct sqlite_store *ss, const char *name, dlock_info *out)
{
    int64_t now_boot = dlock__sq_host_ms(&ss->id), last = -1;
    sqlite3_stmt *s;
    int src;

    s = dlock__sq_stmt(ss, Q_HOLDERS);
    if (s == NULL)
        return dlock__sq_error(ss, "status");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t left;

        if (dlock__sq_row_dead(&ss->id, s, now_boot))
            continue;
        left = sqlite3_column_int64(s, 2) - now_boot;
        out->held = 1;
        out->holders++;
        out->shared = sqlite3_column_int(s, 1);
        if (dlock__sq_row_limit(s) > out->limit)
            out->limit = dlock__sq_row_limit(s);
        if (left > last) {
            const char *host = (const char *)sqlite3_column_text(s, 4);

            last = left;
            out->ttl_ms = left;
            out->pid = sqlite3_column_int64(s, 5);
            out->since_ms = sqlite3_column_int64(s, 8);
            dlock__strlcpy(out->host, host ? host : "", sizeof(out->host));
        }
    }
    sqlite3_reset(s);
    if (src != SQLITE_DONE)
        return dlock__sq_error(ss, "status");
    s = dlock__sq_stmt(ss, Q_FENCE);
    if (s == NULL)
        return dlock__sq_error(ss, "status");
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW)
        out->fence = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        return dlock__sq_error(ss, "status");
    return DLOCK_OK;
}

int dlock__sq_status(struct dlock_store *st, const char *name, dlock_info *out)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int rc;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    rc = describe(ss, name, out);
    dlock__sq_unlock(ss);
    return rc;
}

int dlock__sq_list(struct dlock_store *st, const char *prefix,
                   int (*cb)(const dlock_info *info, void *payload),
                   void *payload)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    struct dlock__names names = {0};
    size_t plen = strlen(prefix), ulen;
    char upper[DLOCK_NAME_MAX + 1];
    sqlite3_stmt *s;
    int rc = DLOCK_OK, src;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    s = dlock__sq_stmt(ss, Q_NAMES);
    if (s == NULL) {
        rc = dlock__sq_error(ss, "list");
        dlock__sq_unlock(ss);
        return rc;
    }
    /* sql/names.sql: the range [prefix, upper).  upper: the prefix
     * without its trailing 0xFF bytes, its last byte raised; none (a
     * BLOB, above every TEXT) when nothing is left. */
    memcpy(upper, prefix, plen);
    ulen = plen;
    while (ulen > 0 && (unsigned char)upper[ulen - 1] == 0xff)
        ulen--;
    sqlite3_bind_text(s, 1, prefix, (int)plen, SQLITE_STATIC);
    if (ulen > 0) {
        upper[ulen - 1] = (char)((unsigned char)upper[ulen - 1] + 1);
        sqlite3_bind_text(s, 2, upper, (int)ulen, SQLITE_STATIC);
    } else {
        sqlite3_bind_zeroblob(s, 2, 0);
    }
    while (rc == DLOCK_OK && (src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        size_t len = (size_t)sqlite3_column_bytes(s, 0);

        if (name != NULL && len >= plen && memcmp(name, prefix, plen) == 0)
            rc = dlock__names_add(&names, name, len);
    }
    sqlite3_reset(s);
    if (rc == DLOCK_OK && src != SQLITE_DONE)
        rc = dlock__sq_error(ss, "list");
    dlock__sq_unlock(ss);
    if (rc != DLOCK_OK) {
        dlock__names_free(&names);
        return rc;
    }
    return dlock__names_report(&names, st, dlock__sq_status, cb, payload);
}

int dlock__sq_force_release(struct dlock_store *st, const char *name,
                            unsigned *removed)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int rc = DLOCK_OK;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    s = dlock__sq_stmt(ss, Q_FORCE);
    if (s == NULL || (sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC),
                      sqlite3_step(s)) != SQLITE_DONE)
        rc = dlock__sq_error(ss, "release --force");
    else
        *removed = (unsigned)sqlite3_changes(ss->db);
    if (s != NULL)
        sqlite3_reset(s);
    if (rc == DLOCK_OK && *removed > 0)
        dlock__sq_wake(ss, name, strlen(name));
    dlock__sq_unlock(ss);
    return rc;
}
