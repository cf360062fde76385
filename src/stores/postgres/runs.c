/*
 * runs.c - the PostgreSQL store's run records (store.h: run_begin,
 * run_end, runs, last_runs, keep_runs, kept_runs), in both modes, in the
 * tables dlock_runs and dlock_run_names (sql/part-runs-ddl.sql).
 *
 * run_begin is one round trip: a query of two statements in one
 * implicit transaction, on the lock's own session (session mode) or a
 * pooled connection (lease mode, as its acquire: no prepared statement,
 * no session state).  The first statement locks the name's summary row
 * (creating it), only if lk's row is still ours and within its lease, so
 * the run_begin of every holder of a name queues there (a semaphore's
 * holders, a lease that ran out under a slow holder).  The second, on a
 * new snapshot (READ COMMITTED), sees every run committed before it,
 * checks ownership again, decides by the rule on the server's clock
 * (clock_timestamp()) and, going ahead, writes everything in one
 * statement (sql/run_begin.sql).  A query of several statements takes no
 * parameters: run_begin's are inlined as literals by dlock__pg_inline()
 * (conn.c), the store's one such text with lease mode's acquire
 * (docs/internals.md).  run_end and the readers: one statement each, with
 * parameters (sql/run_end.sql, runs.sql, last_runs.sql).
 *
 * The acquire and release of a lock are untouched: run records cost only
 * the calls that ask for them.  Tables missing on a server whose lock
 * tables predate them are created by the first run_begin (as `dlock
 * init`); the readers answer "no runs" without creating anything.
 *
 * A suspended name (a row in dlock_suspensions, suspend.c) is skipped in
 * the same round trip, before any rule, with nothing written.
 *
 * How many runs a name keeps (dlock_keep_runs()) is its summary row's
 * keep_runs, with a count of its runs (kept_runs, valid while the newest
 * run is kept_fence), so that run_begin drops what its run puts over the
 * setting without counting or scanning the runs: its cost is the same
 * with 20 kept or 10,000 (docs/stores/postgres.md).  The count may drift
 * (runs deleted by hand, a value planted in range): the trim drops only
 * runs below the new run's fence, never the run just recorded (its
 * --once success holds); a trim that finds fewer than it asked counts
 * what is left; and uncounted (begins since the last real count) makes
 * every keep_runs-th begin count afresh, so drift is gone within
 * keep_runs runs at a flat cost per run, amortized.  keep_runs is one
 * round trip of two statements, as run_begin (sql/keep_runs.sql).
 * Columns missing on a server whose run tables predate them (SQLSTATE
 * undefined_column) are added as missing tables are made, by
 * sql/init_runs.sql, then the op is sent again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

/* SQLSTATE undefined_table: the run tables are not there (yet). */
#define UNDEFINED_TABLE "42P01"
/* SQLSTATE undefined_column: run tables of a dlock before keep_runs. */
#define UNDEFINED_COLUMN "42703"

/* An answer of state means tables or columns this dlock has and the
 * server's run tables do not (yet). */
static int older_tables(int rc, const char *state)
{
    return rc == DLOCK_ESTORE && (strcmp(state, UNDEFINED_TABLE) == 0 ||
                                  strcmp(state, UNDEFINED_COLUMN) == 0);
}

/* Make the run tables, or their missing columns (sql/init_runs.sql). */
static int make_tables(struct pg_store *ps)
{
    PGresult *res = NULL;
    int rc = dlock__pg_pooled(ps, "creating the run tables", ps->text.init_runs,
                              0, NULL, &res, NULL);

    PQclear(res);
    return rc;
}

/* --- statements on a pooled connection ------------------------------- */

/* Row i of a result of fence, host, pid, start_ms, end_ms, result,
 * status from column c on, into run. */
static void run_from(dlock_run *run, const PGresult *r, int i, int c)
{
    run->fence = (uint64_t)dlock__pg_col_i64(r, i, c, 0);
    dlock__strlcpy(run->host, PQgetvalue(r, i, c + 1), sizeof(run->host));
    run->pid = dlock__pg_col_i64(r, i, c + 2, 0);
    run->start_ms = dlock__pg_col_i64(r, i, c + 3, 0);
    run->end_ms = dlock__pg_col_i64(r, i, c + 4, 0);
    run->result = (int)dlock__pg_col_i64(r, i, c + 5, 0);
    run->status = (int)dlock__pg_col_i64(r, i, c + 6, -1);
}

/* --- run_begin ------------------------------------------------------- */

static int begin_once(struct pg_store *ps, struct dlock_lock *lk,
                      const char *sql, PGresult **res, char state[6])
{
    if (ps->lease_mode)
        return dlock__pg_pooled(ps, "run begin", sql, 0, NULL, res, state);
    return dlock__pg_held_run_st(ps, lk, "run begin", -1, sql, 0, NULL, res,
                                 state);
}

int dlock__pg_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                        const dlock_run_rule *rule, const char *host,
                        int64_t pid, int *go, dlock_run *last)
{
    struct pg_store *ps = (struct pg_store *)s;
    char fence[24], spid[24], half[24], dflt[16], max[16], state[6] = "";
    const char *v[10] = {lk->name,
                         lk->token,
                         fence,
                         host,
                         spid,
                         rule->once ? "true" : "false",
                         rule->period_ms > 0 ? "true" : "false",
                         half,
                         dflt,
                         max};
    char *sql = NULL;
    PGresult *res = NULL;
    int rc, ours;

    *go = 0;
    snprintf(fence, sizeof(fence), "%lld", (long long)lk->fence);
    snprintf(spid, sizeof(spid), "%lld", (long long)pid);
    snprintf(half, sizeof(half), "%lld", (long long)(rule->period_ms / 2));
    snprintf(dflt, sizeof(dflt), "%d", DLOCK_RUNS_KEPT);
    snprintf(max, sizeof(max), "%d", DLOCK_RUNS_KEPT_MAX);
    sql = dlock__pg_inline(ps->text.run_begin[ps->lease_mode], 10, v);
    if (sql == NULL) {
        rc = DLOCK_ENOMEM;
        goto out;
    }
    rc = begin_once(ps, lk, sql, &res, state);
    if (older_tables(rc, state)) {
        /* A server whose lock tables predate run records, or whose run
         * tables predate keep_runs: create them (the transaction above
         * rolled back), then again. */
        PQclear(res);
        res = NULL;
        rc = make_tables(ps);
        if (rc == DLOCK_OK)
            rc = begin_once(ps, lk, sql, &res, state);
    }
    if (rc != DLOCK_OK)
        goto out;
    if (PQntuples(res) != 1 || PQnfields(res) != 9) {
        rc = dlock__seterr(DLOCK_ESTORE,
                           "postgres run begin: unexpected answer (%s)",
                           ps->base.url);
        goto out;
    }
    ours = dlock__pg_col_bool(res, 0, 0);
    if (!ours) {
        rc = dlock__pg_found_lost(ps, lk);
        goto out;
    }
    *go = dlock__pg_col_bool(res, 0, 1);
    if (!PQgetisnull(res, 0, 2))
        run_from(last, res, 0, 2);
    /* Suspended (sql/run_begin.sql): skipped before any rule, nothing
     * written; host is who suspended it (suspend.c). */
    if (!*go && last->fence == 0 && last->result == DLOCK_RUN_SUSPENDED)
        dlock__pg_suspended_run(last, res, 0, 3);
out:
    PQclear(res);
    free(sql);
    return rc;
}

/* --- run_end ----------------------------------------------------------- */

int dlock__pg_run_end(struct dlock_store *s, struct dlock_lock *lk, int result,
                      int status)
{
    struct pg_store *ps = (struct pg_store *)s;
    char fence[24], res_s[16], st[16];
    const char *v[4] = {lk->name, fence, res_s, st};
    PGresult *res = NULL;
    int rc = DLOCK_LOST;

    snprintf(fence, sizeof(fence), "%lld", (long long)lk->fence);
    snprintf(res_s, sizeof(res_s), "%d", result);
    snprintf(st, sizeof(st), "%d", status);
    /* On the lock's session while it has one (no second connection for
     * a `dlock run`); a session that is gone: a pooled connection. */
    if (!ps->lease_mode && dlock__pg_held_session(lk) != NULL)
        rc = dlock__pg_held_run(ps, lk, "run end", -1, ps->text.run_end, 4, v,
                                &res);
    if (rc == DLOCK_LOST)
        rc =
            dlock__pg_pooled(ps, "run end", ps->text.run_end, 4, v, &res, NULL);
    PQclear(res);
    return rc;
}

/* --- runs, last_runs ------------------------------------------------- */

/* Each row of res to cb, without a connection held (cb may call the
 * library); frees res. */
static int report(PGresult *res, dlock_run_cb cb, void *payload)
{
    dlock_run *run = malloc(sizeof(*run));
    int rc = DLOCK_OK;

    if (run == NULL) {
        PQclear(res);
        return dlock__enomem();
    }
    for (int i = 0; i < PQntuples(res) && rc == DLOCK_OK; i++) {
        const char *name = PQgetvalue(res, i, 0);
        size_t len = strlen(name);

        if (len == 0 || len > DLOCK_NAME_MAX)
            continue; /* not a name dlock wrote */
        memset(run, 0, sizeof(*run));
        memcpy(run->name, name, len + 1);
        run_from(run, res, i, 1);
        rc = cb(run, payload);
    }
    free(run);
    PQclear(res);
    return rc;
}

/* A read of tables that are not there: no runs (nothing is created). */
static int read_runs(struct pg_store *ps, const char *what, const char *sql,
                     int n, const char *const *v, dlock_run_cb cb,
                     void *payload)
{
    PGresult *res = NULL;
    char state[6] = "";
    int rc = dlock__pg_pooled(ps, what, sql, n, v, &res, state);

    if (rc == DLOCK_ESTORE && strcmp(state, UNDEFINED_TABLE) == 0) {
        dlock__clearerr();
        return DLOCK_OK;
    }
    if (rc != DLOCK_OK)
        return rc;
    rc = report(res, cb, payload);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

int dlock__pg_runs(struct dlock_store *s, const char *name, unsigned max,
                   dlock_run_cb cb, void *payload)
{
    struct pg_store *ps = (struct pg_store *)s;
    char n[16];
    const char *v[2] = {name, n};

    /* One answer holds them: DLOCK_RUNS_KEPT_MAX rows of at most a name
     * and a host each are a few MB at most, read by libpq as one result
     * before any reaches cb. */
    snprintf(n, sizeof(n), "%u", max);
    return read_runs(ps, "history", ps->text.runs, 2, v, cb, payload);
}

int dlock__pg_last_runs(struct dlock_store *s, const char *prefix,
                        dlock_run_cb cb, void *payload)
{
    struct pg_store *ps = (struct pg_store *)s;
    size_t len = strlen(prefix);
    char *pat = malloc(2 * len + 2), *o = pat;
    const char *v[1] = {pat};
    int rc;

    if (pat == NULL)
        return dlock__enomem();
    for (size_t i = 0; i < len; i++) {
        if (prefix[i] == '!' || prefix[i] == '%' || prefix[i] == '_')
            *o++ = '!';
        *o++ = prefix[i];
    }
    *o++ = '%';
    *o = '\0';
    rc = read_runs(ps, "list of runs", ps->text.last_runs, 1, v, cb, payload);
    free(pat);
    return rc;
}

/* --- keep_runs, kept_runs ---------------------------------------------- */

int dlock__pg_keep_runs(struct dlock_store *s, const char *name, unsigned n)
{
    struct pg_store *ps = (struct pg_store *)s;
    char keep[16], state[6] = "";
    const char *v[2] = {name, keep};
    char *sql;
    PGresult *res = NULL;
    int rc;

    snprintf(keep, sizeof(keep), "%u", n);
    sql = dlock__pg_inline(ps->text.keep_runs, 2, v);
    if (sql == NULL)
        return DLOCK_ENOMEM;
    rc = dlock__pg_pooled(ps, "keep runs", sql, 0, NULL, &res, state);
    if (older_tables(rc, state)) {
        /* Tables or columns from before keep_runs: made, then again
         * (the transaction above rolled back). */
        PQclear(res);
        res = NULL;
        rc = make_tables(ps);
        if (rc == DLOCK_OK)
            rc = dlock__pg_pooled(ps, "keep runs", sql, 0, NULL, &res, state);
    }
    if (rc == DLOCK_OK && (PQntuples(res) != 1 || PQnfields(res) != 1))
        rc = dlock__seterr(DLOCK_ESTORE,
                           "postgres keep runs: unexpected answer (%s)",
                           ps->base.url);
    PQclear(res);
    free(sql);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

int dlock__pg_kept_runs(struct dlock_store *s, const char *name, unsigned *n)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[1] = {name};
    char state[6] = "";
    PGresult *res = NULL;
    int64_t k;
    int rc;

    *n = DLOCK_RUNS_KEPT;
    rc = dlock__pg_pooled(ps, "kept runs", ps->text.kept_runs, 1, v, &res,
                          state);
    if (older_tables(rc, state)) {
        /* Nothing made by a reader: no setting can be there. */
        PQclear(res);
        dlock__clearerr();
        return DLOCK_OK;
    }
    if (rc != DLOCK_OK) {
        PQclear(res);
        return rc;
    }
    if (PQntuples(res) > 1 || PQnfields(res) != 1) {
        PQclear(res);
        return dlock__seterr(DLOCK_ESTORE,
                             "postgres kept runs: unexpected answer (%s)",
                             ps->base.url);
    }
    /* No row, NULL, or a planted value out of range: the default. */
    k = dlock__pg_col_i64(res, 0, 0, 0);
    if (k >= 1 && k <= DLOCK_RUNS_KEPT_MAX)
        *n = (unsigned)k;
    PQclear(res);
    dlock__clearerr();
    return DLOCK_OK;
}
