/*
 * store.c - the MySQL store's ops table: open and close, the calls on a
 * held lock, status, list and force-release (see my.h for the design).
 */
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

static void my_close(struct dlock_store *s)
{
    struct my_store *ms = (struct my_store *)s;

    dlock__pool_destroy(&ms->pool);
    dlock__my_sql_free(ms);
    free(ms->host);
    free(ms->user);
    free(ms->password);
    free(ms->database);
    free(ms->socket);
    free(ms->ssl_ca);
    free(ms->ssl_cert);
    free(ms->ssl_key);
    free(ms);
}

static int dup_opt(char **dst, const char *src)
{
    if (src == NULL || src[0] == '\0')
        return DLOCK_OK;
    *dst = dlock__strdup(src);
    return *dst != NULL ? DLOCK_OK : dlock__enomem();
}

/* The first connection: which server it is, and the tables. */
static int open_fn(void *conn, void *arg, int *dead)
{
    struct my_store *ms = arg;
    struct conn *c = conn;
    int rc;

    ms->mariadb = c->frac;
    rc = dlock__my_ensure_tables(ms, c);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

static int my_open(struct dlock_store **out, const struct dlock_url *u)
{
    static const char *const known[] = {
        "timeout", "table",    "quote",   "mode",      "socket", "ssl",
        "ssl-ca",  "ssl-cert", "ssl-key", "max_conns", NULL};
    const char *mode, *ssl, *sock;
    struct my_store *ms;
    int rc;

    rc = dlock__url_check_params(u, known);
    if (rc != DLOCK_OK)
        return rc;
    rc = dlock__my_lib_init();
    if (rc != DLOCK_OK)
        return rc;
    ms = calloc(1, sizeof(*ms));
    if (ms == NULL)
        return dlock__enomem();
    dlock__pool_init(&ms->pool, &dlock__my_pool_ops, ms, DLOCK__POOL_MAX_IDLE);
    ms->base.url = u->redacted; /* for messages until the core sets it */
    ms->timeout_ms = DEFAULT_TIMEOUT_MS;
    rc = dlock__url_param_ms(u, "timeout", 1000, &ms->timeout_ms);
    if (rc != DLOCK_OK)
        goto fail;
    if (ms->timeout_ms < 1000 || ms->timeout_ms > 3600000) {
        rc = dlock__seterr(DLOCK_EINVAL, "timeout in %s must be 1s..3600s",
                           u->redacted);
        goto fail;
    }
    rc = dlock__my_parse_names(u, ms);
    if (rc != DLOCK_OK)
        goto fail;
    rc = dlock__quota_init(&ms->conns, u, "max_conns");
    if (rc != DLOCK_OK)
        goto fail;
    mode = dlock__url_param(u, "mode");
    if (mode != NULL && strcmp(mode, "lease") == 0)
        ms->lease_mode = ms->base.poll_wait = 1; /* no GET_LOCK: core polls */
    else if (mode != NULL && strcmp(mode, "lock") != 0) {
        rc = dlock__seterr(DLOCK_EINVAL,
                           "mode=%s in %s: use mode=lock "
                           "(GET_LOCK, default) or mode=lease",
                           mode, u->redacted);
        goto fail;
    }
    ssl = dlock__url_param(u, "ssl");
    if (ssl != NULL) {
        if (strcmp(ssl, "0") == 0 || strcmp(ssl, "false") == 0)
            ms->ssl = 0;
        else if (strcmp(ssl, "1") == 0 || strcmp(ssl, "true") == 0 ||
                 strcmp(ssl, "") == 0)
            ms->ssl = 1;
        else if (strcmp(ssl, "verify") == 0)
            ms->ssl = 2;
        else {
            rc = dlock__seterr(DLOCK_EINVAL,
                               "ssl=%s in %s: use 0, 1 or "
                               "verify",
                               ssl, u->redacted);
            goto fail;
        }
    }
    if (u->path == NULL || u->path[0] != '/' || u->path[1] == '\0' ||
        strchr(u->path + 1, '/') != NULL) {
        rc = dlock__seterr(DLOCK_EINVAL,
                           "%s names no database: use "
                           "mysql://user:pass@host[:port]/database",
                           u->redacted);
        goto fail;
    }
    if (u->port < 0 || u->port > 65535) {
        rc = dlock__seterr(DLOCK_EINVAL, "bad port in %s", u->redacted);
        goto fail;
    }
    ms->port = (unsigned)u->port;
    sock = dlock__url_param(u, "socket");
    /* mysql://user@%2Frun%2Fmysqld%2Fmysqld.sock/db names a socket too. */
    if (sock == NULL && u->host != NULL && u->host[0] == '/')
        sock = u->host;
    if ((rc = dup_opt(&ms->database, u->path + 1)) != DLOCK_OK ||
        (rc = dup_opt(&ms->user, u->user)) != DLOCK_OK ||
        (rc = dup_opt(&ms->password, u->password)) != DLOCK_OK ||
        (rc = dup_opt(&ms->socket, sock)) != DLOCK_OK ||
        (rc = dup_opt(&ms->ssl_ca, dlock__url_param(u, "ssl-ca"))) !=
            DLOCK_OK ||
        (rc = dup_opt(&ms->ssl_cert, dlock__url_param(u, "ssl-cert"))) !=
            DLOCK_OK ||
        (rc = dup_opt(&ms->ssl_key, dlock__url_param(u, "ssl-key"))) !=
            DLOCK_OK)
        goto fail;
    if (ms->socket != NULL)
        rc = dup_opt(&ms->host, "localhost");
    else
        rc = dup_opt(&ms->host, u->host != NULL && u->host[0] != '\0'
                                    ? u->host
                                    : "localhost");
    if (rc != DLOCK_OK)
        goto fail;
    /* Its statements, once (before the first connection: its init
     * command is one). */
    rc = dlock__my_sql_build(ms);
    if (rc != DLOCK_OK)
        goto fail;
    rc = dlock__pool_run(&ms->pool, open_fn, ms);
    if (rc != DLOCK_OK)
        goto fail;
    *out = &ms->base;
    return DLOCK_OK;
fail:
    my_close(&ms->base);
    return rc;
}

/* --- held locks --------------------------------------------------------- */

/* The pinned connection failed: its session, and with it our GET_LOCK,
 * is gone (or will be when we close it), so the lock is lost. */
static int pinned_failed(struct my_store *ms, struct dlock_lock *lk,
                         struct my_lock *ml)
{
    char why[512];

    snprintf(why, sizeof(why),
             "its connection to %s failed (%s), and its "
             "GET_LOCK went with the session",
             ms->base.url, mysql_error(ml->c->db));
    dlock__pool_discard(&ms->pool, ml->c);
    ml->c = NULL;
    return dlock__lost(lk, why);
}

/* The pinned connection failed under the release itself: the lock was
 * ours until then and goes with the session (or its lease); only the
 * goodbye is unconfirmed, as dlock_release() says of a store it could
 * not tell (rc, not DLOCK_LOST). */
static int release_failed(struct my_store *ms, struct dlock_lock *lk,
                          struct my_lock *ml, int rc)
{
    char why[512];

    snprintf(why, sizeof(why), "%s", mysql_error(ml->c->db));
    dlock__pool_discard(&ms->pool, ml->c);
    ml->c = NULL;
    return dlock__seterr(rc,
                         "lock '%s': its release could not be "
                         "confirmed: its connection to %s failed (%s); "
                         "its GET_LOCK goes with the session",
                         lk->name, ms->base.url, why);
}

struct held_call;
static int release_op(struct held_call *k, struct conn *c);

/* WHERE clause: lk's row, still live (and its GET_LOCK still ours). */
void dlock__my_sb_own(struct sb *b, struct my_store *ms, struct conn *c,
                      const struct dlock_lock *lk, const struct my_lock *ml)
{
    char k[KEY_LIT_MAX];

    /* sql/own.sql: in lease mode the last %s is not there. */
    dlock__my_key_lit(c, ml, k);
    dlock__my_sb_add(b, " ");
    dlock__my_sb_add(b, ms->sql.own, k, lk->token, k);
}

/* After finding the lock lost: tidy our row and GET_LOCK away. */
void dlock__my_tidy_lost(struct my_store *ms, struct conn *c,
                         const struct dlock_lock *lk, struct my_lock *ml)
{
    (void)dlock__my_delete_own_row(ms, c, lk, ml);
    if (!ms->lease_mode && ml->c != NULL) {
        long long v;
        int found;
        struct sb b = {0};

        /* Only if this session still holds it (after a takeover it does
         * not, and RELEASE_LOCK would just say so). */
        char k[KEY_LIT_MAX];

        dlock__my_key_lit(c, ml, k);
        dlock__my_sb_add(&b, ms->sql.release_getlock_if_ours, k, k);
        (void)dlock__my_run_int(ms, c, &b, &v, &found, "RELEASE_LOCK");
        dlock__my_sb_free(&b);
    }
}

/* A call on a held lock: op runs on c, the lock's pinned connection or in
 * lease mode a pooled one, and returns DLOCK_OK, DLOCK_LOST (having
 * tidied up) or the failure of its statement. */
struct held_call {
    struct my_store *ms;
    struct dlock_lock *lk;
    struct my_lock *ml;
    int (*op)(struct held_call *k, struct conn *c);
    int64_t ttl_ms, left_ms;
};

static int held_fn(void *conn, void *arg, int *dead)
{
    struct held_call *k = arg;
    struct conn *c = conn;
    uint64_t w = dlock__my_watch(k->ms, c);
    int rc = k->op(k, c);

    dlock__io_unwatch(w);

    *dead = rc != DLOCK_OK && rc != DLOCK_LOST &&
            dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

/* Run k->op where the lock lives.  A pooled connection is under
 * dlock__pool's retry-once policy; the pinned one's failure means its
 * session, and with it our GET_LOCK, is gone: the lock is lost. */
static int held_run(struct held_call *k)
{
    uint64_t w;
    int rc;

    if (k->ml == NULL || (!k->ms->lease_mode && k->ml->c == NULL))
        return dlock__lost(k->lk, "its connection was lost earlier");
    if (k->ml->c == NULL)
        return dlock__pool_run(&k->ms->pool, held_fn, k);
    /* Within the lease (the connector takes no deadline per call). */
    w = dlock__my_watch(k->ms, k->ml->c);
    rc = k->op(k, k->ml->c);
    dlock__io_unwatch(w);
    if (rc != DLOCK_OK && rc != DLOCK_LOST)
        rc = k->op == release_op ? release_failed(k->ms, k->lk, k->ml, rc)
                                 : pinned_failed(k->ms, k->lk, k->ml);
    return rc;
}

static int extend_op(struct held_call *k, struct conn *c)
{
    struct sb b = {0};
    int rc;

    char key[KEY_LIT_MAX];

    dlock__my_key_lit(c, k->ml, key);
    /* sql/extend.sql: in lease mode the last %s is not there. */
    dlock__my_sb_add(&b, k->ms->sql.extend, (long long)k->ttl_ms,
                     (long long)((k->ttl_ms + 999) / 1000), key, k->lk->token,
                     key);
    rc = dlock__my_run(k->ms, c, &b, NULL, "extend");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && mysql_affected_rows(c->db) != 1) {
        dlock__my_tidy_lost(k->ms, c, k->lk, k->ml);
        rc = dlock__lost(k->lk, "its lease ran out or it was broken");
    }
    return rc;
}

int dlock__my_extend(struct dlock_store *s, struct dlock_lock *lk,
                     int64_t ttl_ms)
{
    struct held_call k = {
        (struct my_store *)s, lk, lk->priv, extend_op, ttl_ms, 0};

    return held_run(&k);
}

static int ttl_op(struct held_call *k, struct conn *c)
{
    struct sb b = {0};
    long long left = 0;
    int found, rc;

    char key[KEY_LIT_MAX];

    dlock__my_key_lit(c, k->ml, key);
    dlock__my_sb_add(&b, k->ms->sql.ttl_left, key, k->lk->token, key);
    rc = dlock__my_run_int(k->ms, c, &b, &left, &found, "assert_ttl");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && !found) {
        dlock__my_tidy_lost(k->ms, c, k->lk, k->ml);
        rc = dlock__lost(k->lk, "its lease ran out or it was broken");
    } else if (rc == DLOCK_OK) {
        k->left_ms = left > 0 ? left : 1;
    }
    return rc;
}

static int my_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                       int64_t *left_ms)
{
    struct held_call k = {(struct my_store *)s, lk, lk->priv, ttl_op, 0, 0};
    int rc = held_run(&k);

    if (rc == DLOCK_OK)
        *left_ms = k.left_ms;
    return rc;
}

/* Run the release's DELETE in b (freed here): exactly our row must go,
 * else the lock was lost (its row and GET_LOCK are tidied away). */
static int run_release(struct held_call *k, struct conn *c, struct sb *b)
{
    int rc = dlock__my_run(k->ms, c, b, NULL, "release");

    dlock__my_sb_free(b);
    if (rc != DLOCK_OK)
        return rc;
    if (mysql_affected_rows(c->db) != 1) {
        dlock__my_tidy_lost(k->ms, c, k->lk, k->ml);
        return dlock__lost(k->lk, "its lease ran out or it was broken");
    }
    return DLOCK_OK;
}

/* Delete the row first, then drop the GET_LOCK: a waiter woken by the
 * GET_LOCK finds the row gone. */
static int release_op(struct held_call *k, struct conn *c)
{
    struct sb b = {0};
    char key[KEY_LIT_MAX];
    int rc;

    if (!k->ms->lease_mode && k->ms->fast && k->lk->limit == 1) {
        /* One statement: the row goes, and with it the GET_LOCK, only if
         * the row is ours, recorded for this connection and this session
         * holds the GET_LOCK (RELEASE_LOCK answers 1 only then; IF runs
         * it only when the rest holds).
         * No lease check here: this session held the GET_LOCK throughout
         * (it is given up only by this statement or the session's end,
         * and a waiter takes over a holder past its lease only by KILLing
         * its session), so nobody else held the name meanwhile; and the
         * core has already answered LOST for a lease past its local end,
         * which is never later than the server's.  The check cost ~9% of
         * the server's CPU per cycle (NOW(3) in a DELETE's WHERE).
         * The table lock of a MEMORY (or MyISAM) table keeps a waiter
         * woken by the GET_LOCK from reading the row until it is gone. */
        dlock__my_key_lit(c, k->ml, key);
        dlock__my_sb_add(&b, k->ms->sql.release_fast, key, k->lk->token, key);
        return run_release(k, c, &b);
    }
    if (!k->ms->lease_mode &&
        __atomic_load_n(&k->ms->have_proc, __ATOMIC_RELAXED)) {
        /* One statement: CALL NAME_rel1 (sql/create_proc_rel.sql). */
        long long n = 0;

        dlock__my_key_lit(c, k->ml, key);
        dlock__my_sb_add(&b, k->ms->sql.release_call, key, k->lk->token);
        rc = dlock__my_call(k->ms, c, &b, &n, NULL, "release");
        dlock__my_sb_free(&b);
        if (rc == DLOCK_OK && n != 1) {
            dlock__my_tidy_lost(k->ms, c, k->lk, k->ml);
            return dlock__lost(k->lk, "its lease ran out or it was broken");
        }
        if (rc == DLOCK_OK && k->lk->limit > 1)
            dlock__my_sem_tidy(k->ms, c, k->lk, k->ml);
        if (rc != DLOCK_ENOTSUP)
            return rc;
    }
    dlock__my_key_lit(c, k->ml, key);
    dlock__my_sb_add(&b, k->ms->sql.release, key, k->lk->token, key);
    rc = run_release(k, c, &b);
    if (rc != DLOCK_OK)
        return rc;
    if (!k->ms->lease_mode)
        dlock__my_release_getlock(k->ms, c, k->ml);
    if (k->lk->limit > 1)
        dlock__my_sem_tidy(k->ms, c, k->lk, k->ml);
    return DLOCK_OK;
}

static int my_release(struct dlock_store *s, struct dlock_lock *lk)
{
    struct my_store *ms = (struct my_store *)s;
    struct held_call k = {ms, lk, lk->priv, release_op, 0, 0};
    int rc;

    if (k.ml == NULL)
        return dlock__lost(lk, "it was not held");
    lk->priv = NULL;
    rc = held_run(&k);
    /* The pinned connection (if it did not fail) goes back to the pool,
     * unless its last statement failed. */
    if (k.ml->c != NULL)
        dlock__pool_put(&ms->pool, k.ml->c);
    dlock__my_free_lock(ms, k.ml);
    return rc;
}

/* A lock not held: a wait given up (its connection goes back), or a lost
 * lock (its row and GET_LOCK tidied away as release would). */
static int my_forget(struct dlock_store *s, struct dlock_lock *lk)
{
    struct my_lock *ml = lk->priv;

    if (!ml->held)
        dlock__my_unwait((struct my_store *)s, lk);
    else
        (void)my_release(s, lk);
    return DLOCK_OK;
}

/* In a fork child: the pinned connection is the parent's.  Its socket is
 * pointed at /dev/null first, so that mysql_close() frees the memory
 * while its goodbye goes nowhere and the parent's session lives on. */
static void my_forget_inherited(struct dlock_store *s, struct dlock_lock *lk)
{
    struct my_lock *ml = lk->priv;

    (void)s;
    lk->priv = NULL;
    if (ml->c != NULL &&
        dlock__fd_detach((int)mysql_get_socket(ml->c->db)) == 0) {
        mysql_close(ml->c->db);
        free(ml->c);
    }
    free(ml);
}

/* --- status, list, force_release ---------------------------------------- */

static void fill_info(dlock_info *out, const struct holder *h)
{
    out->held = 1;
    out->holders = 1;
    out->limit = 1;
    out->shared = 0;
    out->ttl_ms = h->left;
    out->pid = h->pid;
    out->since_ms = h->since;
    dlock__strlcpy(out->host, h->host, sizeof(out->host));
}

struct name_call {
    struct my_store *ms;
    const char *name; /* status, force: the lock's; list: the prefix */
    dlock_info *out;
    unsigned *removed;
    struct dlock__names *names;
    const dlock_info *blank; /* status: *out as the caller filled it */
};

/* Session id's login and client address as the server shows them to us
 * (sql/session_of.sql): "" where it does not (another login's session,
 * without the PROCESS privilege). */
int dlock__my_session_of(struct my_store *ms, struct conn *c,
                         unsigned long long id, char *user, size_t ulen,
                         char *addr, size_t alen)
{
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    user[0] = addr[0] = '\0';
    dlock__my_sb_add(&b, ms->sql.session_of, id);
    rc = dlock__my_run(ms, c, &b, &res, "status");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res)) != NULL) {
        dlock__strlcpy(user, row[0] ? row[0] : "", ulen);
        dlock__strlcpy(addr, row[1] ? row[1] : "", alen);
    }
    mysql_free_result(res);
    return rc;
}

/* A holder that is not dlock (a session holding the key's GET_LOCK with
 * no row of dlock's, or a peer library's row): held, and its session as
 * the server reports it: its id always, its login and address where the
 * server shows them to us (PROCESS privilege). */
static int other_client(struct my_store *ms, struct conn *c,
                        unsigned long long id, dlock_info *out)
{
    out->held = 1;
    out->holders = 1;
    out->limit = 1;
    out->other_client = 1;
    out->host[0] = '\0';
    out->pid = 0;
    out->client_id = id <= INT64_MAX ? (int64_t)id : 0;
    if (id == 0)
        return DLOCK_OK;
    return dlock__my_session_of(ms, c, id, out->client_user,
                                sizeof(out->client_user), out->client_addr,
                                sizeof(out->client_addr));
}

static int status_fn(void *conn, void *arg, int *dead)
{
    struct name_call *k = arg;
    struct my_store *ms = k->ms;
    const char *name = k->name;
    dlock_info *out = k->out;
    struct my_lock ml;
    struct conn *c = conn;
    struct sb b = {0};
    char key[KEY_LIT_MAX];
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    *out = *k->blank; /* a retry starts from what the caller gave */
    ml.key_len = dlock__mysql_key(name, strlen(name), ms->mariadb, ml.key);
    c->name = name;
    /* sql/status.sql: the key three times, four with NAME_seq. */
    dlock__my_key_lit(c, &ml, key);
    dlock__my_sb_add(
        &b,
        ms->sql.status[ms->have_seq != 0][ms->mariadb != 0][ms->have_lim != 0],
        key, key, key, key);
    rc = dlock__my_run(ms, c, &b, &res, "status");
    dlock__my_sb_free(&b);
    if (rc == DLOCK_OK && res != NULL) {
        row = mysql_fetch_row(res);
        if (row != NULL) {
            struct holder h;
            unsigned long long used =
                row[13] != NULL ? strtoull(row[13], NULL, 10) : 0;
            int rowless = row[0] == NULL;

            out->fence = row[12] ? strtoull(row[12], NULL, 10) : 0;
            if (row[0] != NULL) {
                dlock__my_read_holder(row, mysql_fetch_lengths(res), &h, 1);
                if (h.lim > 1 && !h.has_owner) {
                    /* A semaphore's head: its live slot rows say. */
                    MYSQL_RES *r2 = res;

                    res = NULL;
                    mysql_free_result(r2);
                    rc = dlock__my_sem_status(ms, c, &h, out);
                } else if (!dlock__my_holder_dead(&h)) {
                    fill_info(out, &h);
                    /* No owner token: not dlock's row but a peer
                     * library's (its-mieger/mysql-shared-locks): its
                     * connection, created and ttl are what it says. */
                    if (!h.has_owner) {
                        mysql_free_result(res);
                        res = NULL;
                        rc = other_client(ms, c, h.conn_id, out);
                    }
                } else {
                    /* A dead row, and the key held by another session
                     * than the row's: as if there were no row. */
                    rowless = used != h.conn_id;
                }
                free(h.name);
            }
            if (rc == DLOCK_OK && rowless && !ms->lease_mode && used != 0) {
                struct holder w;
                int wf = 0;

                /* A waiter granted the GET_LOCK that has not claimed it:
                 * held while its wait's lease lasts; after that it is
                 * fenced off by the next acquire, so not held.  Else a
                 * GET_LOCK-only holder (an application using the key
                 * directly, or any login of the server: GET_LOCK needs
                 * no rights): held, known only by its session. */
                mysql_free_result(res);
                res = NULL;
                rc = dlock__my_read_waiter(ms, c, ml.key, ml.key_len, used, &w,
                                           &wf);
                if (rc == DLOCK_OK && wf && w.left > 0)
                    fill_info(out, &w);
                else if (rc == DLOCK_OK && !wf)
                    rc = other_client(ms, c, used, out);
            }
        }
        mysql_free_result(res);
    }
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

static int my_status(struct dlock_store *s, const char *name, dlock_info *out)
{
    dlock_info blank = *out;
    struct name_call k = {(struct my_store *)s, name, out, NULL, NULL, &blank};

    return dlock__pool_run(&k.ms->pool, status_fn, &k);
}

/* The names of the live rows under the prefix. */
static int names_fn(void *conn, void *arg, int *dead)
{
    struct name_call *k = arg;
    struct my_store *ms = k->ms;
    size_t plen = strlen(k->name);
    struct conn *c = conn;
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    dlock__my_sb_add(&b, "%s",
                     ms->sql.list[ms->mariadb != 0][ms->have_lim != 0]);
    rc = dlock__my_run(ms, c, &b, &res, "list");
    dlock__my_sb_free(&b);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        struct holder h;

        dlock__my_read_holder(row, mysql_fetch_lengths(res), &h, 1);
        if (row[10] != NULL && h.name == NULL) {
            rc = dlock__enomem();
            break;
        }
        if (h.name != NULL && !dlock__my_holder_dead(&h) &&
            !dlock__my_is_waiter(&h) && h.name_len >= plen &&
            h.name_len <= DLOCK_NAME_MAX && memcmp(h.name, k->name, plen) == 0)
            rc = dlock__names_add(k->names, h.name, h.name_len);
        free(h.name);
    }
    mysql_free_result(res);
    return rc;
}

static int my_list(struct dlock_store *s, const char *prefix,
                   int (*cb)(const dlock_info *info, void *payload),
                   void *payload)
{
    struct dlock__names names = {0};
    struct name_call k = {
        (struct my_store *)s, prefix, NULL, NULL, &names, NULL};

    return dlock__pool_list(&k.ms->pool, names_fn, &k, &names, s, my_status, cb,
                            payload);
}

/* The holders to break: connections holding GET_LOCK(key), session mode
 * only. */
struct victims {
    struct victim {
        unsigned long long conn_id;
        char key[KEY_MAX + 1]; /* GET_LOCK's key, raw */
        size_t key_len;
        int killed;
    } * v;
    size_t n, cap;
};

/* Holder h's connection, if it still holds key (nothing in lease mode). */
static int add_victim(struct my_store *ms, struct victims *vs,
                      const struct holder *h, const char *key, size_t len)
{
    if (ms->lease_mode || h->conn_id == 0 || h->used_by != h->conn_id ||
        len > KEY_MAX)
        return DLOCK_OK;
    if (vs->n == vs->cap) {
        size_t cap = vs->cap ? 2 * vs->cap : 8;
        struct victim *nv = realloc(vs->v, cap * sizeof(*nv));

        if (nv == NULL)
            return dlock__enomem();
        vs->v = nv;
        vs->cap = cap;
    }
    vs->v[vs->n].conn_id = h->conn_id;
    memcpy(vs->v[vs->n].key, key, len);
    vs->v[vs->n].key_len = len;
    vs->v[vs->n].killed = 0;
    vs->n++;
    return DLOCK_OK;
}

/* KILL the victims' connections; then, since KILL returns before the
 * session ends, wait (bounded) until their GET_LOCKs are free, so an
 * acquire right after us succeeds. */
static int kill_victims(struct my_store *ms, struct conn *c, const char *name,
                        struct victims *vs)
{
    struct victim *v = vs->v;
    struct sb b = {0};
    int rc = DLOCK_OK;

    for (size_t i = 0; i < vs->n && rc == DLOCK_OK; i++) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, ms->sql.kill, v[i].conn_id);
        if (dlock__my_query(c, b.p, b.len) == 0)
            v[i].killed = 1;
        else if (mysql_errno(c->db) == ER_KILL_DENIED_ERROR)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "'%s': row removed, but this user may not "
                               "KILL the holder's connection %llu (needs "
                               "CONNECTION ADMIN or SUPER); it keeps its "
                               "GET_LOCK until it notices: %s",
                               name, v[i].conn_id, mysql_error(c->db));
        else if (mysql_errno(c->db) != ER_NO_SUCH_THREAD)
            rc = dlock__my_db_err(ms, c, "release --force");
    }
    for (size_t i = 0; i < vs->n && rc == DLOCK_OK; i++) {
        for (int64_t until = dlock__now_ms() + ms->timeout_ms;
             v[i].killed && dlock__now_ms() < until;) {
            long long used = 0;
            int found;
            struct sb k = {0};

            dlock__my_sb_reset(&b);
            dlock__my_sb_lit(&k, c, v[i].key, v[i].key_len);
            if (k.oom)
                b.oom = 1;
            else
                dlock__my_sb_add(&b, ms->sql.used_by, k.p);
            dlock__my_sb_free(&k);
            rc = dlock__my_run_int(ms, c, &b, &used, &found, "release --force");
            if (rc != DLOCK_OK || (unsigned long long)used != v[i].conn_id)
                break;
            dlock__sleep_ms(2);
        }
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* A semaphore's head h: its holders are the slot rows.  Delete them
 * (*removed: how many) and add the connections still holding their
 * slot's GET_LOCK to vs. */
static int force_slots(struct my_store *ms, struct conn *c,
                       const struct holder *h, unsigned *removed,
                       struct victims *vs)
{
    char prefix[DLOCK__MYSQL_SEM_PREFIX + 1];
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    dlock__mysql_sem_prefix(h->name, h->name_len, prefix);
    /* An admission that slips in between this read and the delete loses
     * its row too, unkilled: like every holder here it is told LOST at its
     * next renewal, and its slot's GET_LOCK lasts only until then. */
    dlock__my_sb_add(&b, ms->sql.sem_rows[ms->mariadb != 0][ms->have_lim != 0],
                     prefix);
    rc = dlock__my_run(ms, c, &b, &res, "release --force");
    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        struct holder s;

        dlock__my_read_holder(row, mysql_fetch_lengths(res), &s, 1);
        rc = s.name == NULL ? dlock__enomem()
                            : add_victim(ms, vs, &s, s.name, s.name_len);
        free(s.name);
    }
    mysql_free_result(res);
    if (rc == DLOCK_OK) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, ms->sql.force_delete_slots, prefix);
        rc = dlock__my_run(ms, c, &b, NULL, "release --force");
        if (rc == DLOCK_OK)
            *removed = (unsigned)mysql_affected_rows(c->db);
    }
    dlock__my_sb_free(&b);
    return rc;
}

/* No row at the key: if the session holding its GET_LOCK is a waiter
 * granted it that has not claimed it (its waiter row for the key is
 * there, live or not), that row goes (*removed) and the session is a
 * victim.  A session with no waiter row holds the key with GET_LOCK only
 * (not a dlock holder): left alone. */
static int force_waiter(struct my_store *ms, struct conn *c,
                        const struct my_lock *ml, unsigned *removed,
                        struct victims *vs)
{
    char wname[WNAME_MAX + 1], k[KEY_LIT_MAX];
    struct holder w;
    struct sb b = {0};
    long long used = 0;
    int found, rc;

    dlock__my_sb_add(&b, ms->sql.used_by, dlock__my_key_lit(c, ml, k));
    rc = dlock__my_run_int(ms, c, &b, &used, &found, "release --force");
    if (rc != DLOCK_OK || !found || used <= 0)
        goto out;
    rc = dlock__my_read_waiter(ms, c, ml->key, ml->key_len,
                               (unsigned long long)used, &w, &found);
    if (rc != DLOCK_OK || !found)
        goto out;
    dlock__my_wait_name(ml->key, ml->key_len, (unsigned long long)used, wname);
    dlock__my_sb_reset(&b);
    dlock__my_sb_add(&b, ms->sql.force_delete_waiter, wname, used);
    rc = dlock__my_run(ms, c, &b, NULL, "release --force");
    if (rc != DLOCK_OK)
        goto out;
    *removed = (unsigned)mysql_affected_rows(c->db);
    w.used_by = w.conn_id = (unsigned long long)used;
    rc = add_victim(ms, vs, &w, ml->key, ml->key_len);
out:
    dlock__my_sb_free(&b);
    return rc;
}

static int force_fn(void *conn, void *arg, int *dead)
{
    struct name_call *k = arg;
    struct my_store *ms = k->ms;
    const char *name = k->name;
    unsigned *removed = k->removed;
    struct my_lock ml;
    struct conn *c = conn;
    struct sb b = {0};
    char key[KEY_LIT_MAX];
    MYSQL_RES *res;
    MYSQL_ROW row;
    struct holder h = {0};
    struct victims vs = {0};
    int rc, have = 0, sem;

    *removed = 0;
    ml.key_len = dlock__mysql_key(name, strlen(name), ms->mariadb, ml.key);
    if (dlock__mysql_reserved_key(ml.key, ml.key_len)) {
        *dead = 0;
        return dlock__seterr(DLOCK_EINVAL,
                             "refusing to force-release a name spelt as a "
                             "semaphore's slot key or a waiter's row "
                             "(40 hex digits, '#' or '~', digits): it "
                             "would break another lock's holder or waiter");
    }
    c->name = name;
    dlock__my_key_lit(c, &ml, key);
    dlock__my_sb_add(&b, ms->sql.read_row[ms->mariadb != 0][ms->have_lim != 0],
                     key);
    rc = dlock__my_run(ms, c, &b, &res, "release --force");
    if (rc == DLOCK_OK && res != NULL) {
        row = mysql_fetch_row(res);
        if (row != NULL) {
            dlock__my_read_holder(row, mysql_fetch_lengths(res), &h, 1);
            have = 1;
            if (h.name == NULL)
                rc = dlock__enomem();
        }
        mysql_free_result(res);
    }
    if (rc == DLOCK_OK && !have && !ms->lease_mode)
        rc = force_waiter(ms, c, &ml, removed, &vs);
    if (rc != DLOCK_OK || !have) {
        if (rc == DLOCK_OK && vs.n > 0)
            rc = kill_victims(ms, c, name, &vs);
        goto out;
    }
    /* A semaphore's head row: break every holder (the slot rows), not just
     * the head.  A lock's row: break its holder. */
    sem = h.lim > 1 && !h.has_owner;
    rc = sem ? force_slots(ms, c, &h, removed, &vs)
             : add_victim(ms, &vs, &h, ml.key, ml.key_len);
    if (rc == DLOCK_OK) {
        dlock__my_sb_reset(&b);
        dlock__my_sb_add(&b, ms->sql.force_delete, key);
        rc = dlock__my_run(ms, c, &b, NULL, "release --force");
        if (rc == DLOCK_OK && !sem)
            *removed = (unsigned)mysql_affected_rows(c->db);
    }
    if (rc == DLOCK_OK)
        rc = kill_victims(ms, c, name, &vs);
out:
    free(vs.v);
    free(h.name);
    dlock__my_sb_free(&b);
    *dead = rc != DLOCK_OK && dlock__my_conn_error(mysql_errno(c->db));
    return rc;
}

static int my_force_release(struct dlock_store *s, const char *name,
                            unsigned *removed)
{
    struct name_call k = {
        (struct my_store *)s, name, NULL, removed, NULL, NULL};

    return dlock__pool_run(&k.ms->pool, force_fn, &k);
}

const struct dlock_store_ops dlock__mysql_ops = {
    .version = DLOCK_STORE_OPS_VERSION,
    .name = "mysql",
    .has_shared = 0,
    .has_limit = 1,
    .open = my_open,
    .close = my_close,
    .try_acquire = dlock__my_try_acquire,
    .wait_slice = dlock__my_wait_slice,
    .extend = dlock__my_extend,
    .extend_many = dlock__my_extend_many,
    .ttl_left = my_ttl_left,
    .release = my_release,
    .forget = my_forget,
    .forget_inherited = my_forget_inherited,
    .status = my_status,
    .list = my_list,
    .force_release = my_force_release,
    .init = dlock__my_init,
    .ddl = dlock__my_ddl,
    .run_begin = dlock__my_run_begin,
    .run_end = dlock__my_run_end,
    .runs = dlock__my_runs,
    .last_runs = dlock__my_last_runs,
};
