/*
 * suspend.c - a job's suspension on the PostgreSQL store (store.h:
 * suspend, resume, suspension, suspensions), in both modes, in dlock's
 * own table dlock_suspensions (sql/part-runs-ddl.sql, created with the
 * run tables): one row per suspended name, who, since when (the server's
 * clock_timestamp(), as run records) and why.
 *
 * Each op is one statement on a pooled connection (unnamed: PgBouncer's
 * transaction pooling is fine).  suspend (sql/suspend.sql) is an INSERT
 * ... ON CONFLICT DO NOTHING and a read of the row that was there, so
 * two racing suspends leave the first's row and tell the second; resume
 * (sql/resume.sql) is a DELETE ... RETURNING.  run_begin reads the row in
 * its own round trip (runs.c, sql/run_begin.sql), before any rule.
 *
 * A server whose tables predate suspension: suspend creates the run
 * tables (sql/init_runs.sql) and tries again, as the first run_begin
 * does; the readers and resume answer "not suspended" and create
 * nothing.  A login that may only read the tables gets the server's
 * "permission denied" as DLOCK_ESTORE from suspend and resume.
 *
 * A row is read as anyone who can write the table may have left it:
 * a column of another type (sql/part-susp-cols.sql answers NULL for it)
 * or a text too long shows as "?", a since_ms that is not a positive
 * integer as 0 (the core vets the rest); the row still suspends.
 */
#include <stdlib.h>
#include <string.h>

#include "pg.h"

/* SQLSTATE undefined_table: dlock_suspensions is not there (yet). */
#define UNDEFINED_TABLE "42P01"

/* Column c of row i into dst (size bytes), "?" for what dlock cannot
 * have written there (NULL: a column of another type). */
static void col_text(const PGresult *r, int i, int c, char *dst, size_t size)
{
    size_t n;

    if (PQgetisnull(r, i, c) || (n = (size_t)PQgetlength(r, i, c)) >= size) {
        dlock__strlcpy(dst, "?", size);
        return;
    }
    memcpy(dst, PQgetvalue(r, i, c), n);
    dst[n] = '\0';
}

/* Row i's by_whom, since_ms, reason (part-susp-cols.sql) from column c. */
static void row_from(dlock_suspension *cur, const PGresult *r, int i, int c)
{
    int64_t ms = dlock__pg_col_i64(r, i, c + 1, 0);

    col_text(r, i, c, cur->by, sizeof(cur->by));
    cur->since_ms = ms < 0 ? 0 : ms;
    col_text(r, i, c + 2, cur->reason, sizeof(cur->reason));
}

void dlock__pg_suspended_run(dlock_run *run, const PGresult *r, int i, int c)
{
    /* The run_begin answer's host column: who suspended the name, "?"
     * when it cannot be what dlock wrote (the core vets the rest). */
    col_text(r, i, c, run->host, sizeof(run->host));
    if (run->start_ms < 0)
        run->start_ms = 0;
}

static int unexpected(struct pg_store *ps, const char *what)
{
    return dlock__seterr(DLOCK_ESTORE, "postgres %s: unexpected answer (%s)",
                         what, ps->base.url);
}

/* Tries at most: each but the last lost a race with a suspend and a
 * resume between its insert and its read (sql/suspend.sql). */
#define SUSPEND_TRIES 5

int dlock__pg_suspend(struct dlock_store *s, const char *name, const char *by,
                      const char *reason, int *was, dlock_suspension *cur)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[3] = {name, by, reason};
    char state[6] = "";
    PGresult *res = NULL;
    int rc = DLOCK_OK, created = 0;

    *was = 0;
    for (int t = 0; t < SUSPEND_TRIES; t++) {
        PQclear(res);
        res = NULL;
        rc = dlock__pg_pooled(ps, "suspend", ps->text.suspend, 3, v, &res,
                              state);
        if (rc == DLOCK_ESTORE && !created &&
            strcmp(state, UNDEFINED_TABLE) == 0) {
            /* A server whose tables predate suspension: create them
             * (the statement above changed nothing), then again. */
            PQclear(res);
            res = NULL;
            rc = dlock__pg_pooled(ps, "creating the run tables",
                                  ps->text.init_runs, 0, NULL, &res, NULL);
            created = 1;
            t--;
            if (rc == DLOCK_OK)
                continue;
        }
        if (rc != DLOCK_OK)
            break;
        if (PQntuples(res) != 1 || PQnfields(res) != 5) {
            rc = unexpected(ps, "suspend");
            break;
        }
        if (dlock__pg_col_i64(res, 0, 0, 0) == 1)
            break; /* written: *was 0 */
        if (dlock__pg_col_bool(res, 0, 1)) {
            *was = 1;
            row_from(cur, res, 0, 2);
            break;
        }
        rc = dlock__seterr(DLOCK_EUNAVAIL,
                           "postgres suspend: the name was suspended and "
                           "resumed again %d times while this ran (%s)",
                           SUSPEND_TRIES, ps->base.url);
    }
    PQclear(res);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

/* resume (del) or suspension: one statement answering name's row, or no
 * row; a table that is not there has none. */
static int one_row(struct pg_store *ps, const char *what, const char *sql,
                   const char *name, int *was, dlock_suspension *cur)
{
    const char *v[1] = {name};
    char state[6] = "";
    PGresult *res = NULL;
    int rc = dlock__pg_pooled(ps, what, sql, 1, v, &res, state);

    *was = 0;
    if (rc == DLOCK_ESTORE && strcmp(state, UNDEFINED_TABLE) == 0) {
        PQclear(res);
        dlock__clearerr();
        return DLOCK_OK; /* no table: nobody ever suspended anything */
    }
    if (rc != DLOCK_OK) {
        PQclear(res);
        return rc;
    }
    if (PQntuples(res) > 1 || PQnfields(res) != 3) {
        PQclear(res);
        return unexpected(ps, what);
    }
    if (PQntuples(res) == 1) {
        *was = 1;
        row_from(cur, res, 0, 0);
    }
    PQclear(res);
    dlock__clearerr();
    return DLOCK_OK;
}

int dlock__pg_resume(struct dlock_store *s, const char *name, int *was,
                     dlock_suspension *cur)
{
    struct pg_store *ps = (struct pg_store *)s;

    return one_row(ps, "resume", ps->text.resume, name, was, cur);
}

int dlock__pg_suspension(struct dlock_store *s, const char *name, int *was,
                         dlock_suspension *cur)
{
    struct pg_store *ps = (struct pg_store *)s;

    return one_row(ps, "suspension", ps->text.suspension, name, was, cur);
}

int dlock__pg_suspensions(struct dlock_store *s, const char *prefix,
                          dlock_suspension_cb cb, void *payload)
{
    struct pg_store *ps = (struct pg_store *)s;
    size_t len = strlen(prefix);
    char *pat = malloc(2 * len + 2), *o = pat, state[6] = "";
    const char *v[1] = {pat};
    dlock_suspension *cur;
    PGresult *res = NULL;
    int rc;

    if (pat == NULL)
        return dlock__enomem();
    /* The prefix taken literally (as last_runs in runs.c). */
    for (size_t i = 0; i < len; i++) {
        if (prefix[i] == '!' || prefix[i] == '%' || prefix[i] == '_')
            *o++ = '!';
        *o++ = prefix[i];
    }
    *o++ = '%';
    *o = '\0';
    rc = dlock__pg_pooled(ps, "list of suspensions", ps->text.suspensions, 1, v,
                          &res, state);
    free(pat);
    if (rc == DLOCK_ESTORE && strcmp(state, UNDEFINED_TABLE) == 0) {
        PQclear(res);
        dlock__clearerr();
        return DLOCK_OK;
    }
    if (rc != DLOCK_OK) {
        PQclear(res);
        return rc;
    }
    if (PQnfields(res) != 4) {
        PQclear(res);
        return unexpected(ps, "list of suspensions");
    }
    cur = malloc(sizeof(*cur));
    if (cur == NULL) {
        PQclear(res);
        return dlock__enomem();
    }
    /* Each row to cb without a connection held (cb may call the store). */
    for (int i = 0; i < PQntuples(res) && rc == DLOCK_OK; i++) {
        const char *name = PQgetvalue(res, i, 0);
        size_t n = (size_t)PQgetlength(res, i, 0);

        if (n == 0 || n > DLOCK_NAME_MAX || strncmp(name, prefix, len) != 0)
            continue; /* not a name dlock wrote */
        memset(cur, 0, sizeof(*cur));
        memcpy(cur->name, name, n + 1);
        row_from(cur, res, i, 1);
        rc = cb(cur, payload);
    }
    free(cur);
    PQclear(res);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}
