/*
 * runs.c - the PostgreSQL store's run records (store.h: run_begin,
 * run_end, runs, last_runs), in both modes, in the tables dlock_runs and
 * dlock_run_names (sql/part-runs-ddl.sql).
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
 * statement.  Literals, not parameters (a query of several statements
 * takes none): the name and host go in as E'' strings, which mean the
 * same whatever standard_conforming_strings says; the connection's
 * client_encoding is UTF8 (conn.c), in which no byte of a multi-byte
 * character is a quote or a backslash.
 *
 * The acquire and release of a lock are untouched: run records cost only
 * the calls that ask for them.  Tables missing on a server whose lock
 * tables predate them are created by the first run_begin (as `dlock
 * init`); the readers answer "no runs" without creating anything.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"

/* SQLSTATE undefined_table: the run tables are not there (yet). */
#define UNDEFINED_TABLE "42P01"

/* clang-format off */

#define NOW_MS "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
#define OURS                                                                 \
    "EXISTS (SELECT 1 FROM @T WHERE name = @N AND owner = '@O' AND "         \
    "expires_at > clock_timestamp())"
#define RUN_COLS "fence, host, pid, start_ms, end_ms, result, status"

/* @T the lock table (dlock_held, dlock_locks), @N the name, @O the owner
 * token, @F the fence, @H the host, @P the pid, @Y once, @R a period
 * given, @W half the period (ms), @K the runs kept besides the new one.
 * Answers one row: ours, go, then the run that decided a skip, or the
 * run before this one (as it is now: ABANDONED if it was RUNNING), or
 * NULLs.  m: a RUNNING run of our own fence is there already: this text
 * was sent before, committed, and its answer was lost (lease mode: the
 * pool sends it again on a new connection); that run is ours, so it goes
 * ahead again instead of skipping because of its own start. */
static const char begin_tmpl[] =
    "INSERT INTO dlock_run_names AS x (name) SELECT @N WHERE " OURS " "
    "ON CONFLICT (name) DO UPDATE SET last_start_ms = x.last_start_ms; "
    "WITH o AS (SELECT " OURS " AS ours, " NOW_MS " AS now_ms), "
    "s AS (SELECT last_start_ms, succeeded_fence, succeeded_ms FROM "
    "dlock_run_names WHERE name = @N), "
    "m AS (SELECT EXISTS (SELECT 1 FROM dlock_runs WHERE name = @N AND "
    "fence = @F AND result = 0) AS again), "
    "g AS (SELECT o.ours, o.now_ms, coalesce(@Y AND s.succeeded_fence IS "
    "NOT NULL AND NOT m.again, false) AS by_once, coalesce(@R AND o.now_ms "
    "- s.last_start_ms < @W AND NOT m.again, false) AS by_period FROM o "
    "CROSS JOIN m LEFT JOIN s ON true), "
    "d AS (SELECT g.*, g.ours AND NOT g.by_once AND NOT g.by_period AS go "
    "FROM g), "
    "p AS (SELECT " RUN_COLS " FROM dlock_runs WHERE name = @N AND fence "
    "<> @F ORDER BY fence DESC LIMIT 1), "
    "k AS (SELECT fence FROM dlock_runs WHERE name = @N AND fence <> @F "
    "ORDER BY fence DESC LIMIT @K), "
    "a AS (UPDATE dlock_runs r SET result = 4 FROM d WHERE d.go AND "
    "r.name = @N AND r.result = 0 AND r.fence IN (SELECT fence FROM k)), "
    "t AS (DELETE FROM dlock_runs r USING d WHERE d.go AND r.name = @N AND "
    "r.fence <> @F AND r.fence NOT IN (SELECT fence FROM k)), "
    "i AS (INSERT INTO dlock_runs (name, " RUN_COLS ") SELECT @N, @F, @H, "
    "@P, d.now_ms, NULL, 0, -1 FROM d WHERE d.go ON CONFLICT (name, fence) "
    "DO UPDATE SET host = excluded.host, pid = excluded.pid, start_ms = "
    "excluded.start_ms, end_ms = NULL, result = 0, status = -1), "
    "u AS (UPDATE dlock_run_names x SET last_start_ms = d.now_ms FROM d "
    "WHERE d.go AND x.name = @N), "
    "l AS (SELECT 1 AS rank, " RUN_COLS " FROM dlock_runs, d WHERE "
    "d.by_once AND name = @N AND fence = (SELECT succeeded_fence FROM s) "
    "UNION ALL SELECT 2, s.succeeded_fence, '', 0, 0, s.succeeded_ms, 1, 0 "
    "FROM s, d WHERE d.by_once "
    "UNION ALL SELECT 3, p.fence, p.host, p.pid, p.start_ms, p.end_ms, "
    "CASE WHEN d.go AND p.result = 0 THEN 4 ELSE p.result END, p.status "
    "FROM p, d WHERE NOT d.by_once) "
    "SELECT d.ours, d.go, " RUN_COLS " FROM d LEFT JOIN (SELECT * FROM l "
    "ORDER BY rank LIMIT 1) l ON true";

/* $1 name, $2 fence, $3 result, $4 status.  A success marks the name's
 * summary, a run's own or a later one's; an end that finds the run
 * dropped (too old) still counts as a success. */
static const char end_sql[] =
    "WITH t AS (SELECT " NOW_MS " AS ms), "
    "r AS (UPDATE dlock_runs SET end_ms = t.ms, result = $3::smallint, "
    "status = $4::integer FROM t WHERE name = $1 AND fence = $2::bigint "
    "RETURNING 1), "
    "s AS (UPDATE dlock_run_names x SET succeeded_fence = $2::bigint, "
    "succeeded_ms = t.ms FROM t WHERE x.name = $1 AND $3::integer = 1 AND "
    "$4::integer = 0 AND (x.succeeded_fence IS NULL OR x.succeeded_fence "
    "<= $2::bigint) RETURNING 1) "
    "SELECT (SELECT count(*) FROM r), (SELECT count(*) FROM s)";

#define READ_COLS                                                            \
    "name, fence, host, pid, start_ms, coalesce(end_ms, 0), result, status"
/* $1 name, $2 how many: newest first. */
static const char runs_sql[] =
    "SELECT " READ_COLS " FROM dlock_runs WHERE name = $1 ORDER BY fence "
    "DESC LIMIT $2::integer";
/* $1 a LIKE pattern: the prefix with ! % _ escaped by !, then %.  The
 * name column is in the "C" collation: the pattern's fixed start is a
 * range of the primary key. */
static const char last_sql[] =
    "SELECT DISTINCT ON (name) " READ_COLS " FROM dlock_runs WHERE name "
    "LIKE $1 ESCAPE '!' ORDER BY name, fence DESC";

/* clang-format on */

/* --- building run_begin's text --------------------------------------- */

/* s[0..n) as an E'' literal (malloc'd), or NULL. */
static char *lit(const char *s, size_t n)
{
    char *out = malloc(2 * n + 4), *o = out;

    if (out == NULL)
        return NULL;
    *o++ = 'E';
    *o++ = '\'';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'' || s[i] == '\\')
            *o++ = s[i];
        *o++ = s[i];
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

struct subst {
    char key;
    const char *val;
};

/* tmpl with every @X replaced by X's value (malloc'd), or NULL. */
static char *expand(const char *tmpl, const struct subst *sv, size_t n)
{
    size_t len = 1, o = 0;
    char *out;

    for (const char *p = tmpl; *p != '\0'; p++) {
        size_t add = 1;

        for (size_t j = 0; *p == '@' && j < n; j++)
            if (p[1] == sv[j].key)
                add = strlen(sv[j].val), p++;
        len += add;
    }
    out = malloc(len);
    if (out == NULL)
        return NULL;
    for (const char *p = tmpl; *p != '\0'; p++) {
        int done = 0;

        for (size_t j = 0; *p == '@' && !done && j < n; j++) {
            if (p[1] == sv[j].key) {
                size_t l = strlen(sv[j].val);

                memcpy(out + o, sv[j].val, l);
                o += l;
                p++;
                done = 1;
            }
        }
        if (!done)
            out[o++] = *p;
    }
    out[o] = '\0';
    return out;
}

/* --- statements on a pooled connection ------------------------------- */

struct rq_call {
    struct pg_store *ps;
    const char *what, *sql;
    int n;
    const char *const *v;
    PGresult *res;
    char state[6];
};

static int rq_fn(void *conn, void *arg, int *dead)
{
    struct rq_call *k = arg;
    int rc = dlock__pg_run(conn, k->ps->base.url, k->what, k->sql, k->n, k->v,
                           k->ps->op_timeout_ms, &k->res, k->state);

    *dead = rc == DLOCK_EUNAVAIL;
    return rc;
}

/* One statement (unnamed: PgBouncer-safe in lease mode) on a pooled
 * connection; state: its SQLSTATE on a server's error. */
static int rq(struct pg_store *ps, const char *what, const char *sql, int n,
              const char *const *v, PGresult **res, char state[6])
{
    struct rq_call k = {ps, what, sql, n, v, NULL, ""};
    int rc = dlock__pool_run(&ps->pool, rq_fn, &k);

    *res = k.res;
    if (state != NULL)
        memcpy(state, k.state, sizeof(k.state));
    return rc;
}

/* Row i of a result of RUN_COLS from column c on, into run. */
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
        return rq(ps, "run begin", sql, 0, NULL, res, state);
    return dlock__pg_held_run_st(ps, lk, "run begin", -1, sql, 0, NULL, res,
                                 state);
}

int dlock__pg_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                        const dlock_run_rule *rule, const char *host,
                        int64_t pid, int *go, dlock_run *last)
{
    struct pg_store *ps = (struct pg_store *)s;
    char fence[24], spid[24], half[24], kept[16], state[6] = "";
    char *name = lit(lk->name, lk->name_len);
    char *hl = lit(host, strlen(host));
    char *sql = NULL;
    PGresult *res = NULL;
    int rc, ours;

    *go = 0;
    if (name == NULL || hl == NULL) {
        rc = dlock__enomem();
        goto out;
    }
    snprintf(fence, sizeof(fence), "%lld", (long long)lk->fence);
    snprintf(spid, sizeof(spid), "%lld", (long long)pid);
    snprintf(half, sizeof(half), "%lld", (long long)(rule->period_ms / 2));
    snprintf(kept, sizeof(kept), "%d", DLOCK_RUNS_KEPT - 1);
    {
        const struct subst sv[] = {
            {'T', ps->lease_mode ? "dlock_locks" : "dlock_held"},
            {'N', name},
            {'O', lk->token},
            {'F', fence},
            {'H', hl},
            {'P', spid},
            {'Y', rule->once ? "true" : "false"},
            {'R', rule->period_ms > 0 ? "true" : "false"},
            {'W', half},
            {'K', kept},
        };

        sql = expand(begin_tmpl, sv, sizeof(sv) / sizeof(sv[0]));
    }
    if (sql == NULL) {
        rc = dlock__enomem();
        goto out;
    }
    rc = begin_once(ps, lk, sql, &res, state);
    if (rc == DLOCK_ESTORE && strcmp(state, UNDEFINED_TABLE) == 0) {
        /* A server whose lock tables predate run records: create them
         * (the transaction above rolled back), then again. */
        rc = rq(ps, "creating the run tables", ps->text.init_runs, 0, NULL,
                &res, NULL);
        PQclear(res);
        res = NULL;
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
out:
    PQclear(res);
    free(sql);
    free(name);
    free(hl);
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
        rc = dlock__pg_held_run(ps, lk, "run end", -1, end_sql, 4, v, &res);
    if (rc == DLOCK_LOST)
        rc = rq(ps, "run end", end_sql, 4, v, &res, NULL);
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
    int rc = rq(ps, what, sql, n, v, &res, state);

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
    char n[16];
    const char *v[2] = {name, n};

    snprintf(n, sizeof(n), "%u", max);
    return read_runs((struct pg_store *)s, "history", runs_sql, 2, v, cb,
                     payload);
}

int dlock__pg_last_runs(struct dlock_store *s, const char *prefix,
                        dlock_run_cb cb, void *payload)
{
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
    rc = read_runs((struct pg_store *)s, "list of runs", last_sql, 1, v, cb,
                   payload);
    free(pat);
    return rc;
}
