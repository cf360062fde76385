/*
 * conn.c - one MySQL/MariaDB connection: connect, the pool's callbacks,
 * SQL text and escaping, running statements, what an error means.
 */
#include <errmsg.h>
#include <errno.h>
#include <mysqld_error.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "my.h"

int64_t dlock__my_max_slice(int64_t timeout_ms)
{
    return timeout_ms < MAX_SLICE_MS ? timeout_ms : MAX_SLICE_MS;
}

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_rc;

/* mysql_library_init() sets SIGPIPE to SIG_IGN for the whole process; a
 * library must leave its program's signals alone (dlock run's waiter is
 * to die of SIGPIPE, 141, as on every other store).  The disposition is
 * put back as it was: the connector's plain socket writes use
 * MSG_NOSIGNAL and do not need it ignored.  Once per process
 * (pthread_once), before any connection exists. */
static void lib_init(void)
{
    struct sigaction old;
    int saved = sigaction(SIGPIPE, NULL, &old) == 0;

    lib_rc = mysql_library_init(0, NULL, NULL);
    if (saved)
        (void)sigaction(SIGPIPE, &old, NULL);
}

int dlock__my_lib_init(void)
{
    pthread_once(&lib_once, lib_init);
    if (lib_rc != 0)
        return dlock__seterr(DLOCK_ESTORE,
                             "cannot initialise the MariaDB client library");
    return DLOCK_OK;
}

int dlock__my_conn_error(unsigned e)
{
    return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST ||
           e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR ||
           e == CR_UNKNOWN_HOST || e == CR_SERVER_LOST_EXTENDED ||
           (e >= 2000 && e < 3000) || e == ER_CONNECTION_KILLED ||
           e == ER_SERVER_SHUTDOWN || e == ER_QUERY_INTERRUPTED;
}

/* The class of a failed connection or statement (include/dlock.h): the
 * client library's own errors (2000..2999: cannot connect, lost, timed
 * out), a server going away or out of connection slots, a statement cut
 * short by a KILL: DLOCK_EUNAVAIL; what the server refuses for good (a
 * wrong password 1045, no rights on the database 1044 or table 1142,
 * an unknown database 1049...): DLOCK_ESTORE.  One exception among the
 * client's: an authentication plugin it cannot load (2059) will not
 * load on the next try either. */
int dlock__my_err_code(unsigned e)
{
    if (e == CR_AUTH_PLUGIN_CANNOT_LOAD)
        return DLOCK_ESTORE;
    return dlock__my_conn_error(e) || e == ER_CON_COUNT_ERROR ? DLOCK_EUNAVAIL
                                                              : DLOCK_ESTORE;
}

/* The server refused a name the lock table's name column cannot hold: an
 * incorrect string value on INSERT, or an illegal mix of collations when
 * the utf8mb4 key is compared with a narrower column. */
static int is_charset_error(unsigned e)
{
    return e == ER_TRUNCATED_WRONG_VALUE_FOR_FIELD ||
           e == ER_CANT_AGGREGATE_2COLLATIONS ||
           e == ER_CANT_AGGREGATE_3COLLATIONS ||
           e == ER_CANT_AGGREGATE_NCOLLATIONS;
}

int dlock__my_unstorable(struct my_store *ms, const char *name,
                         const char *detail)
{
    const char *cs = ms->name_charset[0] ? ms->name_charset : "not utf8mb4";

    return dlock__seterr(DLOCK_EINVAL,
                         "the %s table's name column is %s and cannot "
                         "store '%s': ALTER it to utf8mb4 (see dlock init "
                         "--print)%s%s",
                         ms->raw_table, cs, name, detail[0] ? ": " : "",
                         detail);
}

int dlock__my_db_err(struct my_store *ms, struct conn *c, const char *what)
{
    unsigned e = mysql_errno(c->db);
    int rc = dlock__my_err_code(e);

    /* A server that went read-only (the old primary after a failover, a
     * replica a proxy still sends to): as Redis's READONLY, not for good.
     * 1290 is "running with the %s option": only --read-only (the option's
     * name is not translated) is such; --secure-file-priv and the like
     * stay ESTORE. */
    if (e == ER_OPTION_PREVENTS_STATEMENT &&
        (strstr(mysql_error(c->db), "read-only") != NULL ||
         strstr(mysql_error(c->db), "read_only") != NULL))
        rc = DLOCK_EUNAVAIL;

    if (c->name != NULL && is_charset_error(e))
        return dlock__my_unstorable(ms, c->name, mysql_error(c->db));
    if (e == ER_BAD_FIELD_ERROR)
        return dlock__seterr(DLOCK_ESTORE,
                             "%s: table %s lacks dlock's columns (was it "
                             "created by another tool?): add them with the "
                             "ALTER TABLE shown by `dlock init --print` "
                             "(%s): %s",
                             what, ms->raw_table, ms->base.url,
                             mysql_error(c->db));
    return dlock__seterr(rc, "%s on %s: %s (MySQL error %u)", what,
                         ms->base.url, mysql_error(c->db), e);
}

static void conn_close(void *ctx, void *conn)
{
    struct conn *c = conn;

    (void)ctx;
    mysql_close(c->db);
    free(c);
}

uint64_t dlock__my_watch(const struct my_store *ms, const struct conn *c)
{
    return dlock__io_watch((int)mysql_get_socket(c->db), ms->timeout_ms);
}

/* The connector's wait for its socket (MARIADB_OPT_IO_WAIT): its own
 * timeouts are per read, so a server that sends a byte at a time would
 * hold a statement for ever.  Here a read waits no longer than `timeout`
 * (the read timeout, ms) counted from when the statement was sent (the
 * socket's last data sent, TCP_INFO), so the statement's whole answer
 * is due within it; and no call waits past dlock__io_deadline (a held
 * lock's lease end, a finite wait's deadline + 1 s), whatever the
 * statement (a GET_LOCK wait included).  A unix socket has no TCP_INFO:
 * there the read timeout is per read, as the connector's. */
static int io_wait(my_socket fd, my_bool is_read, int timeout)
{
    for (;;) {
        struct pollfd p = {fd, is_read ? POLLIN : POLLOUT, 0};
        int64_t left = timeout > 0 ? timeout : INT64_MAX;
        struct tcp_info ti;
        socklen_t tlen = sizeof(ti);
        int n;

        if (is_read && timeout > 0 &&
            getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &tlen) == 0 &&
            tlen >= sizeof(ti) && ti.tcpi_state == TCP_ESTABLISHED &&
            (int64_t)timeout - ti.tcpi_last_data_sent < left)
            left = (int64_t)timeout - ti.tcpi_last_data_sent;
        if (dlock__io_deadline != 0 &&
            dlock__io_deadline - dlock__now_ms() < left)
            left = dlock__io_deadline - dlock__now_ms();
        if (left <= 0)
            return 0;
        n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && left > 1000000)
            continue;
        return n;
    }
}

static unsigned secs_up(int64_t ms)
{
    return (unsigned)((ms + 999) / 1000);
}

struct my_val dlock__my_idle_val(const struct my_store *ms, int64_t idle_ms)
{
    return MV_U(secs_up(idle_ms > ms->timeout_ms ? idle_ms : ms->timeout_ms));
}

/* A new connection, set up for locking (the pool's open). */
static int conn_open(void *ctx, void **out)
{
    struct my_store *ms = ctx;
    unsigned wt = secs_up(ms->timeout_ms);
    unsigned rt = secs_up(ms->timeout_ms + dlock__my_max_slice(ms->timeout_ms));
    /* For a held lock's call, within its lease (dlock__io_bound()). */
    unsigned ct = secs_up(dlock__io_bound(ms->timeout_ms));
    my_bool off = 0, on = 1;
    struct conn *c;
    MYSQL_RES *res;
    MYSQL_ROW row;
    const char *info;
    uint64_t w;

    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return dlock__enomem();
    c->db = mysql_init(NULL);
    if (c->db == NULL) {
        free(c);
        return dlock__enomem();
    }
    mysql_optionsv(c->db, MYSQL_OPT_CONNECT_TIMEOUT, &ct);
    mysql_optionsv(c->db, MYSQL_OPT_READ_TIMEOUT, &rt);
    mysql_optionsv(c->db, MYSQL_OPT_WRITE_TIMEOUT, &wt);
    mysql_optionsv(c->db, MARIADB_OPT_IO_WAIT, io_wait);
    /* A reconnect would silently drop the session's GET_LOCKs. */
    mysql_optionsv(c->db, MYSQL_OPT_RECONNECT, &off);
    mysql_optionsv(c->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    /* A transaction of ours left idle on the server longer than our
     * own deadline is one we have given up on: a client stopped, paused
     * or cut off inside it would otherwise keep its row locks, and the
     * name, for as long as the server believes the connection lives.
     * MariaDB (10.3+, the M! comment) then ends the session; MySQL has
     * no such setting (docs/threat-model.md, R13).  A session-mode
     * holder's own transactions allow a whole lease (runs.c). */
    mysql_optionsv(c->db, MYSQL_INIT_COMMAND, ms->sql.init_session);
    /* Fewer gap locks between concurrent INSERTs and DELETEs of a key. */
    mysql_optionsv(c->db, MYSQL_INIT_COMMAND, ms->sql.init_isolation);
    if (ms->ssl > 0)
        mysql_optionsv(c->db, MYSQL_OPT_SSL_ENFORCE, &on);
    if (ms->ssl > 1)
        mysql_optionsv(c->db, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
    if (ms->ssl_ca != NULL)
        mysql_optionsv(c->db, MYSQL_OPT_SSL_CA, ms->ssl_ca);
    if (ms->ssl_cert != NULL)
        mysql_optionsv(c->db, MYSQL_OPT_SSL_CERT, ms->ssl_cert);
    if (ms->ssl_key != NULL)
        mysql_optionsv(c->db, MYSQL_OPT_SSL_KEY, ms->ssl_key);
    /* Multi-statements: the renew thread's batch is a SET, an UPDATE and
     * the SELECT that reads back which rows it renewed, in one round trip
     * (renew.c).  Every statement is built here, values as escaped
     * literals (dlock__my_sb_lit) or numbers, never from outside SQL. */
    if (mysql_real_connect(c->db, ms->host, ms->user, ms->password,
                           ms->database, ms->port, ms->socket,
                           CLIENT_FOUND_ROWS | CLIENT_MULTI_RESULTS |
                               CLIENT_MULTI_STATEMENTS) == NULL) {
        unsigned e = mysql_errno(c->db);
        int rc = dlock__seterr(dlock__my_err_code(e),
                               "cannot connect to %s: %s (MySQL error %u)",
                               ms->base.url, mysql_error(c->db), e);

        conn_close(ms, c);
        return rc;
    }
    info = mysql_get_server_info(c->db);
    c->frac = info != NULL && strstr(info, "MariaDB") != NULL;
    /* Made for a held lock's call: within its lease (dlock__my_watch). */
    w = dlock__my_watch(ms, c);
    if (mysql_query(c->db, ms->sql.conn_info) != 0 ||
        (res = mysql_store_result(c->db)) == NULL) {
        int rc;

        dlock__io_unwatch(w);
        rc = dlock__my_db_err(ms, c, "connect");
        conn_close(ms, c);
        return rc;
    }
    dlock__io_unwatch(w);
    row = mysql_fetch_row(res);
    c->id = row != NULL && row[0] != NULL ? strtoul(row[0], NULL, 10) : 0;
    c->idle_max_ms =
        row != NULL && row[1] != NULL ? strtoll(row[1], NULL, 10) * 1000 : 0;
    if (row != NULL && row[2] != NULL)
        dlock__quota_server(&ms->conns, strtoll(row[2], NULL, 10));
    c->used_ms = dlock__now_ms();
    mysql_free_result(res);
    *out = c;
    return DLOCK_OK;
}
/* --- the pool's callbacks ---------------------------------------------- */

/* Given back (idle 0): kept only if its last statement did not fail, as
 * its session's state is unknown after an error.  Reused after sitting
 * idle a while: pinged, as it may have died with a server restart or
 * wait_timeout.  Either way it forgets the lock name it worked for, so a
 * connection handed out has none until its user sets one. */
static int pool_healthy(void *ctx, void *conn, int64_t idle_ms)
{
    struct my_store *ms = ctx;
    struct conn *c = conn;
    uint64_t w;
    int ok;

    c->name = NULL;
    if (idle_ms < IDLE_PING_MS)
        return mysql_errno(c->db) == 0;
    /* The ping of a call made for a held lock (a renewal, its release)
     * ends with that lock's lease, as the call's own statement would:
     * the connector's read timeout is ?timeout= plus a GET_LOCK slice. */
    w = dlock__my_watch(ms, c);
    ok = mysql_ping(c->db) == 0;
    dlock__io_unwatch(w);
    return ok;
}

const struct dlock__pool_ops dlock__my_pool_ops = {
    .open = conn_open,
    .close = conn_close,
    .healthy = pool_healthy,
};

/* --- SQL text ---------------------------------------------------------- */

static void sb_grow(struct sb *b, size_t need)
{
    char *np;
    size_t cap;

    if (b->oom || b->len + need + 1 <= b->cap)
        return;
    cap = b->cap ? b->cap : 256;
    while (cap < b->len + need + 1)
        cap *= 2;
    np = realloc(b->p, cap);
    if (np == NULL) {
        b->oom = 1;
        return;
    }
    b->p = np;
    b->cap = cap;
}

void dlock__my_sb_add(struct sb *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    sb_grow(b, (size_t)n);
    if (b->oom)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* A quoted string literal.  Single quotes work whatever ANSI_QUOTES says;
 * the connector escapes for the connection's charset and for
 * NO_BACKSLASH_ESCAPES (the session's status flag).  The charset is
 * utf8mb4 on the server too: sql/init_session.sql sets it after the
 * server's init_connect, which could make it GBK or SJIS. */
void dlock__my_sb_lit(struct sb *b, struct conn *c, const char *s, size_t len)
{
    sb_grow(b, 2 * len + 3);
    if (b->oom)
        return;
    b->p[b->len++] = '\'';
    b->len +=
        mysql_real_escape_string(c->db, b->p + b->len, s, (unsigned long)len);
    b->p[b->len++] = '\'';
    b->p[b->len] = '\0';
}

/* --- values bound to a statement's '?' -------------------------------- */

/* The offset of the first '?' of t at or after i that is a placeholder:
 * not inside a quoted string or identifier ('...', "...", `...`, a
 * backslash escaping the next character in the first two) or a comment
 * ("-- " or '#' to the end of the line, slash-star to star-slash; but
 * not an executable one, slash-star-! or slash-star-M-!, which the
 * server runs).
 * strlen(t) if none. */
static size_t next_mark(const char *t, size_t i)
{
    for (; t[i] != '\0'; i++) {
        char ch = t[i];

        if (ch == '?')
            return i;
        if (ch == '\'' || ch == '"' || ch == '`') {
            for (i++; t[i] != '\0' && t[i] != ch; i++)
                if (t[i] == '\\' && ch != '`' && t[i + 1] != '\0')
                    i++;
        } else if (ch == '#' || (ch == '-' && t[i + 1] == '-' &&
                                 (t[i + 2] == ' ' || t[i + 2] == '\t' ||
                                  t[i + 2] == '\n'))) {
            while (t[i] != '\0' && t[i] != '\n')
                i++;
        } else if (ch == '/' && t[i + 1] == '*' &&
                   (t[i + 2] == '!' || (t[i + 2] == 'M' && t[i + 3] == '!'))) {
            i += 2; /* an executable comment: SQL the server runs */
        } else if (ch == '/' && t[i + 1] == '*') {
            const char *e = strstr(t + i + 2, "*/");

            i = e != NULL ? (size_t)(e - t) + 1 : strlen(t);
        }
        if (t[i] == '\0')
            break;
    }
    return i;
}

static void sb_put(struct sb *b, const char *s, size_t n)
{
    sb_grow(b, n);
    if (b->oom)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void dlock__my_bind(struct sb *b, struct conn *c, const char *tmpl,
                    const struct my_val *v, size_t n)
{
    size_t i = 0, k = 0;

    for (;;) {
        size_t m = next_mark(tmpl, i);

        sb_put(b, tmpl + i, m - i);
        if (tmpl[m] == '\0')
            break;
        if (k == n) {
            b->oom = b->bad = 1; /* more '?' than values: a bug */
            return;
        }
        switch (v[k].kind) {
        case MV_STR:
            dlock__my_sb_lit(b, c, v[k].s, v[k].len);
            break;
        case MV_INT:
            dlock__my_sb_add(b, "%lld", v[k].i);
            break;
        case MV_UINT:
            dlock__my_sb_add(b, "%llu", v[k].u);
            break;
        default: /* MV_SECS: ms as seconds with 3 decimals (ms >= 0) */
            dlock__my_sb_add(b, "%lld.%03lld", v[k].i / 1000, v[k].i % 1000);
            break;
        }
        k++;
        i = m + 1;
    }
}

void dlock__my_sb_reset(struct sb *b)
{
    b->len = 0;
    if (b->p != NULL)
        b->p[0] = '\0';
}

void dlock__my_sb_free(struct sb *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Send one statement.  In autocommit an InnoDB deadlock or lock wait
 * timeout rolls back just that statement, so it is simply sent again. */
int dlock__my_query(struct conn *c, const char *sql, size_t len)
{
    for (int tries = 0;; tries++) {
        unsigned e;

        c->used_ms = dlock__now_ms();
        if (mysql_real_query(c->db, sql, (unsigned long)len) == 0)
            return 0;
        e = mysql_errno(c->db);
        if ((e != ER_LOCK_DEADLOCK && e != ER_LOCK_WAIT_TIMEOUT) || tries >= 20)
            return -1;
        dlock__sleep_ms(tries < 3 ? 0 : 1);
    }
}

/* Run b's statement.  res (may be NULL) receives its result set. */
int dlock__my_run(struct my_store *ms, struct conn *c, struct sb *b,
                  MYSQL_RES **res, const char *what)
{
    if (res != NULL)
        *res = NULL;
    if (b->bad)
        return dlock__seterr(DLOCK_ESTORE,
                             "%s on %s: a statement has more '?' than "
                             "values (a bug)",
                             what, ms->base.url);
    if (b->oom)
        return dlock__enomem();
    if (dlock__my_query(c, b->p, b->len) != 0)
        return dlock__my_db_err(ms, c, what);
    if (res != NULL) {
        *res = mysql_store_result(c->db);
        if (*res == NULL && mysql_field_count(c->db) != 0)
            return dlock__my_db_err(ms, c, what);
    }
    return DLOCK_OK;
}

/* Run a statement returning one integer (or NULL, or no row: *found 0). */
int dlock__my_run_int(struct my_store *ms, struct conn *c, struct sb *b,
                      long long *val, int *found, const char *what)
{
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc = dlock__my_run(ms, c, b, &res, what);

    *found = 0;
    if (rc != DLOCK_OK)
        return rc;
    if (res == NULL)
        return dlock__seterr(DLOCK_ESTORE, "%s on %s: no result", what,
                             ms->base.url);
    row = mysql_fetch_row(res);
    if (row != NULL && row[0] != NULL) {
        *val = strtoll(row[0], NULL, 10);
        *found = 1;
    }
    mysql_free_result(res);
    return DLOCK_OK;
}
