/*
 * runs.c - run records on the SQLite store (store.h: run_begin,
 * run_end, runs, last_runs).
 *
 * The decision and the record are one BEGIN IMMEDIATE transaction that
 * first checks the caller still owns its lock row, so of the processes
 * racing for one period the lock lets one in at a time and each sees the
 * record of the one before.  "Now" is CLOCK_REALTIME of the calling
 * process: every process of a SQLite store shares one host and so one
 * clock (R4).  Runs are ordered by fence, which never goes back, not by
 * start time, which would follow the clock if it were set back.
 *
 * The rows are read as dlock may have written them: a value of the wrong
 * type or out of range (a row planted by anyone who can write the file)
 * is shown clamped, never trusted to index or size anything.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sq.h"

/* A failed SQLite call, for the caller to report with its message (never
 * a dlock code: those are 0 or negative).  The statements are sq.h's
 * Q_RUN_*, of the one cached set: reset after each use, never finalized
 * here. */
#define SQLERR 1

static int64_t col_i64(sqlite3_stmt *s, int i, int64_t lo, int64_t hi,
                       int64_t dflt)
{
    sqlite3_int64 v;

    if (sqlite3_column_type(s, i) != SQLITE_INTEGER)
        return dflt;
    v = sqlite3_column_int64(s, i);
    return v < lo ? lo : v > hi ? hi : v;
}

/* The current row of run-one.sql, run-newest.sql or run-last.sql into r. */
static void read_run(sqlite3_stmt *s, dlock_run *r)
{
    const char *name = (const char *)sqlite3_column_text(s, 0);
    const char *host = (const char *)sqlite3_column_text(s, 2);
    size_t len = (size_t)sqlite3_column_bytes(s, 0);

    memset(r, 0, sizeof(*r));
    if (name != NULL) {
        if (len > DLOCK_NAME_MAX)
            len = DLOCK_NAME_MAX;
        memcpy(r->name, name, len);
        r->name[len] = '\0';
    }
    dlock__strlcpy(r->host, host != NULL ? host : "", sizeof(r->host));
    r->fence = (uint64_t)col_i64(s, 1, 0, INT64_MAX, 0);
    r->pid = col_i64(s, 3, -1, INT64_MAX, -1);
    r->start_ms = col_i64(s, 4, 0, INT64_MAX, 0);
    r->end_ms = col_i64(s, 5, 0, INT64_MAX, 0);
    r->result = (int)col_i64(s, 6, DLOCK_RUN_RUNNING, DLOCK_RUN_TIMEDOUT,
                             DLOCK_RUN_ABANDONED);
    r->status = (int)col_i64(s, 7, INT_MIN, INT_MAX, -1);
}

/* The run of lk's name with fence into *r (r->fence = 0 if not kept). */
static int get_run(struct sqlite_store *ss, const struct dlock_lock *lk,
                   int64_t fence, dlock_run *r)
{
    sqlite3_stmt *s;
    int src;

    memset(r, 0, sizeof(*r));
    if (fence <= 0)
        return DLOCK_OK;
    s = dlock__sq_stmt(ss, Q_RUN_ONE);
    if (s == NULL)
        return SQLERR;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_int64(s, 2, fence);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW)
        read_run(s, r);
    sqlite3_reset(s);
    return src == SQLITE_ROW || src == SQLITE_DONE ? DLOCK_OK : SQLERR;
}

/* Step a statement that returns no rows, then reset it. */
static int done(sqlite3_stmt *s)
{
    int src;

    if (s == NULL)
        return SQLERR;
    src = sqlite3_step(s);
    sqlite3_reset(s);
    return src == SQLITE_DONE ? DLOCK_OK : SQLERR;
}

/* BEGIN IMMEDIATE and COMMIT, failures as dlock codes with the message. */
static int begin(struct sqlite_store *ss)
{
    return dlock__sq_begin(ss) == SQLITE_OK ? DLOCK_OK
                                            : dlock__sq_error(ss, "begin");
}

static int commit(struct sqlite_store *ss)
{
    return dlock__sq_exec(ss, Q_COMMIT) == SQLITE_OK
               ? DLOCK_OK
               : dlock__sq_error(ss, "commit");
}

/* A name's keep row (dlock_run_keep) as run_begin and keep_runs use it. */
struct keep_row {
    int64_t keep;      /* the setting; DLOCK_RUNS_KEPT without a row */
    int64_t kept;      /* runs of the name now, -1: not known (count) */
    int64_t uncounted; /* runs begun since the last count */
};

/* How many runs of name are kept (run-count.sql): see run-count.sql for
 * when. */
static int count_runs(struct sqlite_store *ss, const char *name, size_t len,
                      int64_t *kept)
{
    sqlite3_stmt *s = dlock__sq_stmt(ss, Q_RUN_COUNT);
    int src;

    if (s == NULL)
        return SQLERR;
    sqlite3_bind_text(s, 1, name, (int)len, SQLITE_STATIC);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW)
        *kept = col_i64(s, 0, 0, INT64_MAX, 0);
    sqlite3_reset(s);
    return src == SQLITE_ROW ? DLOCK_OK : SQLERR;
}

/* A column read as dlock writes it: an integer in lo..hi, else dflt
 * (never clamped: a planted -3 is no setting of 1). */
static int64_t col_in(sqlite3_stmt *s, int i, int64_t lo, int64_t hi,
                      int64_t dflt)
{
    sqlite3_int64 v;

    if (sqlite3_column_type(s, i) != SQLITE_INTEGER)
        return dflt;
    v = sqlite3_column_int64(s, i);
    return v < lo || v > hi ? dflt : v;
}

/* Name's keep row into *k (no row: the default, the count unknown).
 * DLOCK_OK or SQLERR. */
static int keep_get(struct sqlite_store *ss, const char *name, size_t len,
                    struct keep_row *k)
{
    sqlite3_stmt *s = dlock__sq_stmt(ss, Q_RUN_KEEP_GET);
    int src;

    k->keep = DLOCK_RUNS_KEPT;
    k->kept = -1;
    k->uncounted = 0;
    if (s == NULL)
        return SQLERR;
    sqlite3_bind_text(s, 1, name, (int)len, SQLITE_STATIC);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        k->keep = col_in(s, 0, 1, DLOCK_RUNS_KEPT_MAX, DLOCK_RUNS_KEPT);
        /* A name holds at most its setting and one; more is no count. */
        k->kept = col_in(s, 1, 0, DLOCK_RUNS_KEPT_MAX + 1, -1);
        k->uncounted =
            col_in(s, 2, 0, DLOCK_RUNS_KEPT_MAX, DLOCK_RUNS_KEPT_MAX);
    }
    sqlite3_reset(s);
    return src == SQLITE_ROW || src == SQLITE_DONE ? DLOCK_OK : SQLERR;
}

/* Drop name's oldest runs below fence `below` over k->keep (k->kept: how
 * many it holds), then record the row.  Fewer dropped than asked means
 * none older is left: the count is then exact (what is at or above
 * `below`).  DLOCK_OK or SQLERR. */
static int keep_trim(struct sqlite_store *ss, const char *name, size_t len,
                     struct keep_row *k, int64_t below, int64_t at_or_above)
{
    sqlite3_stmt *s;

    if (k->kept > k->keep) {
        int64_t want = k->kept - k->keep, got;

        s = dlock__sq_stmt(ss, Q_RUN_TRIM);
        if (s == NULL)
            return SQLERR;
        sqlite3_bind_text(s, 1, name, (int)len, SQLITE_STATIC);
        sqlite3_bind_int64(s, 2, want);
        sqlite3_bind_int64(s, 3, below);
        if (done(s) != DLOCK_OK)
            return SQLERR;
        got = sqlite3_changes(ss->db);
        k->kept = got < want ? at_or_above : k->kept - got;
    }
    s = dlock__sq_stmt(ss, Q_RUN_KEEP_PUT);
    if (s == NULL)
        return SQLERR;
    sqlite3_bind_text(s, 1, name, (int)len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, k->keep);
    sqlite3_bind_int64(s, 3, k->kept);
    sqlite3_bind_int64(s, 4, k->uncounted);
    return done(s);
}

/* After run_begin recorded lk's run: the count with it (counted afresh
 * when unknown or once every keep runs, else one more), then the trim. */
static int keep_after_insert(struct sqlite_store *ss,
                             const struct dlock_lock *lk)
{
    struct keep_row k;

    if (keep_get(ss, lk->name, lk->name_len, &k) != DLOCK_OK)
        return SQLERR;
    if (k.kept < 0 || ++k.uncounted >= k.keep) {
        if (count_runs(ss, lk->name, lk->name_len, &k.kept) != DLOCK_OK)
            return SQLERR;
        k.uncounted = 0;
    } else {
        k.kept++;
    }
    return keep_trim(ss, lk->name, lk->name_len, &k, (int64_t)lk->fence, 1);
}

int dlock__sq_run_begin(struct dlock_store *st, struct dlock_lock *lk,
                        const dlock_run_rule *rule, const char *host,
                        int64_t pid, int *go, dlock_run *last)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int64_t now = dlock__wall_ms(), last_start = 0, last_fence = 0,
            ok_fence = 0;
    int have = 0, own, rc, src;
    sqlite3_stmt *s;

    *go = 0;
    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    rc = begin(ss);
    if (rc != DLOCK_OK)
        goto out;
    own = dlock__sq_owns(ss, lk);
    if (own < 0)
        goto sqlerr;
    if (own == 0) {
        dlock__sq_rollback(ss);
        rc = dlock__lost(lk, "its lease ran out or it was broken");
        goto out;
    }
    /* Suspended: skipped before any rule, nothing written. */
    src = dlock__sq_suspended_run(ss, lk, last);
    if (src < 0)
        goto sqlerr;
    if (src == 1) {
        dlock__sq_rollback(ss);
        rc = DLOCK_OK;
        goto out;
    }
    s = dlock__sq_stmt(ss, Q_RUN_SUMMARY);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW) {
        have = 1;
        last_start = col_i64(s, 0, INT64_MIN, INT64_MAX, 0);
        last_fence = col_i64(s, 1, 0, INT64_MAX, 0);
        ok_fence = col_i64(s, 2, 0, INT64_MAX, 0);
    }
    sqlite3_reset(s);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        goto sqlerr;
    /* A clock set back makes now - last_start negative: skipped, for as
     * long as it was set back (dlock(1) says so). */
    if ((rule->once && ok_fence > 0) ||
        (have && rule->period_ms > 0 &&
         now - last_start < rule->period_ms / 2)) {
        if (get_run(ss, lk, rule->once && ok_fence > 0 ? ok_fence : last_fence,
                    last) != DLOCK_OK)
            goto sqlerr;
        dlock__sq_rollback(ss);
        rc = DLOCK_OK;
        goto out;
    }
    s = dlock__sq_stmt(ss, Q_RUN_ABANDON);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_int64(s, 2, last_fence);
    if (done(s) != DLOCK_OK)
        goto sqlerr;
    s = dlock__sq_stmt(ss, Q_RUN_NEWEST);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_int(s, 2, 1);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW)
        read_run(s, last);
    sqlite3_reset(s);
    if (src != SQLITE_ROW && src != SQLITE_DONE)
        goto sqlerr;
    s = dlock__sq_stmt(ss, Q_RUN_INSERT);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)lk->fence);
    sqlite3_bind_text(s, 3, host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, pid);
    sqlite3_bind_int64(s, 5, now);
    if (done(s) != DLOCK_OK)
        goto sqlerr;
    s = dlock__sq_stmt(ss, Q_RUN_NAMES);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_int64(s, 2, now);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)lk->fence);
    if (done(s) != DLOCK_OK)
        goto sqlerr;
    /* The one just recorded may put the name over its setting. */
    if (keep_after_insert(ss, lk) != DLOCK_OK)
        goto sqlerr;
    rc = commit(ss);
    if (rc != DLOCK_OK) {
        dlock__sq_rollback(ss);
        memset(last, 0, sizeof(*last));
        goto out;
    }
    *go = 1;
    goto out;
sqlerr:
    rc = dlock__sq_error(ss, "run begin");
    dlock__sq_rollback(ss);
    memset(last, 0, sizeof(*last));
out:
    dlock__sq_unlock(ss);
    return rc;
}

int dlock__sq_run_end(struct dlock_store *st, struct dlock_lock *lk, int result,
                      int status)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int rc;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    rc = begin(ss);
    if (rc != DLOCK_OK)
        goto out;
    s = dlock__sq_stmt(ss, Q_RUN_END);
    if (s == NULL)
        goto sqlerr;
    dlock__sq_bind_name(s, 1, lk);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)lk->fence);
    sqlite3_bind_int(s, 3, result);
    sqlite3_bind_int(s, 4, status);
    sqlite3_bind_int64(s, 5, dlock__wall_ms());
    if (done(s) != DLOCK_OK)
        goto sqlerr;
    if (result == DLOCK_RUN_EXITED && status == 0 &&
        sqlite3_changes(ss->db) > 0) {
        s = dlock__sq_stmt(ss, Q_RUN_OK);
        if (s == NULL)
            goto sqlerr;
        dlock__sq_bind_name(s, 1, lk);
        sqlite3_bind_int64(s, 2, (sqlite3_int64)lk->fence);
        if (done(s) != DLOCK_OK)
            goto sqlerr;
    }
    rc = commit(ss);
    if (rc != DLOCK_OK)
        dlock__sq_rollback(ss);
    goto out;
sqlerr:
    rc = dlock__sq_error(ss, "run end");
    dlock__sq_rollback(ss);
out:
    dlock__sq_unlock(ss);
    return rc;
}

/* Rows are gathered with the connection held, then handed to cb without
 * it (cb may call the store). */
struct gathered {
    dlock_run *v;
    size_t n, cap;
};

static int gather(sqlite3_stmt *s, struct gathered *g, const char *prefix)
{
    size_t plen = prefix != NULL ? strlen(prefix) : 0;
    int src;

    while ((src = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);

        if (prefix != NULL &&
            (name == NULL || (size_t)sqlite3_column_bytes(s, 0) < plen ||
             memcmp(name, prefix, plen) != 0))
            continue;
        if (g->n == g->cap) {
            size_t cap = g->cap ? g->cap * 2 : 16;
            dlock_run *v = realloc(g->v, cap * sizeof(*v));

            if (v == NULL)
                return dlock__enomem();
            g->v = v;
            g->cap = cap;
        }
        read_run(s, &g->v[g->n++]);
    }
    return src == SQLITE_DONE ? DLOCK_OK : SQLERR;
}

static int report(struct gathered *g, dlock_run_cb cb, void *payload)
{
    int rc = DLOCK_OK;

    for (size_t i = 0; i < g->n && rc == 0; i++)
        rc = cb(&g->v[i], payload);
    free(g->v);
    return rc;
}

/* Run query q (Q_RUN_NEWEST: name's runs, newest first, at most max;
 * Q_RUN_LAST: the newest run of each name under prefix), then hand the
 * rows to cb with the store unlocked. */
static int query_runs(struct dlock_store *st, int q, const char *name,
                      unsigned max, const char *prefix, const char *what,
                      dlock_run_cb cb, void *payload)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    struct gathered g = {NULL, 0, 0};
    sqlite3_stmt *s;
    int rc;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    s = dlock__sq_stmt(ss, q);
    if (s == NULL) {
        rc = dlock__sq_error(ss, what);
    } else {
        if (name != NULL) {
            sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
            sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
        }
        rc = gather(s, &g, prefix);
        if (rc == SQLERR)
            rc = dlock__sq_error(ss, what);
        sqlite3_reset(s);
    }
    dlock__sq_unlock(ss);
    if (rc != DLOCK_OK) {
        free(g.v);
        return rc;
    }
    return report(&g, cb, payload);
}

int dlock__sq_runs(struct dlock_store *st, const char *name, unsigned max,
                   dlock_run_cb cb, void *payload)
{
    return query_runs(st, Q_RUN_NEWEST, name, max, NULL, "history", cb,
                      payload);
}

int dlock__sq_last_runs(struct dlock_store *st, const char *prefix,
                        dlock_run_cb cb, void *payload)
{
    return query_runs(st, Q_RUN_LAST, NULL, 0, prefix, "last runs", cb,
                      payload);
}

int dlock__sq_keep_runs(struct dlock_store *st, const char *name, unsigned n)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    size_t len = strlen(name);
    struct keep_row k = {(int64_t)n, 0, 0};
    int rc;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    rc = begin(ss);
    if (rc != DLOCK_OK)
        goto out;
    /* Counted afresh; no run is being recorded, so any may go. */
    if (count_runs(ss, name, len, &k.kept) != DLOCK_OK ||
        keep_trim(ss, name, len, &k, INT64_MAX, 0) != DLOCK_OK) {
        rc = dlock__sq_error(ss, "keep runs");
        dlock__sq_rollback(ss);
        goto out;
    }
    rc = commit(ss);
    if (rc != DLOCK_OK)
        dlock__sq_rollback(ss);
out:
    dlock__sq_unlock(ss);
    return rc;
}

int dlock__sq_kept_runs(struct dlock_store *st, const char *name, unsigned *n)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    sqlite3_stmt *s;
    int rc = DLOCK_OK, src;

    *n = DLOCK_RUNS_KEPT;
    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    s = dlock__sq_stmt(ss, Q_RUN_KEEP_GET);
    if (s == NULL) {
        rc = dlock__sq_error(ss, "kept runs");
        goto out;
    }
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    src = sqlite3_step(s);
    if (src == SQLITE_ROW)
        *n = (unsigned)col_in(s, 0, 1, DLOCK_RUNS_KEPT_MAX, DLOCK_RUNS_KEPT);
    else if (src != SQLITE_DONE)
        rc = dlock__sq_error(ss, "kept runs");
    sqlite3_reset(s);
out:
    dlock__sq_unlock(ss);
    return rc;
}
