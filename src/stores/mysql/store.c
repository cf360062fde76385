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
    .ttl_left = dlock__my_ttl_left,
    .release = dlock__my_release,
    .forget = dlock__my_forget,
    .forget_inherited = dlock__my_forget_inherited,
    .status = dlock__my_status,
    .list = dlock__my_list,
    .force_release = dlock__my_force_release,
    .init = dlock__my_init,
    .probe = dlock__my_probe,
    .ddl = dlock__my_ddl,
    .run_begin = dlock__my_run_begin,
    .run_end = dlock__my_run_end,
    .runs = dlock__my_runs,
    .last_runs = dlock__my_last_runs,
    .keep_runs = dlock__my_keep_runs,
    .kept_runs = dlock__my_kept_runs,
    .value_set = dlock__my_value_set,
    .value_get = dlock__my_value_get,
    .suspend = dlock__my_suspend,
    .resume = dlock__my_resume,
    .suspension = dlock__my_suspension,
    .suspensions = dlock__my_suspensions,
    .watch = NULL, /* dlock_observe() polls (DLOCK_OBSERVE_POLL_MS) */
    .watch_end = NULL,
};
