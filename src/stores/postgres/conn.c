/*
 * conn.c - one PostgreSQL connection: connect, wait for the socket, run a
 * statement within a deadline, prepared statements, reading columns.
 *
 * Every statement is sent without blocking and waited for with poll(), so
 * a server that stops answering costs at most the operation timeout; the
 * caller then drops the connection.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-events.h>

#include "pg.h"

static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* the library never prints */
}

/* A libpq message on one line, without the trailing newline. */
static void one_line(char *dst, size_t len, const char *src)
{
    size_t j = 0;

    if (src == NULL)
        src = "";
    for (size_t i = 0; src[i] != '\0' && j + 1 < len; i++) {
        char ch = src[i] == '\n' || src[i] == '\t' ? ' ' : src[i];

        if (ch == ' ' && (j == 0 || dst[j - 1] == ' '))
            continue;
        dst[j++] = ch;
    }
    while (j > 0 && dst[j - 1] == ' ')
        j--;
    dst[j] = '\0';
}

/* The URL's secrets, kept as libpq instance data of each connection so
 * that run_op() can scrub what libpq and the server say. */
static int secrets_event(PGEventId id, void *info, void *pass)
{
    (void)id;
    (void)info;
    (void)pass;
    return 1;
}

/* one_line() of a libpq text, scrubbed of the URL's secrets. */
static void driver_text(char *dst, size_t len, const char *src,
                        const char *const *secrets)
{
    char tmp[512];

    one_line(tmp, sizeof(tmp), src);
    dlock__scrub(dst, len, tmp, secrets);
}

_Thread_local int dlock__pg_cancellable;

/* The acquire's cancel fired during a wait statement: ask the server to
 * cancel it (PQcancel returns once the server has signalled the backend,
 * so the cancel cannot hit a later statement on the connection).  The
 * statement then ends, with 57014 (the caller lets go of what it may
 * have taken, as after any failure) or granted (the core lets go). */
static void cancel_statement(PGconn *c)
{
    PGcancel *pc = PQgetCancel(c);
    char err[256];

    if (pc != NULL) {
        (void)PQcancel(pc, err, sizeof(err));
        PQfreeCancel(pc);
    }
}

/* Wait until the socket is ready for `events` or deadline: 1 ready,
 * 0 timed out, -1 error.  *cancel_fd (>= 0: the acquire's cancel, for a
 * wait statement) readable: the statement is cancelled, and the wait for
 * its answer goes on. */
static int wait_io(PGconn *c, short events, int64_t deadline, int *cancel_fd)
{
    struct pollfd p[2];

    p[0].fd = PQsocket(c);
    p[0].events = events;
    if (p[0].fd < 0)
        return -1;
    for (;;) {
        int64_t left = deadline - dlock__now_ms();
        int r;

        if (left <= 0)
            return 0;
        p[1].fd = *cancel_fd;
        p[1].events = POLLIN;
        p[1].revents = 0;
        r = poll(p, *cancel_fd >= 0 ? 2 : 1,
                 left > INT_MAX ? INT_MAX : (int)left);
        if (r > 0 && p[1].revents != 0) {
            *cancel_fd = -1; /* once: the pipe stays readable */
            if (dlock__cancelled())
                cancel_statement(c);
            if (p[0].revents == 0)
                continue;
        }
        if (r > 0)
            return 1;
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/*
 * Run one statement (n > 0 or v != NULL: with text parameters; else a
 * simple query, possibly several statements) and wait for its result, for
 * at most timeout_ms.  DLOCK_OK with *out set (caller clears it);
 * DLOCK_ESTORE when the server answered with an error (SQLSTATE in state,
 * the connection still usable); DLOCK_EUNAVAIL when the connection broke
 * or did not answer in time: the caller must drop it.
 */
enum { OP_QUERY, OP_PREPARE, OP_PREPARED };

static int run_op(PGconn *c, const char *url, const char *what, int op,
                  const char *stmt, const char *sql, int n,
                  const char *const *v, int64_t timeout_ms, PGresult **out,
                  char state[6])
{
    int64_t deadline;
    PGresult *first = NULL;
    const char *const *sec;
    char msg[512];
    int sent, r;
    /* Only a wait statement is cancelled: the others are short, and one
     * cut off halfway (a row written, its answer unread) would leave more
     * behind than it saves. */
    int cancel_fd = dlock__pg_cancellable ? dlock__cancel_fd() : -1;

    *out = NULL;
    if (state != NULL)
        state[0] = '\0';
    /* No longer than the lease of the lock it is for, if any. */
    timeout_ms = dlock__io_bound(timeout_ms);
    deadline = dlock__now_ms() + timeout_ms;
    if (c == NULL || PQstatus(c) != CONNECTION_OK) {
        return dlock__seterr(DLOCK_EUNAVAIL, "postgres %s: not connected (%s)",
                             what, url);
    }
    sec = PQinstanceData(c, secrets_event);
    if (op == OP_PREPARE)
        sent = PQsendPrepare(c, stmt, sql, 0, NULL);
    else if (op == OP_PREPARED)
        sent = PQsendQueryPrepared(c, stmt, n, v, NULL, NULL, 0);
    else if (n > 0 || v != NULL)
        sent = PQsendQueryParams(c, sql, n, NULL, v, NULL, NULL, 0);
    else
        sent = PQsendQuery(c, sql);
    if (!sent)
        goto broken;
    while ((r = PQflush(c)) != 0) {
        if (r < 0)
            goto broken;
        r = wait_io(c, POLLIN | POLLOUT, deadline, &cancel_fd);
        if (r == 0)
            goto timeout;
        if (r < 0 || !PQconsumeInput(c))
            goto broken;
    }
    for (;;) {
        PGresult *res;

        while (PQisBusy(c)) {
            r = wait_io(c, POLLIN, deadline, &cancel_fd);
            if (r == 0)
                goto timeout;
            if (r < 0 || !PQconsumeInput(c))
                goto broken;
        }
        res = PQgetResult(c);
        if (res == NULL)
            break;
        /* Keep the first error, else the last result. */
        if (first != NULL && PQresultStatus(first) == PGRES_FATAL_ERROR) {
            PQclear(res);
        } else {
            PQclear(first);
            first = res;
        }
    }
    if (first == NULL)
        goto broken;
    r = PQresultStatus(first);
    if (r == PGRES_TUPLES_OK || r == PGRES_COMMAND_OK) {
        *out = first;
        return DLOCK_OK;
    }
    {
        const char *st = PQresultErrorField(first, PG_DIAG_SQLSTATE);
        const char *pm = PQresultErrorField(first, PG_DIAG_MESSAGE_PRIMARY);
        int gone = PQstatus(c) != CONNECTION_OK ||
                   (st != NULL &&
                    (strncmp(st, "08", 2) == 0 || strncmp(st, "57P", 3) == 0));

        if (state != NULL && st != NULL)
            dlock__strlcpy(state, st, 6);
        driver_text(msg, sizeof(msg),
                    pm != NULL ? pm : PQresultErrorMessage(first), sec);
        PQclear(first);
        return dlock__seterr(gone ? DLOCK_EUNAVAIL : DLOCK_ESTORE,
                             "postgres %s: %s%s (%s)", what, msg,
                             gone ? " (connection lost)" : "", url);
    }
timeout:
    PQclear(first);
    return dlock__seterr(DLOCK_EUNAVAIL,
                         "postgres %s: no answer within %lld ms (%s)", what,
                         (long long)timeout_ms, url);
broken:
    PQclear(first);
    driver_text(msg, sizeof(msg), PQerrorMessage(c), sec);
    return dlock__seterr(DLOCK_EUNAVAIL, "postgres %s: %s (%s)", what,
                         msg[0] ? msg : "connection lost", url);
}

int dlock__pg_run(PGconn *c, const char *url, const char *what, const char *sql,
                  int n, const char *const *v, int64_t timeout_ms,
                  PGresult **out, char state[6])
{
    return run_op(c, url, what, OP_QUERY, NULL, sql, n, v, timeout_ms, out,
                  state);
}

/* Which of the statements below a connection has prepared: a bit mask
 * kept as libpq instance data of the connection, so it dies with it. */
static int conn_event(PGEventId id, void *info, void *pass)
{
    (void)id;
    (void)info;
    (void)pass;
    return 1;
}

/* Run statement `id` (a Q_* of pg.h) as a prepared statement, preparing it
 * on this connection first if needed: the hot path skips the parser and
 * the planner. */
int dlock__pg_runp(PGconn *c, const char *url, const char *what, int id,
                   const char *sql, int n, const char *const *v,
                   int64_t timeout_ms, PGresult **out, char state[6])
{
    uintptr_t mask = (uintptr_t)PQinstanceData(c, conn_event);
    char stmt[sizeof("dlock_-2147483648")]; /* any int id fits */
    int rc;

    snprintf(stmt, sizeof(stmt), "dlock_%d", id);
    if (!(mask & ((uintptr_t)1 << id))) {
        rc = run_op(c, url, what, OP_PREPARE, stmt, sql, 0, NULL, timeout_ms,
                    out, state);
        if (rc != DLOCK_OK)
            return rc;
        PQclear(*out);
        mask |= (uintptr_t)1 << id;
        PQsetInstanceData(c, conn_event, (void *)mask);
    }
    return run_op(c, url, what, OP_PREPARED, stmt, NULL, n, v, timeout_ms, out,
                  state);
}

/* dlock__pg_runp() for id >= 0, else a plain dlock__pg_run(). */
int dlock__pg_runq(PGconn *c, const char *url, const char *what, int id,
                   const char *sql, int n, const char *const *v,
                   int64_t timeout_ms, PGresult **out, char state[6])
{
    if (id >= 0)
        return dlock__pg_runp(c, url, what, id, sql, n, v, timeout_ms, out,
                              state);
    return dlock__pg_run(c, url, what, sql, n, v, timeout_ms, out, state);
}

/* --- what libpq is given ------------------------------------------- */

/* Append keyword k (copied) with value v[0..n) (copied, or decoded if
 * dec) to ps's arrays.  An empty value is left out (libpq skips it). */
static int kv_add(struct pg_store *ps, size_t *n, const char *k, const char *v,
                  size_t vlen)
{
    char **kw, **val;

    if (vlen == 0)
        return DLOCK_OK;
    kw = realloc(ps->conn_kw, (*n + 2) * sizeof(*kw));
    if (kw == NULL)
        return dlock__enomem();
    ps->conn_kw = kw;
    val = realloc(ps->conn_val, (*n + 2) * sizeof(*val));
    if (val == NULL)
        return dlock__enomem();
    ps->conn_val = val;
    kw[*n] = dlock__strdup(k);
    val[*n] = dlock__strndup(v, vlen);
    kw[*n + 1] = val[*n + 1] = NULL;
    if (kw[*n] == NULL || val[*n] == NULL) {
        free(kw[*n]);
        free(val[*n]);
        kw[*n] = val[*n] = NULL;
        return dlock__enomem();
    }
    (*n)++;
    return DLOCK_OK;
}

static int kv_adds(struct pg_store *ps, size_t *n, const char *k, const char *v)
{
    return v != NULL ? kv_add(ps, n, k, v, strlen(v)) : DLOCK_OK;
}

static int hexv(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* Append s[0..n) percent-decoded to the string b (room: n + 1). */
static void cat_decoded(char *b, const char *s, size_t n)
{
    size_t o = strlen(b);

    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexv(s[i + 1]) >= 0 &&
            hexv(s[i + 2]) >= 0) {
            b[o++] = (char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
            i += 2;
        } else {
            b[o++] = s[i];
        }
    }
    b[o] = '\0';
}

/* A libpq host list "h1:p1,[v6]:p2,h3" (as in the URL) as host= and
 * port= lists. */
static int host_list(struct pg_store *ps, size_t *n, const char *list)
{
    size_t len = strlen(list);
    char *hosts = calloc(1, len + 1), *ports = calloc(1, len + 1);
    const char *p = list;
    int any_port = 0, rc;

    if (hosts == NULL || ports == NULL) {
        free(hosts);
        free(ports);
        return dlock__enomem();
    }
    for (;;) {
        size_t item = strcspn(p, ","), hl = item;
        const char *h = p, *port = NULL;

        if (item > 0 && p[0] == '[') {
            const char *close = memchr(p, ']', item);

            if (close != NULL) {
                h = p + 1;
                hl = (size_t)(close - h);
                if (close + 1 < p + item && close[1] == ':')
                    port = close + 2;
            }
        } else {
            const char *c = memchr(p, ':', item);

            if (c != NULL) {
                hl = (size_t)(c - p);
                port = c + 1;
            }
        }
        cat_decoded(hosts, h, hl);
        if (port != NULL) {
            strncat(ports, port, (size_t)(p + item - port));
            any_port = 1;
        }
        p += item;
        if (*p != ',')
            break;
        strcat(hosts, ",");
        strcat(ports, ",");
        p++;
    }
    rc = kv_adds(ps, n, "host", hosts);
    if (rc == DLOCK_OK && any_port)
        rc = kv_adds(ps, n, "port", ports);
    free(hosts);
    free(ports);
    return rc;
}

/* Does the URL's host part give a port (host:port, [v6]:port, or one in
 * a host list)? */
static int url_has_port(const struct dlock_url *u)
{
    int in_v6 = 0;

    if (u->port > 0)
        return 1;
    if (u->host == NULL || strchr(u->host, ',') == NULL)
        return 0;
    for (const char *c = u->host; *c != '\0'; c++) {
        if (*c == '[')
            in_v6 = 1;
        else if (*c == ']')
            in_v6 = 0;
        else if (*c == ':' && !in_v6)
            return 1;
    }
    return 0;
}

/* Is option key one of the parts the URL itself already gives?  libpq
 * takes the last of two values (an empty one: neither), so
 * "postgres://u@127.0.0.1/d?h%6Fst=10.0.0.9" would connect to a host
 * other than the one the URL shows: one part given twice means nothing
 * for sure and is refused, like an option given twice. */
static const char *given_twice(const struct dlock_url *u, const char *key)
{
    if (strcmp(key, "host") == 0 && u->host != NULL)
        return "host";
    if (strcmp(key, "port") == 0 && url_has_port(u))
        return "port";
    if (strcmp(key, "user") == 0 && u->user != NULL && u->user[0] != '\0')
        return "user name";
    if (strcmp(key, "password") == 0 && u->password != NULL)
        return "password";
    if (strcmp(key, "dbname") == 0 && u->path != NULL && u->path[0] == '/' &&
        u->path[1] != '\0')
        return "path (database name)";
    return NULL;
}

/* Is key one of this libpq's connection keywords?  Checked here, not by
 * libpq, so an unknown key is refused in dlock's words: libpq quotes it,
 * and after ?password= it may be the tail of a password holding an
 * unencoded '&'.  If libpq cannot list them, it judges alone. */
static int libpq_keyword(const char *key)
{
    PQconninfoOption *opts = PQconndefaults();
    int found = opts == NULL;

    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++)
        if (strcmp(o->keyword, key) == 0)
            found = 1;
    PQconninfoFree(opts);
    return found;
}

/* An encrypted client key must not prompt.  libpq hands OpenSSL its
 * own pass phrase callback only when sslpassword is not empty (an empty
 * value in the keyword arrays is skipped, as by kv_add); without it
 * OpenSSL's default callback asks "Enter PEM pass phrase:" on the
 * terminal and waits.  A process-wide PQsetSSLKeyPassHook_OpenSSL()
 * would change the host program's own libpq connections, so instead,
 * when the URL gives no ?sslpassword=, libpq gets one no one can have
 * typed (control bytes): an encrypted key then fails to load, and
 * dlock__pg_connect() says why.  An unencrypted key never asks for it.
 * libpq < 13 has no sslpassword (and no hook): left as it is. */
static int no_key_prompt(struct pg_store *ps, size_t *n,
                         const struct dlock_url *u)
{
    static const char nobody[] = "\001dlock: no ?sslpassword= given\001";
    const char *given = dlock__url_param(u, "sslpassword");

    /* An empty ?sslpassword= is none (kv_add leaves it out). */
    if ((given != NULL && given[0] != '\0') || !libpq_keyword("sslpassword"))
        return DLOCK_OK;
    ps->key_guard = 1;
    return kv_adds(ps, n, "sslpassword", nobody);
}

int dlock__pg_conn_params(struct pg_store *ps, const struct dlock_url *u)
{
    /* dlock's defaults, under whatever the URL says. */
    static const char *const dflt[][2] = {
        {"connect_timeout", "5"},  {"keepalives", "1"},
        {"keepalives_idle", "10"}, {"keepalives_interval", "5"},
        {"keepalives_count", "3"}, {"application_name", "dlock"},
    };
    /* dlock's own options, not libpq's. */
    static const char *const ours[] = {"keys", "mode", "timeout", "max_keys",
                                       NULL};
    size_t n = 0;
    int rc = DLOCK_OK;

    ps->secrets = dlock__url_secrets(u->raw);
    if (ps->secrets == NULL)
        return dlock__enomem();
    for (size_t i = 0; rc == DLOCK_OK && i < sizeof(dflt) / sizeof(dflt[0]);
         i++)
        rc = kv_adds(ps, &n, dflt[i][0], dflt[i][1]);
    if (rc == DLOCK_OK && u->host != NULL && strchr(u->host, ',') != NULL) {
        rc = host_list(ps, &n, u->host);
    } else if (rc == DLOCK_OK) {
        char port[8];

        rc = kv_adds(ps, &n, "host", u->host);
        snprintf(port, sizeof(port), "%d", u->port);
        if (rc == DLOCK_OK && u->port > 0)
            rc = kv_adds(ps, &n, "port", port);
    }
    if (rc == DLOCK_OK)
        rc = kv_adds(ps, &n, "user", u->user);
    if (rc == DLOCK_OK)
        rc = kv_adds(ps, &n, "password", u->password);
    if (rc == DLOCK_OK && u->path != NULL && u->path[0] == '/')
        rc = kv_adds(ps, &n, "dbname", u->path + 1);
    for (size_t i = 0; rc == DLOCK_OK && i < u->nparams; i++) {
        const char *k = u->params[i].key, *v = u->params[i].value;
        size_t j = 0;

        while (ours[j] != NULL && strcmp(ours[j], k) != 0)
            j++;
        if (ours[j] != NULL)
            continue;
        if (strcmp(k, "ssl") != 0 && !libpq_keyword(k)) {
            rc = dlock__url_unknown_option(u, i);
            break;
        }
        if (given_twice(u, k) != NULL) {
            rc = dlock__seterr(DLOCK_EINVAL,
                               "option \"%s\" in %s gives the URL's %s a "
                               "second time; give it once",
                               k, u->redacted, given_twice(u, k));
            break;
        }
        /* As libpq reads ?ssl=true in a URI (JDBC's spelling). */
        if (strcmp(k, "ssl") == 0 && strcmp(v, "true") == 0)
            k = "sslmode", v = "require";
        rc = kv_adds(ps, &n, k, v);
    }
    if (rc == DLOCK_OK)
        rc = no_key_prompt(ps, &n, u);
    if (rc == DLOCK_OK)
        rc = kv_adds(ps, &n, "client_encoding", "UTF8");
    if (rc == DLOCK_OK && ps->conn_kw == NULL)
        rc = dlock__enomem(); /* unreachable: the defaults are there */
    return rc;
}

void dlock__pg_conn_params_free(struct pg_store *ps)
{
    for (size_t i = 0; ps->conn_kw != NULL && ps->conn_kw[i] != NULL; i++) {
        memset(ps->conn_val[i], 0, strlen(ps->conn_val[i]));
        free(ps->conn_kw[i]);
        free(ps->conn_val[i]);
    }
    free(ps->conn_kw);
    free(ps->conn_val);
    dlock__secrets_free(ps->secrets);
    ps->conn_kw = ps->conn_val = ps->secrets = NULL;
}

/* The class of a failed connection (include/dlock.h): libpq keeps the
 * server's SQLSTATE of a refused connection to itself, and its text may
 * be translated.  What it does say: the server asked for a password (it
 * was reached, and then refused the password, the role or the database)
 * or wants one the URL does not give.  Anything else (refused, timed out,
 * reset, a server starting up or out of connection slots, which answer
 * before the password) may pass: DLOCK_EUNAVAIL.
 * Some "not now" answers come after the password was taken: the role's
 * CONNECTION LIMIT, the slots kept for superusers (SQLSTATE 53300), a
 * server shutting down or in recovery (57P03), a fast shutdown or a
 * crash of another backend meeting the login (57P01, 57P02); and a
 * connection that the server closed after the password without a word
 * (a restart with the login in flight: libpq's own "server closed the
 * connection unexpectedly").  Those are told by the (English) text; a
 * translated one leaves them DLOCK_ESTORE, the side that never retries a
 * refused password forever. */
static int connect_error_code(PGconn *c)
{
    static const char *const not_now[] = {
        "too many connections for role",
        "remaining connection slots are reserved",
        "sorry, too many clients already",
        "the database system is starting up",
        "the database system is shutting down",
        "the database system is in recovery mode",
        "the database system is not yet accepting connections",
        "the database system is not accepting connections",
        /* The server ended the backend that served our login, after the
         * password: a fast shutdown or the postmaster gone (57P01: "due
         * to administrator command", "due to unexpected postmaster
         * exit"), a crash of another backend (57P02: "because of crash
         * of another server process"), a recovery conflict.  A restart,
         * not a refusal: torture runs' nemeses caught two of them. */
        "terminating connection due to ",
        "terminating connection because of ",
        /* The connection went, the server said nothing: a restart or a
         * shutdown with our login in flight, not a refusal. */
        "server closed the connection unexpectedly",
        "could not receive data from server",
        "could not send data to server",
        "Connection reset by peer",
    };
    const char *msg = PQerrorMessage(c);

    if (!PQconnectionNeedsPassword(c) && !PQconnectionUsedPassword(c))
        return DLOCK_EUNAVAIL;
    for (size_t i = 0; msg != NULL && i < sizeof(not_now) / sizeof(*not_now);
         i++)
        if (strstr(msg, not_now[i]) != NULL)
            return DLOCK_EUNAVAIL;
    return DLOCK_ESTORE;
}

/* libpq could not load the client key with no_key_prompt()'s pass
 * phrase: it is encrypted (libpq's English words; a translated libpq
 * gives its own message instead). */
static int encrypted_key(const struct pg_store *ps)
{
    for (size_t i = 0; ps->conn_kw[i] != NULL; i++)
        if (strcmp(ps->conn_kw[i], "sslkey") == 0)
            return dlock__seterr(DLOCK_EINVAL,
                                 "%s: the client key %s is encrypted; give "
                                 "?sslpassword= or an unencrypted key",
                                 ps->base.url, ps->conn_val[i]);
    return dlock__seterr(DLOCK_EINVAL,
                         "%s: the client key (PGSSLKEY or "
                         "~/.postgresql/postgresql.key) is encrypted; give "
                         "?sslpassword= or an unencrypted key",
                         ps->base.url);
}

/* libpq's connect_timeout for this store in ms (the last one given wins,
 * as in libpq; under 2 s is 2 s, as libpq takes it); INT64_MAX: none. */
static int64_t connect_timeout_ms(const struct pg_store *ps)
{
    const char *v = NULL;
    long secs;

    for (size_t i = 0; ps->conn_kw[i] != NULL; i++)
        if (strcmp(ps->conn_kw[i], "connect_timeout") == 0)
            v = ps->conn_val[i];
    if (v == NULL)
        return INT64_MAX;
    secs = strtol(v, NULL, 10);
    if (secs <= 0)
        return INT64_MAX;
    return secs < 2 ? 2000 : secs > INT_MAX ? INT64_MAX : secs * 1000LL;
}

/* A connect that ends at dlock__io_deadline, which comes before libpq's
 * own connect_timeout (a held lock's call: a LOST run's end, a renewal,
 * must not outlast the lease by the whole connect timeout on a server cut
 * off).  NULL: out of memory; *late set when the deadline passed. */
static PGconn *connect_until(struct pg_store *ps, int *late)
{
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    PGconn *c = PQconnectStartParams((const char *const *)ps->conn_kw,
                                     (const char *const *)ps->conn_val, 0);

    *late = 0;
    if (c == NULL || PQstatus(c) == CONNECTION_BAD)
        return c;
    while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        int64_t left = dlock__io_deadline - dlock__now_ms();
        struct pollfd p = {PQsocket(c),
                           st == PGRES_POLLING_READING ? POLLIN : POLLOUT, 0};
        int r;

        if (left <= 0) {
            *late = 1;
            break;
        }
        r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (r < 0 && errno != EINTR)
            break;
        if (r > 0)
            st = PQconnectPoll(c);
    }
    return c;
}

/* Connect with dlock's defaults underneath whatever the URL says.  libpq
 * gets keyword/value pairs with expand_dbname = 0: it never parses a
 * URL of its own, so it cannot read one differently from dlock. */
int dlock__pg_connect(struct pg_store *ps, PGconn **out)
{
    const char *const *sec = (const char *const *)ps->secrets;
    char msg[512];
    PGconn *c;
    int late = 0;

    *out = NULL;
    if (dlock__io_deadline != 0 &&
        dlock__io_deadline - dlock__now_ms() < connect_timeout_ms(ps))
        c = connect_until(ps, &late);
    else
        c = PQconnectdbParams((const char *const *)ps->conn_kw,
                              (const char *const *)ps->conn_val, 0);
    if (c == NULL)
        return dlock__enomem();
    if (late) {
        PQfinish(c);
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "cannot connect to %s: no answer within the "
                             "lock's lease",
                             ps->base.url);
    }
    if (PQstatus(c) != CONNECTION_OK) {
        int rc = connect_error_code(c);

        if (ps->key_guard &&
            strstr(PQerrorMessage(c), "could not load private key") != NULL) {
            PQfinish(c);
            return encrypted_key(ps);
        }
        driver_text(msg, sizeof(msg), PQerrorMessage(c), sec);
        PQfinish(c);
        return dlock__seterr(rc, "cannot connect to %s: %s", ps->base.url, msg);
    }
    if (PQserverVersion(c) < 110000) {
        PQfinish(c);
        return dlock__seterr(
            DLOCK_ESTORE, "%s: PostgreSQL 11 or later is needed", ps->base.url);
    }
    PQsetNoticeProcessor(c, ignore_notice, NULL);
    if (!PQregisterEventProc(c, conn_event, "dlock", NULL) ||
        !PQregisterEventProc(c, secrets_event, "dlock-secrets", NULL) ||
        !PQsetInstanceData(c, secrets_event, ps->secrets)) {
        PQfinish(c);
        return dlock__enomem();
    }
    if (PQsetnonblocking(c, 1) != 0) {
        PQfinish(c);
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "cannot use %s: non-blocking "
                             "mode refused",
                             ps->base.url);
    }
    /* Session mode's statements are prepared once per connection and run
     * thousands of times: planning them again at every run (the plan
     * cache's custom plans) cost more than running them.  And no bitmap
     * scans: every cycle leaves a dead holder row (and its index entry)
     * until autovacuum comes, up to a minute later.  A plain index scan
     * marks the dead entries it steps on (kill_prior_tuple), so the next
     * scan skips them; a bitmap scan never does, and visits every dead
     * row of the name again: a busy name's cycle grew from 80 us to 1 ms
     * within 9,000 cycles (pinned to one CPU, autovacuum off; 80 us flat
     * with bitmap scans off).  Not in lease mode: behind a transaction
     * pooler a SET would leak to other clients' sessions. */
    if (!ps->lease_mode && PQserverVersion(c) >= 120000) {
        PGresult *res;
        int rc =
            dlock__pg_run(c, ps->base.url, "connect", ps->text.session_setup, 0,
                          NULL, ps->op_timeout_ms, &res, NULL);

        if (rc != DLOCK_OK) {
            PQfinish(c);
            return rc;
        }
        PQclear(res);
    }
    *out = c;
    return DLOCK_OK;
}

/* s as an E'' literal at o (NULL: NULL); the length it takes. */
static size_t put_literal(char *o, const char *s)
{
    size_t n = 0;

    if (s == NULL) {
        if (o != NULL)
            memcpy(o, "NULL", 4);
        return 4;
    }
    if (o != NULL)
        o[n] = 'E', o[n + 1] = '\'';
    n += 2;
    for (; *s != '\0'; s++) {
        if (*s == '\'' || *s == '\\') {
            if (o != NULL)
                o[n] = *s;
            n++;
        }
        if (o != NULL)
            o[n] = *s;
        n++;
    }
    if (o != NULL)
        o[n] = '\'';
    return n + 1;
}

/* sql with each $k (k <= n) replaced by v[k-1]'s literal, into out
 * unless it is NULL; its length. */
static size_t inline_into(char *out, const char *sql, int n,
                          const char *const *v)
{
    size_t o = 0;

    for (const char *p = sql; *p != '\0';) {
        const char *q = p + 1;
        int k = 0;

        if (*p == '$')
            while (*q >= '0' && *q <= '9' && k <= n)
                k = k * 10 + (*q++ - '0');
        if (k >= 1 && k <= n) {
            o += put_literal(out != NULL ? out + o : NULL, v[k - 1]);
            p = q;
        } else {
            if (out != NULL)
                out[o] = *p;
            o++;
            p++;
        }
    }
    return o;
}

/* E'' strings mean the same whatever standard_conforming_strings says;
 * the connection's client_encoding is UTF8 (dlock__pg_conn_params()), in
 * which no byte of a multi-byte character is a quote or a backslash.  The
 * texts sent this way (sql/lease_acquire.sql, lease_sem_acquire.sql,
 * run_begin.sql) hold no '$' but their parameters'. */
char *dlock__pg_inline(const char *sql, int n, const char *const *v)
{
    size_t len = inline_into(NULL, sql, n, v);
    char *out = malloc(len + 1);

    if (out == NULL) {
        (void)dlock__enomem();
        return NULL;
    }
    (void)inline_into(out, sql, n, v);
    out[len] = '\0';
    return out;
}

/* Is c fit to be used again: connected, no transaction open? */
int dlock__pg_conn_clean(PGconn *c)
{
    return c != NULL && PQstatus(c) == CONNECTION_OK &&
           PQtransactionStatus(c) == PQTRANS_IDLE;
}

int64_t dlock__pg_col_i64(const PGresult *r, int row, int col, int64_t dflt)
{
    if (PQntuples(r) <= row || PQgetisnull(r, row, col))
        return dflt;
    return (int64_t)strtoll(PQgetvalue(r, row, col), NULL, 10);
}

int dlock__pg_col_bool(const PGresult *r, int row, int col)
{
    return PQntuples(r) > row && !PQgetisnull(r, row, col) &&
           PQgetvalue(r, row, col)[0] == 't';
}

/* --- the pool's callbacks -------------------------------------------- */

static int pool_open(void *ctx, void **out)
{
    PGconn *c = NULL;
    int rc = dlock__pg_connect(ctx, &c);

    *out = c;
    return rc;
}

static void pool_close(void *ctx, void *c)
{
    (void)ctx;
    PQfinish(c);
}

/* A local check only: a connection that died while idle still looks
 * fine here, and is found out by dlock__pool_run()'s first statement. */
static int pool_healthy(void *ctx, void *c, int64_t idle_ms)
{
    (void)ctx;
    (void)idle_ms;
    return dlock__pg_conn_clean(c);
}

const struct dlock__pool_ops dlock__pg_pool_ops = {
    .open = pool_open,
    .close = pool_close,
    .healthy = pool_healthy,
};
