/*
 * store.c - the PostgreSQL store's ops table, on top of the folder: open
 * and close, lease mode's acquire, status, list and force-release; the
 * per-lock calls are held.c's (see pg.h for the design).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg.h"
#include "strutil.h"

#define DEFAULT_OP_TIMEOUT_MS 5000

/* --- open / close / init --------------------------------------------- */

static void pg_close(struct dlock_store *s)
{
    struct pg_store *ps = (struct pg_store *)s;

    dlock__pg_sessions_close(ps);
    dlock__pool_destroy(&ps->pool);
    pthread_mutex_destroy(&ps->sess_mu);
    dlock__pg_conn_params_free(ps);
    dlock__pg_sql_free(&ps->text);
    free(ps);
}

struct init_call {
    struct pg_store *ps;
    int always;
};

/* Create the tables unless they are there (a DBA may have made them for a
 * role that cannot create tables). */
static int init_fn(void *conn, void *arg, int *dead)
{
    struct init_call *k = arg;
    struct pg_store *ps = k->ps;
    PGconn *c = conn;
    PGresult *res;
    int rc = DLOCK_OK, have = 0;

    if (!k->always) {
        rc = dlock__pg_run(c, ps->base.url, "init", ps->text.have_tables, 0,
                           NULL, ps->op_timeout_ms, &res, NULL);
        if (rc != DLOCK_OK)
            goto out;
        have = dlock__pg_col_bool(res, 0, 0);
        ps->locks_per_xact = dlock__pg_col_i64(res, 0, 2, 0);
        dlock__quota_server(&ps->keys, dlock__pg_col_i64(res, 0, 1, 0));
        PQclear(res);
    }
    if (!have) {
        rc = dlock__pg_run(c, ps->base.url, "creating the lock tables",
                           ps->text.init, 0, NULL, ps->op_timeout_ms, &res,
                           NULL);
        if (rc == DLOCK_OK)
            PQclear(res);
        if (rc == DLOCK_OK || PQtransactionStatus(c) != PQTRANS_INERROR)
            goto out;
        /* Leave no failed transaction behind. */
        if (dlock__pg_run(c, ps->base.url, "init", "ROLLBACK", 0, NULL,
                          ps->op_timeout_ms, &res, NULL) == DLOCK_OK)
            PQclear(res);
    }
out:
    *dead = rc == DLOCK_EUNAVAIL;
    return rc;
}

static int init_tables(struct pg_store *ps, int always)
{
    struct init_call k = {ps, always};

    return dlock__pool_run(&ps->pool, init_fn, &k);
}

static int pg_init(struct dlock_store *s)
{
    return init_tables((struct pg_store *)s, 1);
}

static int parse_options(const struct dlock_url *u, int *hashtext, int *lease,
                         int64_t *timeout_ms, struct dlock__quota *max_keys)
{
    const char *keys = dlock__url_param(u, "keys");
    const char *mode = dlock__url_param(u, "mode");
    int rc;

    rc = dlock__quota_init(max_keys, u, "max_keys");
    if (rc != DLOCK_OK)
        return rc;
    *hashtext = 0;
    *lease = 0;
    if (keys != NULL) {
        if (strcmp(keys, "hashtext") == 0)
            *hashtext = 1;
        else if (strcmp(keys, "hashtextextended") != 0)
            return dlock__seterr(DLOCK_EINVAL,
                                 "keys=%s: expected keys=hashtext or "
                                 "keys=hashtextextended (%s)",
                                 keys, u->redacted);
    }
    if (mode != NULL) {
        if (strcmp(mode, "lease") == 0)
            *lease = 1;
        else if (strcmp(mode, "session") != 0)
            return dlock__seterr(DLOCK_EINVAL,
                                 "mode=%s: expected mode=session or "
                                 "mode=lease (%s)",
                                 mode, u->redacted);
    }
    rc = dlock__url_param_ms(u, "timeout", 1000, timeout_ms);
    if (rc != DLOCK_OK)
        return rc;
    if (*timeout_ms <= 0)
        return dlock__seterr(DLOCK_EINVAL, "timeout must be positive (%s)",
                             u->redacted);
    return DLOCK_OK;
}

static int pg_open(struct dlock_store **out, const struct dlock_url *u)
{
    struct pg_store *ps;
    int rc, hashtext, lease;
    int64_t timeout = DEFAULT_OP_TIMEOUT_MS;
    struct dlock__quota keys;

    rc = parse_options(u, &hashtext, &lease, &timeout, &keys);
    if (rc != DLOCK_OK)
        return rc;
    ps = calloc(1, sizeof(*ps));
    if (ps == NULL)
        return dlock__enomem();
    rc = dlock__pg_conn_params(ps, u);
    if (rc != DLOCK_OK) {
        dlock__pg_conn_params_free(ps);
        free(ps);
        return rc;
    }
    rc = dlock__pg_sql_build(&ps->text, hashtext);
    if (rc != DLOCK_OK) {
        dlock__pg_conn_params_free(ps);
        free(ps);
        return rc;
    }
    ps->sql = (const char *const *)ps->text.q;
    ps->lease_mode = lease;
    ps->base.poll_wait = lease; /* no native wait without a session */
    ps->op_timeout_ms = timeout;
    ps->keys = keys;
    pthread_mutex_init(&ps->sess_mu, NULL);
    dlock__pool_init(&ps->pool, &dlock__pg_pool_ops, ps,
                     DLOCK__PG_POOL_MAX_IDLE);
    ps->base.url = u->redacted; /* for messages until the core sets it */

    rc = init_tables(ps, 0);
    if (rc != DLOCK_OK) {
        pg_close(&ps->base);
        return rc;
    }
    *out = &ps->base;
    return DLOCK_OK;
}

/* --- lease mode -------------------------------------------------------- */

struct lease_call {
    struct pg_store *ps;
    struct dlock_lock *lk;
    int64_t *retry_ms;
};

static int lease_fn(void *conn, void *arg, int *dead)
{
    struct lease_call *k = arg;
    struct pg_store *ps = k->ps;
    struct dlock_lock *lk = k->lk;
    struct dlock__pg_acq_params p;
    char lim[16];
    /* sql/lease_sem_acquire.sql's: name, owner, ttl, host, pid, limit. */
    const char *sv[6];
    char *sql;
    PGresult *res = NULL;
    PGconn *c = conn;
    int rc;

    dlock__pg_acq_params(&p, lk, 0, NULL);
    if (lk->limit > 1) {
        snprintf(lim, sizeof(lim), "%u", lk->limit);
        sv[0] = p.v[0], sv[1] = p.v[1], sv[2] = p.v[3];
        sv[3] = p.v[4], sv[4] = p.v[5], sv[5] = lim;
        sql = dlock__pg_inline(ps->text.lease_sem, 6, sv);
    } else {
        sql = dlock__pg_inline(ps->text.lease_acq, 6, p.v);
    }
    if (sql == NULL) {
        rc = DLOCK_ENOMEM;
        goto out;
    }
    rc = dlock__pg_run(c, ps->base.url, "acquire", sql, 0, NULL,
                       ps->op_timeout_ms, &res, NULL);
    if (rc != DLOCK_OK)
        goto out;
    if (PQgetisnull(res, 0, 0)) {
        int64_t held = dlock__pg_col_i64(res, 0, 2, 0);

        *k->retry_ms = dlock__pg_col_i64(res, 0, 1, -1);
        if (held > 0 && held != (int64_t)lk->limit)
            rc = dlock__seterr(DLOCK_EINVAL,
                               "lock '%s' is held with limit %lld; this "
                               "acquire asked limit %u (every holder of a "
                               "name must ask the same limit)",
                               lk->name, (long long)held, lk->limit);
        else if (lk->limit > 1)
            rc = dlock__seterr(DLOCK_BUSY,
                               "semaphore '%s' has all %u slots taken",
                               lk->name, lk->limit);
        else
            rc = dlock__seterr(DLOCK_BUSY, "lock '%s' is held by someone else",
                               lk->name);
    } else {
        lk->fence = (uint64_t)dlock__pg_col_i64(res, 0, 0, 0);
    }
    PQclear(res);
out:
    free(sql);
    *dead = rc == DLOCK_EUNAVAIL;
    return rc;
}

static int lease_try(struct pg_store *ps, struct dlock_lock *lk,
                     int64_t *retry_ms)
{
    struct lease_call k = {ps, lk, retry_ms};

    return dlock__pool_run(&ps->pool, lease_fn, &k);
}

/* --- the ops --------------------------------------------------------- */

static int pg_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms)
{
    struct pg_store *ps = (struct pg_store *)s;

    if (ps->lease_mode)
        return lease_try(ps, lk, retry_ms);
    return dlock__pg_session_try(ps, lk, deadline, retry_ms);
}

/* --- status, list, force_release ------------------------------------ */

struct describe_call {
    struct pg_store *ps;
    const char *name;
    dlock_info *out;
    dlock_info blank; /* *out as the caller filled it, for a retry */
};

static int describe_fn(void *conn, void *arg, int *dead)
{
    struct describe_call *k = arg;
    struct pg_store *ps = k->ps;
    dlock_info *out = k->out;
    const char *v[1] = {k->name};
    PGresult *res;
    int64_t last = -1;
    int rc;

    *out = k->blank;
    rc = dlock__pg_run(conn, ps->base.url, "status",
                       ps->lease_mode ? ps->text.status_l : ps->sql[Q_STATUS],
                       1, v, ps->op_timeout_ms, &res, NULL);
    if (rc != DLOCK_OK)
        goto out;
    for (int i = 0; i < PQntuples(res); i++) {
        int64_t left = dlock__pg_col_i64(res, i, 3, 0);

        out->held = 1;
        out->holders++;
        out->shared = dlock__pg_col_bool(res, i, 0);
        out->limit = (unsigned)dlock__pg_col_i64(res, i, 5, 1);
        if (left > last) {
            last = left;
            out->ttl_ms = left;
            dlock__strlcpy(out->host, PQgetvalue(res, i, 1), sizeof(out->host));
            out->pid = dlock__pg_col_i64(res, i, 2, 0);
            out->since_ms = dlock__pg_col_i64(res, i, 4, 0);
        }
    }
    PQclear(res);
    rc = dlock__pg_run(conn, ps->base.url, "status",
                       ps->lease_mode ? ps->text.status2_l : ps->sql[Q_STATUS2],
                       1, v, ps->op_timeout_ms, &res, NULL);
    if (rc != DLOCK_OK)
        goto out;
    out->fence = (uint64_t)dlock__pg_col_i64(res, 0, 0, 0);
    /* Held by sessions that are not dlock's (psql, a Laravel app, any
     * role that may connect to the database: advisory locks need no
     * rights): the key is taken all the same.  One of them as the server
     * reports it. */
    if (!out->held && dlock__pg_col_i64(res, 0, 1, 0) > 0) {
        out->held = 1;
        out->holders = (unsigned)dlock__pg_col_i64(res, 0, 1, 0);
        out->shared = dlock__pg_col_bool(res, 0, 2);
        out->other_client = 1;
        out->client_id = dlock__pg_col_i64(res, 0, 3, 0);
        if (PQntuples(res) > 0 && PQnfields(res) > 5) {
            dlock__strlcpy(out->client_user, PQgetvalue(res, 0, 4),
                           sizeof(out->client_user));
            dlock__strlcpy(out->client_addr, PQgetvalue(res, 0, 5),
                           sizeof(out->client_addr));
        }
    }
    PQclear(res);
out:
    *dead = rc == DLOCK_EUNAVAIL;
    return rc;
}

static int pg_status(struct dlock_store *s, const char *name, dlock_info *out)
{
    struct describe_call k = {(struct pg_store *)s, name, out, *out};

    return dlock__pool_run(&k.ps->pool, describe_fn, &k);
}

struct names_call {
    struct pg_store *ps;
    const char *prefix;
    struct dlock__names *names;
};

static int names_fn(void *conn, void *arg, int *dead)
{
    struct names_call *k = arg;
    char cut[DLOCK_NAME_MAX + 1];
    const char *v[1] = {cut};
    size_t plen = strlen(k->prefix), i;
    PGresult *res;
    int rc;

    /* The server takes only valid UTF-8 text: the prefix up to its first
     * byte that does not begin a complete valid character (no name holds
     * one; the whole prefix is checked below). */
    i = dlock__utf8_head(k->prefix, plen, SIZE_MAX);
    memcpy(cut, k->prefix, i);
    cut[i] = '\0';
    rc = dlock__pg_run(conn, k->ps->base.url, "list",
                       k->ps->text.names[k->ps->lease_mode], 1, v,
                       k->ps->op_timeout_ms, &res, NULL);
    *dead = rc == DLOCK_EUNAVAIL;
    if (rc != DLOCK_OK)
        return rc;
    for (int i = 0; i < PQntuples(res) && rc == DLOCK_OK; i++) {
        const char *name = PQgetvalue(res, i, 0);
        size_t len = strlen(name);

        if (len >= plen && memcmp(name, k->prefix, plen) == 0 &&
            len <= DLOCK_NAME_MAX)
            rc = dlock__names_add(k->names, name, len);
    }
    PQclear(res);
    return rc;
}

static int pg_list(struct dlock_store *s, const char *prefix,
                   int (*cb)(const dlock_info *info, void *payload),
                   void *payload)
{
    struct dlock__names names = {0};
    struct names_call k = {(struct pg_store *)s, prefix, &names};

    return dlock__pool_list(&k.ps->pool, names_fn, &k, &names, s, pg_status, cb,
                            payload);
}

/* pg_terminate_backend() only signals: the backend lets go of its
 * advisory locks when it has exited, a moment later (longer under load).
 * Wait for the sessions in pids ("{1,2}") to be gone, at most the
 * store's timeout, so that the name is free when release --force
 * returns (best effort, as the termination itself). */
static void gone_wait(struct pg_store *ps, const char *pids)
{
    const char *v[1] = {pids};
    int64_t end = dlock__now_ms() + ps->op_timeout_ms;

    for (int i = 0;; i++) {
        PGresult *res;
        int64_t n;

        if (dlock__pg_ctl_run(ps, "release --force", -1, ps->text.gone, 1, v,
                              &res) != DLOCK_OK)
            return;
        n = dlock__pg_col_i64(res, 0, 0, 0);
        PQclear(res);
        if (n == 0 || dlock__now_ms() >= end)
            return;
        dlock__sleep_ms(i < 10 ? 5 : 20);
    }
}

static int pg_force_release(struct dlock_store *s, const char *name,
                            unsigned *removed)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[2] = {name, NULL};
    PGresult *res;
    char *pids = NULL;
    size_t len = 3;
    int rc;

    rc = dlock__pg_ctl_run(ps, "release --force", -1,
                           ps->text.force[ps->lease_mode], 1, v, &res);
    if (rc != DLOCK_OK)
        return rc;
    *removed = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        *removed += dlock__pg_col_bool(res, i, 1);
        len += strlen(PQgetvalue(res, i, 0)) + 1;
    }
    if (!ps->lease_mode && PQntuples(res) > 0) {
        pids = malloc(len);
        if (pids == NULL) {
            PQclear(res);
            return dlock__enomem();
        }
        strcpy(pids, "{");
        for (int i = 0; i < PQntuples(res); i++) {
            if (i > 0)
                strcat(pids, ",");
            strcat(pids, PQgetvalue(res, i, 0));
        }
        strcat(pids, "}");
    }
    PQclear(res);
    if (pids != NULL) {
        /* The sessions still holding the key that hold nothing else (or
         * hold it past its lease): end them (best effort).  The others'
         * holders find their rows broken at their next renewal and let
         * go (sql/force_held.sql); pid 0 stands for them. */
        v[1] = pids;
        if (dlock__pg_ctl_run(ps, "release --force", -1, ps->sql[Q_FORCE_KILL],
                              2, v, &res) == DLOCK_OK) {
            PQclear(res);
            gone_wait(ps, pids);
        }
        free(pids);
    }
    dlock__clearerr();
    return DLOCK_OK;
}

static int pg_ddl(char **out, const struct dlock_url *u)
{
    struct dlock__pg_sql q;
    int rc;

    (void)u;
    rc = dlock__pg_sql_build(&q, 0);
    if (rc != DLOCK_OK)
        return rc;
    *out = dlock__strdup(q.ddl);
    dlock__pg_sql_free(&q);
    return *out != NULL ? DLOCK_OK : dlock__enomem();
}

const struct dlock_store_ops dlock__postgres_ops = {
    .version = DLOCK_STORE_OPS_VERSION,
    .name = "postgres",
    .has_shared = 1,
    .has_limit = 1,
    .open = pg_open,
    .close = pg_close,
    .try_acquire = pg_try_acquire,
    .wait_slice = dlock__pg_wait_slice,
    .extend = dlock__pg_extend,
    .extend_many = dlock__pg_extend_many,
    .ttl_left = dlock__pg_ttl_left,
    .release = dlock__pg_release,
    .forget = dlock__pg_forget,
    .forget_inherited = dlock__pg_forget_inherited,
    .status = pg_status,
    .list = pg_list,
    .force_release = pg_force_release,
    .init = pg_init,
    .probe = dlock__pg_probe,
    .ddl = pg_ddl,
    .run_begin = dlock__pg_run_begin,
    .run_end = dlock__pg_run_end,
    .runs = dlock__pg_runs,
    .last_runs = dlock__pg_last_runs,
    .value_set = dlock__pg_value_set,
    .value_get = dlock__pg_value_get,
    .watch = dlock__pg_watch,
    .watch_end = dlock__pg_watch_end,
    .suspend = dlock__pg_suspend,
    .resume = dlock__pg_resume,
    .suspension = dlock__pg_suspension,
    .suspensions = dlock__pg_suspensions,
    .keep_runs = dlock__pg_keep_runs,
    .kept_runs = dlock__pg_kept_runs,
};
