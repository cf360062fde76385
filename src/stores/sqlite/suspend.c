/*
 * suspend.c - a job's suspension on the SQLite store (store.h: suspend,
 * resume, suspension, suspensions), in dlock_suspensions (schema.sql):
 * one row per suspended name, who, since when (CLOCK_REALTIME, as run
 * records) and why.  suspend and resume are one BEGIN IMMEDIATE
 * transaction each (read, then write), so two racing suspends leave the
 * first's record and tell the second; run_begin reads the row in its own
 * transaction (dlock__sq_suspended_run()), before any rule.
 *
 * A row is read as anyone who can write the file may have left it: a
 * text too long, not TEXT, or with a NUL in it shows as "?" (the core
 * vets the rest, suspend.c of the core); the row still suspends.
 */
#include <stdlib.h>
#include <string.h>

#include "sq.h"

/* Column i of s into dst (size bytes), "?" for what dlock cannot have
 * written there. */
static void col_text(sqlite3_stmt *s, int i, char *dst, size_t size)
{
    const char *v = (const char *)sqlite3_column_text(s, i);
    size_t n = (size_t)sqlite3_column_bytes(s, i);

    if (sqlite3_column_type(s, i) != SQLITE_TEXT || v == NULL || n >= size ||
        memchr(v, '\0', n) != NULL) {
        dlock__strlcpy(dst, "?", size);
        return;
    }
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static int64_t col_ms(sqlite3_stmt *s, int i)
{
    sqlite3_int64 v;

    if (sqlite3_column_type(s, i) != SQLITE_INTEGER)
        return 0;
    v = sqlite3_column_int64(s, i);
    return v < 0 ? 0 : v;
}

/* Read name's row (suspend-get.sql: by_whom, since_ms, reason from column
 * 0): 1 with *cur filled, 0 if none, -1 on a failed step. */
static int get(struct sqlite_store *ss, const char *name, size_t len,
               dlock_suspension *cur)
{
    sqlite3_stmt *s = dlock__sq_stmt(ss, Q_SUSPEND_GET);
    int src, found = 0;

    if (s == NULL)
        return -1;
    sqlite3_bind_text(s, 1, name, (int)len, SQLITE_STATIC);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        found = 1;
        col_text(s, 0, cur->by, sizeof(cur->by));
        cur->since_ms = col_ms(s, 1);
        col_text(s, 2, cur->reason, sizeof(cur->reason));
    }
    sqlite3_reset(s);
    return src == SQLITE_ROW || src == SQLITE_DONE ? found : -1;
}

int dlock__sq_suspended_run(struct sqlite_store *ss,
                            const struct dlock_lock *lk, dlock_run *r)
{
    dlock_suspension cur;
    int found;

    memset(&cur, 0, sizeof(cur));
    found = get(ss, lk->name, lk->name_len, &cur);
    if (found == 1) {
        memset(r, 0, sizeof(*r));
        r->result = DLOCK_RUN_SUSPENDED;
        r->status = -1;
        r->start_ms = cur.since_ms;
        dlock__strlcpy(r->host, cur.by, sizeof(r->host));
    }
    return found;
}

/* suspend (put != 0) or resume: read, then insert if none or delete if
 * one, in one transaction. */
static int change(struct dlock_store *st, const char *name, const char *by,
                  const char *reason, int *was, dlock_suspension *cur, int put)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    const char *what = "suspension record";
    sqlite3_stmt *s;
    int found, rc, src;

    *was = 0;
    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    if (dlock__sq_begin(ss) != SQLITE_OK) {
        rc = dlock__sq_error(ss, what);
        goto out;
    }
    found = get(ss, name, strlen(name), cur);
    if (found < 0)
        goto sqlerr;
    if (found == put) {
        /* Suspended already, or nothing to lift: nothing to write. */
        *was = found;
        dlock__sq_rollback(ss);
        rc = DLOCK_OK;
        goto out;
    }
    s = dlock__sq_stmt(ss, put ? Q_SUSPEND_PUT : Q_SUSPEND_DELETE);
    if (s == NULL)
        goto sqlerr;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    if (put) {
        sqlite3_bind_text(s, 2, by, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, (sqlite3_int64)dlock__wall_ms());
        sqlite3_bind_text(s, 4, reason, -1, SQLITE_STATIC);
    }
    src = sqlite3_step(s);
    sqlite3_reset(s);
    if (src != SQLITE_DONE || dlock__sq_exec(ss, Q_COMMIT) != SQLITE_OK)
        goto sqlerr;
    *was = found;
    rc = DLOCK_OK;
    goto out;
sqlerr:
    rc = dlock__sq_error(ss, what);
    dlock__sq_rollback(ss);
    *was = 0;
out:
    dlock__sq_unlock(ss);
    return rc;
}

int dlock__sq_suspend(struct dlock_store *st, const char *name, const char *by,
                      const char *reason, int *was, dlock_suspension *cur)
{
    return change(st, name, by, reason, was, cur, 1);
}

int dlock__sq_resume(struct dlock_store *st, const char *name, int *was,
                     dlock_suspension *cur)
{
    return change(st, name, NULL, NULL, was, cur, 0);
}

int dlock__sq_suspension(struct dlock_store *st, const char *name, int *was,
                         dlock_suspension *cur)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int found, rc = DLOCK_OK;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    found = get(ss, name, strlen(name), cur);
    if (found < 0)
        rc = dlock__sq_error(ss, "suspension record");
    *was = found == 1;
    dlock__sq_unlock(ss);
    return rc;
}

int dlock__sq_suspensions(struct dlock_store *st, const char *prefix,
                          dlock_suspension_cb cb, void *payload)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    size_t plen = strlen(prefix), n = 0, cap = 0;
    dlock_suspension *v = NULL;
    sqlite3_stmt *s;
    int rc = DLOCK_OK, src;

    /* Gathered with the connection held, handed to cb without it (cb may
     * call the store), as runs.c does. */
    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    s = dlock__sq_stmt(ss, Q_SUSPEND_ALL);
    if (s == NULL) {
        rc = dlock__sq_error(ss, "suspension records");
        goto out;
    }
    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        size_t len = (size_t)sqlite3_column_bytes(s, 0);

        if (name == NULL || len < plen || len > DLOCK_NAME_MAX ||
            memchr(name, '\0', len) != NULL || memcmp(name, prefix, plen) != 0)
            continue;
        if (n == cap) {
            size_t c = cap ? cap * 2 : 16;
            dlock_suspension *w = realloc(v, c * sizeof(*w));

            if (w == NULL) {
                rc = dlock__enomem();
                break;
            }
            v = w;
            cap = c;
        }
        memset(&v[n], 0, sizeof(v[n]));
        memcpy(v[n].name, name, len);
        v[n].name[len] = '\0';
        col_text(s, 1, v[n].by, sizeof(v[n].by));
        v[n].since_ms = col_ms(s, 2);
        col_text(s, 3, v[n].reason, sizeof(v[n].reason));
        n++;
    }
    if (rc == DLOCK_OK && src != SQLITE_DONE)
        rc = dlock__sq_error(ss, "suspension records");
    sqlite3_reset(s);
out:
    dlock__sq_unlock(ss);
    for (size_t i = 0; i < n && rc == DLOCK_OK; i++)
        rc = cb(&v[i], payload);
    free(v);
    return rc;
}
