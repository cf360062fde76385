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

/* Wait until the socket is ready for `events` or deadline: 1 ready,
 * 0 timed out, -1 error. */
static int wait_io(PGconn *c, short events, int64_t deadline)
{
    struct pollfd p;

    p.fd = PQsocket(c);
    p.events = events;
    if (p.fd < 0)
        return -1;
    for (;;) {
        int64_t left = deadline - dlock__now_ms();
        int r;

        if (left <= 0)
            return 0;
        r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
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
    char msg[512];
    int sent, r;

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
        r = wait_io(c, POLLIN | POLLOUT, deadline);
        if (r == 0)
            goto timeout;
        if (r < 0 || !PQconsumeInput(c))
            goto broken;
    }
    for (;;) {
        PGresult *res;

        while (PQisBusy(c)) {
            r = wait_io(c, POLLIN, deadline);
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
        one_line(msg, sizeof(msg),
                 pm != NULL ? pm : PQresultErrorMessage(first));
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
    one_line(msg, sizeof(msg), PQerrorMessage(c));
    return dlock__seterr(DLOCK_EUNAVAIL, "postgres %s: %s (%s)", what,
                         msg[0] ? msg : "connection lost", url);
}

int dlock__pg_run(PGconn *c, const char *url, const char *what, const char *sql,
               int n, const char *const *v, int64_t timeout_ms, PGresult **out,
               char state[6])
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
        return dlock__pg_runp(c, url, what, id, sql, n, v, timeout_ms, out, state);
    return dlock__pg_run(c, url, what, sql, n, v, timeout_ms, out, state);
}

/* Connect with dlock's defaults underneath whatever the URL says. */
int dlock__pg_connect(struct pg_store *ps, PGconn **out)
{
    static const char *const kw[] = {"connect_timeout",
                                     "keepalives",
                                     "keepalives_idle",
                                     "keepalives_interval",
                                     "keepalives_count",
                                     "application_name",
                                     "dbname",
                                     "client_encoding",
                                     NULL};
    const char *val[] = {"5",     "1",          "10",   "5", "3",
                         "dlock", ps->conninfo, "UTF8", NULL};
    char msg[512];
    PGconn *c;

    *out = NULL;
    c = PQconnectdbParams(kw, val, 1);
    if (c == NULL)
        return dlock__enomem();
    if (PQstatus(c) != CONNECTION_OK) {
        one_line(msg, sizeof(msg), PQerrorMessage(c));
        PQfinish(c);
        return dlock__seterr(DLOCK_EUNAVAIL, "cannot connect to %s: %s",
                             ps->base.url, msg);
    }
    if (PQserverVersion(c) < 110000) {
        PQfinish(c);
        return dlock__seterr(
            DLOCK_ESTORE, "%s: PostgreSQL 11 or later is needed", ps->base.url);
    }
    PQsetNoticeProcessor(c, ignore_notice, NULL);
    if (!PQregisterEventProc(c, conn_event, "dlock", NULL)) {
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
        int rc = dlock__pg_run(c, ps->base.url, "connect",
                               "SET plan_cache_mode = force_generic_plan; "
                               "SET enable_bitmapscan = off",
                               0, NULL, ps->op_timeout_ms, &res, NULL);

        if (rc != DLOCK_OK) {
            PQfinish(c);
            return rc;
        }
        PQclear(res);
    }
    *out = c;
    return DLOCK_OK;
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
