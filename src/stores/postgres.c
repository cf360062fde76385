/*
 * postgres.c - the PostgreSQL store: session advisory locks with a lock
 * table for fences and leases, or table-only leases.
 *
 * postgres://[user[:password]@]host[:port]/db[?keys=hashtext][&mode=lease]
 *                                          [&timeout=5s][&<libpq options>]
 *
 * Default (session) mode.  The lock itself is a session advisory lock on
 * the 64-bit key hashtextextended(name, 0) (?keys=hashtext: hashtext(name),
 * the key of mpyw/laravel-database-advisory-lock), computed by the server.
 * Each held lock pins one connection of a small pool: the lock lives as
 * long as that session, so a holder that dies frees it at once.  A row in
 * dlock_locks, written by the same statement that takes the advisory lock,
 * carries the owner token, fence, lease and holder details; the fence
 * counter lives in dlock_fences and is never deleted.  A holder whose
 * lease ran out but whose session still holds the key (a hung process) is
 * fenced off by pg_terminate_backend(), after pg_locks shows that this
 * backend holds that very key.
 *
 * Lease mode (?mode=lease).  Rows only, no session state, so it works
 * through PgBouncer's transaction pooling: an acquire locks the name's
 * fence row, drops expired rows, and inserts its own row if no live row
 * conflicts.  Waiting polls with jittered backoff.
 *
 * Leases are measured on the server's clock.  Every statement is sent
 * without blocking and waited for with poll(), so a server that stops
 * answering costs at most the operation timeout (?timeout=, default 5 s);
 * the connection is then dropped.
 *
 * Threads: one control connection (mutex) for status, list, force-release
 * and everything in lease mode; in session mode, each lock's own pinned
 * connection for its acquire, extend, assert and release, so locks do not
 * queue behind each other.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-events.h>
#include <libpq-fe.h>

#include "dlock_pg.h"
#include "store.h"

#define DEFAULT_OP_TIMEOUT_MS 5000
#define POOL_MAX_IDLE 8
/* A native wait is cut into chunks of at most this much when the holder's
 * lease is unknown, so a holder that hangs later is still noticed. */
#define WAIT_CHUNK_MS 5000
/* After terminating a hung holder, how long its key may take to go. */
#define TERMINATE_GRACE_MS 1000

/* --- SQL ------------------------------------------------------------- */

/* clang-format off */
#define DDL                                                                  \
    "CREATE TABLE IF NOT EXISTS dlock_locks (\n"                             \
    "    name        text        NOT NULL,\n"                                \
    "    owner       text        NOT NULL, -- random 128-bit token, hex\n"   \
    "    shared      boolean     NOT NULL,\n"                                \
    "    fence       bigint      NOT NULL,\n"                                \
    "    backend_pid integer     NOT NULL, -- holding session; 0: lease\n"   \
    "    host        text        NOT NULL,\n"                                \
    "    pid         bigint      NOT NULL,\n"                                \
    "    expires_at  timestamptz NOT NULL, -- server clock\n"                \
    "    acquired_at timestamptz NOT NULL,\n"                                \
    "    PRIMARY KEY (name, owner)\n"                                        \
    ");\n"                                                                   \
    "CREATE TABLE IF NOT EXISTS dlock_fences (\n"                            \
    "    name  text   PRIMARY KEY,\n"                                        \
    "    fence bigint NOT NULL -- highest fence handed out\n"                \
    ");\n"

#define KEY_X "hashtextextended($1::text, 0)"
#define KEY_H "hashtext($1::text)::bigint"

/* pg_locks shows a bigint advisory key as classid (high half), objid (low
 * half) and objsubid 1, in the current database. */
#define KEYMATCH(K)                                                          \
    "p.locktype = 'advisory' AND p.granted AND p.objsubid = 1 AND "          \
    "p.database = (SELECT oid FROM pg_database WHERE datname = "             \
    "current_database()) AND ((p.classid::bigint << 32) | "                  \
    "p.objid::bigint) = " K
#define HOLDS(PID, K)                                                        \
    "EXISTS (SELECT 1 FROM pg_locks p WHERE p.pid = " PID " AND "            \
    KEYMATCH(K) ")"

#define LEFT_MS(E)                                                           \
    "ceil(extract(epoch FROM " E " - clock_timestamp()) * 1000)::bigint"
#define TTL_EXPR "clock_timestamp() + $4::bigint * interval '1 millisecond'"

/* $1 name, $2 owner, $3 shared, $4 ttl ms, $5 host, $6 pid,
 * [$7 lock_timeout ms].  The advisory lock and the row in one statement;
 * rows of the name whose holders cannot hold the key any more are tidied
 * away (SKIP LOCKED: a row being released is going anyway).
 *
 * A try runs on a session shared by many locks of this process, and a
 * session's advisory locks stack: it first makes sure this session does
 * not hold the name already in a conflicting way.  A wait runs on a
 * session of its own. */
#define ACQ_TRY(FN, K)                                                       \
    "WITH l AS (SELECT CASE WHEN EXISTS (SELECT 1 FROM dlock_locks t "       \
    "WHERE t.name = $1 AND t.backend_pid = pg_backend_pid() AND (NOT "       \
    "$3::boolean OR NOT t.shared) AND " HOLDS("t.backend_pid", K) ") THEN "  \
    "false ELSE " FN "(" K ") END AS got)"
#define ACQ_WAIT(FN, K)                                                      \
    "WITH l AS (SELECT true AS got, " FN "(" K ") FROM (SELECT "             \
    "set_config('lock_timeout', $7::text, true) AS c OFFSET 0) s)"
#define ACQ_REST(K)                                                          \
    ", d AS (DELETE FROM dlock_locks WHERE ctid IN (SELECT t.ctid FROM "     \
    "dlock_locks t WHERE (SELECT got FROM l) AND t.name = $1 AND (NOT "      \
    "$3::boolean OR NOT t.shared OR t.expires_at <= clock_timestamp() OR "   \
    "NOT " HOLDS("t.backend_pid", K) ") FOR UPDATE OF t SKIP LOCKED))"       \
    ", f AS (INSERT INTO dlock_fences AS x (name, fence) SELECT $1, 1 "      \
    "FROM l WHERE l.got ON CONFLICT (name) DO UPDATE SET fence = "           \
    "x.fence + 1 RETURNING x.fence)"                                         \
    ", i AS (INSERT INTO dlock_locks (name, owner, shared, fence, "          \
    "backend_pid, host, pid, expires_at, acquired_at) SELECT $1, $2, "       \
    "$3::boolean, f.fence, pg_backend_pid(), $5, $6::bigint, " TTL_EXPR     \
    ", clock_timestamp() FROM f RETURNING fence)"                            \
    " SELECT l.got, (SELECT fence FROM i) FROM l"

/* $1 name, $2 shared: the dlock holders in our way, by their rows. */
#define HOLDERS(K)                                                           \
    "SELECT count(*), max(" LEFT_MS("t.expires_at") ") FILTER (WHERE "       \
    "t.expires_at > clock_timestamp()), count(*) FILTER (WHERE "             \
    "t.expires_at <= clock_timestamp()), max(t.host), max(t.pid), "          \
    "max(t.backend_pid) FROM dlock_locks t WHERE t.name = $1 AND (NOT "      \
    "$2::boolean OR NOT t.shared) AND " HOLDS("t.backend_pid", K)
/* $1 name, $2 shared: fence off holders past their lease. */
#define TERMINATE(K)                                                         \
    "SELECT pg_terminate_backend(t.backend_pid) FROM dlock_locks t WHERE "   \
    "t.name = $1 AND (NOT $2::boolean OR NOT t.shared) AND t.expires_at "    \
    "<= clock_timestamp() AND t.backend_pid <> pg_backend_pid() AND "        \
    HOLDS("t.backend_pid", K)
/* $1 name, $2 owner */
#define RELEASE_S(FN, K)                                                     \
    "WITH d AS (DELETE FROM dlock_locks WHERE name = $1 AND owner = $2 "     \
    "RETURNING expires_at > clock_timestamp() AS live) SELECT (SELECT live " \
    "FROM d), " FN "(" K ")"
/* $1 name, $2 lease mode: live holders. */
#define STATUS(K)                                                            \
    "SELECT t.shared, t.host, t.pid, greatest(1, " LEFT_MS("t.expires_at")   \
    "), floor(extract(epoch FROM t.acquired_at) * 1000)::bigint FROM "       \
    "dlock_locks t WHERE t.name = $1 AND t.expires_at > clock_timestamp() "  \
    "AND ($2::boolean OR " HOLDS("t.backend_pid", K) ")"
/* $1 name, $2 lease mode: the fence, and sessions holding the key. */
#define STATUS2(K)                                                           \
    "SELECT (SELECT fence FROM dlock_fences WHERE name = $1), CASE WHEN "    \
    "$2::boolean THEN 0 ELSE (SELECT count(*) FROM pg_locks p WHERE "        \
    KEYMATCH(K) ") END, CASE WHEN $2::boolean THEN false ELSE coalesce("     \
    "(SELECT bool_and(p.mode = 'ShareLock') FROM pg_locks p WHERE "          \
    KEYMATCH(K) "), false) END"
/* $1 name, $2 int[] of backend pids */
#define FORCE_KILL(K)                                                        \
    "SELECT pg_terminate_backend(p.pid) FROM pg_locks p WHERE p.pid = "      \
    "ANY($2::int[]) AND p.pid <> pg_backend_pid() AND " KEYMATCH(K)

enum {
    Q_TRY_X,
    Q_TRY_S,
    Q_WAIT_X,
    Q_WAIT_S,
    Q_HOLDERS,
    Q_TERMINATE,
    Q_RELEASE_X,
    Q_RELEASE_S,
    Q_STATUS,
    Q_STATUS2,
    Q_FORCE_KILL,
    Q_KEYED,
    /* Key-independent, prepared too (ids for runp()). */
    Q_EXTEND = Q_KEYED,
    Q_TTL,
    Q_RELEASE_L,
    Q_UNLOCK_ALL
};

#define KEYED_SQL(K)                                                         \
    {                                                                        \
        [Q_TRY_X] = ACQ_TRY("pg_try_advisory_lock", K) ACQ_REST(K),          \
        [Q_TRY_S] = ACQ_TRY("pg_try_advisory_lock_shared", K) ACQ_REST(K),   \
        [Q_WAIT_X] = ACQ_WAIT("pg_advisory_lock", K) ACQ_REST(K),            \
        [Q_WAIT_S] = ACQ_WAIT("pg_advisory_lock_shared", K) ACQ_REST(K),     \
        [Q_HOLDERS] = HOLDERS(K),                                            \
        [Q_TERMINATE] = TERMINATE(K),                                        \
        [Q_RELEASE_X] = RELEASE_S("pg_advisory_unlock", K),                  \
        [Q_RELEASE_S] = RELEASE_S("pg_advisory_unlock_shared", K),           \
        [Q_STATUS] = STATUS(K),                                              \
        [Q_STATUS2] = STATUS2(K),                                            \
        [Q_FORCE_KILL] = FORCE_KILL(K),                                      \
    }

static const char *const sql_x[Q_KEYED] = KEYED_SQL(KEY_X);
static const char *const sql_h[Q_KEYED] = KEYED_SQL(KEY_H);

/* Key-independent statements.  $1 name, $2 owner, $3 ttl ms. */
static const char SQL_EXTEND[] =
    "UPDATE dlock_locks SET expires_at = clock_timestamp() + $3::bigint * "
    "interval '1 millisecond' WHERE name = $1 AND owner = $2 AND "
    "expires_at > clock_timestamp()";
static const char SQL_TTL[] =
    "SELECT greatest(1, " LEFT_MS("expires_at") ") FROM dlock_locks WHERE "
    "name = $1 AND owner = $2 AND expires_at > clock_timestamp()";
static const char SQL_RELEASE_L[] =
    "DELETE FROM dlock_locks WHERE name = $1 AND owner = $2 RETURNING "
    "expires_at > clock_timestamp()";
static const char SQL_UNLOCK_ALL[] = "SELECT pg_advisory_unlock_all()";
/* Lease mode, one round trip: two statements in one implicit
 * transaction.  The first locks the name's fence row, so acquirers of a
 * name queue there; the second (a new snapshot, READ COMMITTED) sees every
 * row committed before it and decides.  Literals, not parameters: a
 * multi-statement query cannot take them, and poolers in transaction mode
 * cannot follow prepared statements.  Arguments: name, name, name,
 * shared, name, name, owner, shared, host, pid, ttl ms. */
static const char SQL_LEASE_FMT[] =
    "INSERT INTO dlock_fences AS x (name, fence) VALUES (%s, 0) ON "
    "CONFLICT (name) DO UPDATE SET fence = x.fence; "
    "WITH del AS (DELETE FROM dlock_locks WHERE name = %s AND expires_at "
    "<= clock_timestamp()), c AS (SELECT count(*) AS n, max("
    LEFT_MS("expires_at") ") AS left_ms FROM dlock_locks WHERE name = %s "
    "AND expires_at > clock_timestamp() AND (NOT %s OR NOT shared)), "
    "f AS (UPDATE dlock_fences SET fence = fence + 1 WHERE name = %s AND "
    "(SELECT n FROM c) = 0 RETURNING fence), i AS (INSERT INTO "
    "dlock_locks (name, owner, shared, fence, backend_pid, host, pid, "
    "expires_at, acquired_at) SELECT %s, '%s', %s, f.fence, 0, %s, "
    "%s::bigint, clock_timestamp() + %s::bigint * interval '1 "
    "millisecond', clock_timestamp() FROM f RETURNING fence) "
    "SELECT (SELECT fence FROM i), (SELECT left_ms FROM c)";
static const char SQL_NAMES[] =
    "SELECT DISTINCT name FROM dlock_locks WHERE starts_with(name, $1) AND "
    "expires_at > clock_timestamp() ORDER BY name";
static const char SQL_FORCE[] =
    "DELETE FROM dlock_locks WHERE name = $1 RETURNING backend_pid, "
    "expires_at > clock_timestamp()";
static const char SQL_HAVE_TABLES[] =
    "SELECT to_regclass('dlock_locks') IS NOT NULL AND "
    "to_regclass('dlock_fences') IS NOT NULL";
/* Serialised by a transaction-scoped advisory lock: concurrent CREATE
 * TABLE IF NOT EXISTS can otherwise fail on the catalog's unique keys. */
static const char SQL_INIT[] =
    "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('dlock: create "
    "tables', 0)); " DDL "COMMIT;";

/* clang-format on */

struct pg_store {
    struct dlock_store base;
    char *conninfo; /* the URL for libpq, dlock's options removed */
    const char *const *sql;
    int lease_mode;
    int64_t op_timeout_ms;

    pthread_mutex_t ctl_mu; /* ctl: status, list, force, lease mode */
    PGconn *ctl;

    pthread_mutex_t pool_mu; /* idle connections for session locks */
    PGconn *idle[POOL_MAX_IDLE];
    int nidle;
    struct sess *mux;   /* the session try-locks share; under pool_mu */
    struct held *helds; /* locks held through this store; under pool_mu */
};

struct sess;
static void sess_free(struct pg_store *ps, struct sess *s);

/* --- plumbing -------------------------------------------------------- */

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
    int64_t deadline = dlock__now_ms() + timeout_ms;
    PGresult *first = NULL;
    char msg[512];
    int sent, r;

    *out = NULL;
    if (state != NULL)
        state[0] = '\0';
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

static int run(PGconn *c, const char *url, const char *what, const char *sql,
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

/* Run statement `id` (see sql_of()) as a prepared statement, preparing it
 * on this connection first if needed: the hot path skips the parser and
 * the planner. */
static int runp(PGconn *c, const char *url, const char *what, int id,
                const char *sql, int n, const char *const *v,
                int64_t timeout_ms, PGresult **out, char state[6])
{
    uintptr_t mask = (uintptr_t)PQinstanceData(c, conn_event);
    char stmt[16];
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

/* runp() for id >= 0, else a plain run(). */
static int runq(PGconn *c, const char *url, const char *what, int id,
                const char *sql, int n, const char *const *v,
                int64_t timeout_ms, PGresult **out, char state[6])
{
    if (id >= 0)
        return runp(c, url, what, id, sql, n, v, timeout_ms, out, state);
    return run(c, url, what, sql, n, v, timeout_ms, out, state);
}

/* Connect with dlock's defaults underneath whatever the URL says. */
static int pg_connect(struct pg_store *ps, PGconn **out)
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
    *out = c;
    return DLOCK_OK;
}

/* Is c fit to be used again: connected, no transaction open? */
static int conn_clean(PGconn *c)
{
    return c != NULL && PQstatus(c) == CONNECTION_OK &&
           PQtransactionStatus(c) == PQTRANS_IDLE;
}

/* A connection for a session lock: an idle one, else a new one.
 * *pooled says which (a pooled one may have died meanwhile). */
static int conn_get(struct pg_store *ps, PGconn **out, int *pooled)
{
    pthread_mutex_lock(&ps->pool_mu);
    if (ps->nidle > 0) {
        *out = ps->idle[--ps->nidle];
        pthread_mutex_unlock(&ps->pool_mu);
        *pooled = 1;
        return DLOCK_OK;
    }
    pthread_mutex_unlock(&ps->pool_mu);
    *pooled = 0;
    return pg_connect(ps, out);
}

/* Give back a connection that holds no advisory lock. */
static void conn_put(struct pg_store *ps, PGconn *c)
{
    if (!conn_clean(c)) {
        PQfinish(c);
        return;
    }
    pthread_mutex_lock(&ps->pool_mu);
    if (ps->nidle < POOL_MAX_IDLE) {
        ps->idle[ps->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&ps->pool_mu);
    PQfinish(c);
}

/* The control connection (caller holds ctl_mu), reconnecting if needed. */
static int ctl_get(struct pg_store *ps, PGconn **out)
{
    if (ps->ctl != NULL && !conn_clean(ps->ctl)) {
        PQfinish(ps->ctl);
        ps->ctl = NULL;
    }
    if (ps->ctl == NULL) {
        int rc = pg_connect(ps, &ps->ctl);

        if (rc != DLOCK_OK)
            return rc;
    }
    *out = ps->ctl;
    return DLOCK_OK;
}

/* Run a statement on the control connection (caller holds ctl_mu).  An
 * old connection found dead (the server restarted, or ended the idle
 * session) is replaced and the statement sent once more: the server never
 * saw it. */
static int ctl_exec(struct pg_store *ps, const char *what, int id,
                    const char *sql, int n, const char *const *v,
                    PGresult **res)
{
    int fresh = ps->ctl == NULL || !conn_clean(ps->ctl), rc;
    PGconn *c;

    /* Lease mode promises to work through PgBouncer's transaction
     * pooling, where a prepared statement may land on another server
     * connection: unnamed statements only. */
    if (ps->lease_mode)
        id = -1;

    rc = ctl_get(ps, &c);
    if (rc != DLOCK_OK)
        return rc;
    rc = runq(c, ps->base.url, what, id, sql, n, v, ps->op_timeout_ms, res,
              NULL);
    if (rc == DLOCK_EUNAVAIL && !fresh) {
        PQfinish(ps->ctl);
        ps->ctl = NULL;
        rc = ctl_get(ps, &c);
        if (rc == DLOCK_OK)
            rc = runq(c, ps->base.url, what, id, sql, n, v, ps->op_timeout_ms,
                      res, NULL);
    }
    return rc;
}

/* After using ctl: drop it if it broke or was left in a transaction. */
static void ctl_done(struct pg_store *ps)
{
    if (ps->ctl != NULL && !conn_clean(ps->ctl)) {
        PQfinish(ps->ctl);
        ps->ctl = NULL;
    }
}

static int64_t col_i64(const PGresult *r, int row, int col, int64_t dflt)
{
    if (PQntuples(r) <= row || PQgetisnull(r, row, col))
        return dflt;
    return (int64_t)strtoll(PQgetvalue(r, row, col), NULL, 10);
}

static int col_bool(const PGresult *r, int row, int col)
{
    return PQntuples(r) > row && !PQgetisnull(r, row, col) &&
           PQgetvalue(r, row, col)[0] == 't';
}

/* --- open / close / init --------------------------------------------- */

/* The URL minus dlock's own query parameters, for libpq. */
static char *strip_options(const char *raw)
{
    static const char *const ours[] = {"keys", "mode", "timeout", NULL};
    const char *q = strchr(raw, '?');
    size_t len = strlen(raw);
    char *out = malloc(len + 1), *o;
    int first = 1;

    if (out == NULL)
        return NULL;
    if (q == NULL) {
        memcpy(out, raw, len + 1);
        return out;
    }
    memcpy(out, raw, (size_t)(q - raw));
    o = out + (q - raw);
    q++;
    while (*q != '\0') {
        size_t plen = strcspn(q, "&"), klen = strcspn(q, "=&");
        int drop = 0;

        for (int i = 0; ours[i] != NULL; i++)
            if (strlen(ours[i]) == klen && memcmp(q, ours[i], klen) == 0)
                drop = 1;
        if (!drop && plen > 0) {
            *o++ = first ? '?' : '&';
            first = 0;
            memcpy(o, q, plen);
            o += plen;
        }
        q += plen;
        if (*q == '&')
            q++;
    }
    *o = '\0';
    return out;
}

static void pg_close(struct dlock_store *s)
{
    struct pg_store *ps = (struct pg_store *)s;

    PQfinish(ps->ctl);
    if (ps->mux != NULL)
        sess_free(ps, ps->mux);
    ps->mux = NULL;
    for (int i = 0; i < ps->nidle; i++)
        PQfinish(ps->idle[i]);
    pthread_mutex_destroy(&ps->ctl_mu);
    pthread_mutex_destroy(&ps->pool_mu);
    free(ps->conninfo);
    free(ps);
}

/* Create the tables unless they are there (a DBA may have made them for a
 * role that cannot create tables). */
static int init_locked(struct pg_store *ps, int always)
{
    PGresult *res;
    PGconn *c;
    int rc, have = 0;

    rc = ctl_get(ps, &c);
    if (rc != DLOCK_OK)
        return rc;
    if (!always) {
        rc = run(c, ps->base.url, "init", SQL_HAVE_TABLES, 0, NULL,
                 ps->op_timeout_ms, &res, NULL);
        if (rc != DLOCK_OK)
            goto out;
        have = col_bool(res, 0, 0);
        PQclear(res);
    }
    if (!have) {
        rc = run(c, ps->base.url, "creating the lock tables", SQL_INIT, 0, NULL,
                 ps->op_timeout_ms, &res, NULL);
        if (rc == DLOCK_OK)
            PQclear(res);
        if (rc == DLOCK_OK || PQtransactionStatus(c) != PQTRANS_INERROR)
            goto out;
        /* Leave no failed transaction behind. */
        if (run(c, ps->base.url, "init", "ROLLBACK", 0, NULL, ps->op_timeout_ms,
                &res, NULL) == DLOCK_OK)
            PQclear(res);
    }
out:
    ctl_done(ps);
    return rc;
}

static int pg_init(struct dlock_store *s)
{
    struct pg_store *ps = (struct pg_store *)s;
    int rc;

    pthread_mutex_lock(&ps->ctl_mu);
    rc = init_locked(ps, 1);
    pthread_mutex_unlock(&ps->ctl_mu);
    return rc;
}

static int parse_options(const struct dlock_url *u, int *hashtext, int *lease,
                         int64_t *timeout_ms)
{
    const char *keys = dlock__url_param(u, "keys");
    const char *mode = dlock__url_param(u, "mode");
    int rc;

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

    rc = parse_options(u, &hashtext, &lease, &timeout);
    if (rc != DLOCK_OK)
        return rc;
    ps = calloc(1, sizeof(*ps));
    if (ps == NULL)
        return dlock__enomem();
    ps->conninfo = strip_options(u->raw);
    if (ps->conninfo == NULL) {
        free(ps);
        return dlock__enomem();
    }
    ps->sql = hashtext ? sql_h : sql_x;
    ps->lease_mode = lease;
    ps->base.poll_wait = lease; /* no native wait without a session */
    ps->op_timeout_ms = timeout;
    pthread_mutex_init(&ps->ctl_mu, NULL);
    pthread_mutex_init(&ps->pool_mu, NULL);
    ps->base.url = u->redacted; /* for messages until the core sets it */

    pthread_mutex_lock(&ps->ctl_mu);
    rc = init_locked(ps, 0);
    pthread_mutex_unlock(&ps->ctl_mu);
    if (rc != DLOCK_OK) {
        pg_close(&ps->base);
        return rc;
    }
    *out = &ps->base;
    return DLOCK_OK;
}

/* --- shared bits for locks ------------------------------------------- */

struct acq_params {
    char ttl[24], pid[24], timeout[24];
    const char *v[7];
};

static void acq_params(struct acq_params *p, const struct dlock_lock *lk,
                       int64_t lock_timeout_ms)
{
    snprintf(p->ttl, sizeof(p->ttl), "%lld", (long long)lk->ttl_ms);
    snprintf(p->pid, sizeof(p->pid), "%ld", (long)getpid());
    snprintf(p->timeout, sizeof(p->timeout), "%lld",
             (long long)lock_timeout_ms);
    p->v[0] = lk->name;
    p->v[1] = lk->token;
    p->v[2] = lk->shared ? "t" : "f";
    p->v[3] = p->ttl;
    p->v[4] = dlock__hostname();
    p->v[5] = p->pid;
    p->v[6] = p->timeout;
}

/* --- session mode ------------------------------------------------------ */

/*
 * A database session that holds advisory locks.  Try-locks share the
 * store's current "mux" session, so a process holding thousands of locks
 * needs one connection, not thousands; a lock that had to wait got its
 * own session for the wait and keeps it.  Statements on a session are
 * serialised by its mutex.  When a session dies every lock on it is lost,
 * which is the truth: the server dropped their keys.
 */
struct sess {
    pthread_mutex_t mu; /* one statement at a time */
    PGconn *c;          /* NULL once the session is known to be gone */
    unsigned refs;      /* locks (and attempts) using it; under pool_mu */
    int is_mux;         /* ps->mux; under pool_mu */
    int dirty;          /* may hold a key nobody owns: close, not pool */
};

/* A held lock's priv.  Every one is also on the store's list: a fork
 * child frees its copy of a parent's lock without telling the store, and
 * what it held must stay reachable (not a leak) there. */
struct held {
    struct sess *s;
    int keyed;                /* its key and row are still on s */
    struct held *prev, *next; /* ps->helds, under pool_mu */
};

static int sess_new(struct pg_store *ps, struct sess **out)
{
    struct sess *s = calloc(1, sizeof(*s));
    int pooled, rc;

    if (s == NULL)
        return dlock__enomem();
    rc = conn_get(ps, &s->c, &pooled);
    if (rc != DLOCK_OK) {
        free(s);
        return rc;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->refs = 1;
    *out = s;
    return DLOCK_OK;
}

static void sess_free(struct pg_store *ps, struct sess *s)
{
    if (s->c != NULL) {
        if (s->dirty)
            PQfinish(s->c);
        else
            conn_put(ps, s->c);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void sess_unref(struct pg_store *ps, struct sess *s)
{
    int last;

    pthread_mutex_lock(&ps->pool_mu);
    last = --s->refs == 0 && !s->is_mux;
    pthread_mutex_unlock(&ps->pool_mu);
    if (last)
        sess_free(ps, s);
}

/* No new locks on s (it is gone or dirty); caller holds s->mu. */
static void sess_retire(struct pg_store *ps, struct sess *s, int gone)
{
    if (gone && s->c != NULL) {
        PQfinish(s->c);
        s->c = NULL;
    }
    pthread_mutex_lock(&ps->pool_mu);
    if (ps->mux == s) {
        ps->mux = NULL;
        s->is_mux = 0;
        /* The store's own reference goes; holders keep theirs. */
        s->refs--;
    }
    pthread_mutex_unlock(&ps->pool_mu);
}

/* The mux session, with a reference taken. */
static int mux_get(struct pg_store *ps, struct sess **out)
{
    struct sess *s;
    int rc;

    pthread_mutex_lock(&ps->pool_mu);
    s = ps->mux;
    if (s != NULL)
        s->refs++;
    pthread_mutex_unlock(&ps->pool_mu);
    if (s != NULL) {
        *out = s;
        return DLOCK_OK;
    }
    rc = sess_new(ps, &s); /* refs 1: ours */
    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&ps->pool_mu);
    if (ps->mux == NULL) {
        ps->mux = s;
        s->is_mux = 1;
        s->refs++; /* the store's */
    } else {
        /* Another thread installed one meanwhile: use that. */
        struct sess *mine = s;

        s = ps->mux;
        s->refs++;
        pthread_mutex_unlock(&ps->pool_mu);
        sess_unref(ps, mine);
        *out = s;
        return DLOCK_OK;
    }
    pthread_mutex_unlock(&ps->pool_mu);
    *out = s;
    return DLOCK_OK;
}

/* One statement that takes the advisory lock and writes the row, on s
 * (caller holds s->mu).  lock_timeout_ms 0: try; else wait up to that
 * long (server side; only on a session of the attempt's own). */
static int session_attempt(struct pg_store *ps, struct sess *s,
                           struct dlock_lock *lk, int64_t lock_timeout_ms)
{
    struct acq_params p;
    PGresult *res;
    char state[6];
    int q, rc;

    if (s->c == NULL)
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "postgres acquire: the "
                             "session is gone (%s)",
                             ps->base.url);
    acq_params(&p, lk, lock_timeout_ms);
    if (lock_timeout_ms == 0)
        q = lk->shared ? Q_TRY_S : Q_TRY_X;
    else
        q = lk->shared ? Q_WAIT_S : Q_WAIT_X;
    rc =
        runp(s->c, ps->base.url, "acquire", q, ps->sql[q], q < Q_WAIT_X ? 6 : 7,
             p.v, lock_timeout_ms + ps->op_timeout_ms, &res, state);
    if (rc == DLOCK_EUNAVAIL) {
        sess_retire(ps, s, 1);
        return rc;
    }
    if (rc == DLOCK_ESTORE) {
        /* A session advisory lock survives the statement's failure (it is
         * not transactional), and lock_timeout may have fired on a row
         * after the key was granted. */
        int timed_out = strcmp(state, "55P03") == 0;

        /* An exclusive key, once granted, leaves nothing in the statement
         * to wait for (the rows it deletes are skipped if locked, the
         * fence row is only contended by shared holders): its lock
         * timeout was the key's.  Answer at once, the deadline is now. */
        if (timed_out && !lk->shared && !s->is_mux)
            return DLOCK_BUSY;
        if (s->is_mux) {
            /* Other locks live on this session: it takes no new ones and
             * is closed when they are gone. */
            s->dirty = 1;
            sess_retire(ps, s, 0);
        } else {
            PGresult *r2;
            int rc2 =
                runp(s->c, ps->base.url, "acquire", Q_UNLOCK_ALL,
                     SQL_UNLOCK_ALL, 0, NULL, ps->op_timeout_ms, &r2, NULL);

            if (rc2 != DLOCK_OK) {
                sess_retire(ps, s, 1);
                return rc2;
            }
            PQclear(r2);
        }
        return timed_out ? DLOCK_BUSY : rc;
    }
    if (!col_bool(res, 0, 0)) {
        PQclear(res);
        return DLOCK_BUSY;
    }
    if (PQgetisnull(res, 0, 1)) {
        PQclear(res);
        s->dirty = 1;
        sess_retire(ps, s, 0);
        return dlock__seterr(DLOCK_ESTORE,
                             "postgres acquire: no row "
                             "written for '%s' (%s)",
                             lk->name, ps->base.url);
    }
    lk->fence = (uint64_t)col_i64(res, 0, 1, 0);
    PQclear(res);
    return DLOCK_OK;
}

struct holders {
    int64_t n;       /* dlock holders in our way */
    int64_t left_ms; /* longest lease left of the live ones, -1 */
    int64_t expired; /* past their lease, still holding the key */
    int64_t killed;  /* of those, terminated now */
    char why[300];   /* why a hung holder could not be terminated */
    char host[256];
    int64_t pid, backend;
};

/* Who holds the key we could not get, and fence off those past their
 * lease (caller holds s->mu).  Errors are not fatal: the caller just
 * waits. */
static void session_holders(struct pg_store *ps, struct sess *s,
                            const struct dlock_lock *lk, struct holders *h)
{
    const char *v[2] = {lk->name, lk->shared ? "t" : "f"};
    PGresult *res;
    char state[6];
    int rc;

    memset(h, 0, sizeof(*h));
    h->left_ms = -1;
    if (s->c == NULL || run(s->c, ps->base.url, "acquire", ps->sql[Q_HOLDERS],
                            2, v, ps->op_timeout_ms, &res, NULL) != DLOCK_OK)
        return;
    h->n = col_i64(res, 0, 0, 0);
    h->left_ms = col_i64(res, 0, 1, -1);
    h->expired = col_i64(res, 0, 2, 0);
    if (h->n > 0 && !PQgetisnull(res, 0, 3))
        dlock__strlcpy(h->host, PQgetvalue(res, 0, 3), sizeof(h->host));
    h->pid = col_i64(res, 0, 4, 0);
    h->backend = col_i64(res, 0, 5, 0);
    PQclear(res);
    if (h->expired == 0)
        return;
    rc = run(s->c, ps->base.url, "acquire", ps->sql[Q_TERMINATE], 2, v,
             ps->op_timeout_ms, &res, state);
    if (rc == DLOCK_OK) {
        for (int i = 0; i < PQntuples(res); i++)
            h->killed += col_bool(res, i, 0);
        PQclear(res);
    } else {
        snprintf(h->why, sizeof(h->why), "%s%s", dlock_errmsg(),
                 strcmp(state, "42501") == 0
                     ? "; grant pg_signal_backend to this role, or use "
                       "the holder's role"
                     : "");
    }
}

static int busy_msg(const struct dlock_lock *lk, const struct holders *h)
{
    if (h->why[0] != '\0')
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held past its lease by backend "
                             "%lld (host %s, pid %lld), which could not be "
                             "terminated: %s",
                             lk->name, (long long)h->backend, h->host,
                             (long long)h->pid, h->why);
    if (h->n == 0)
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held by a session with no dlock "
                             "row (psql, or another application using the "
                             "same advisory key)",
                             lk->name);
    return dlock__seterr(DLOCK_BUSY, "lock '%s' is held by %s pid %lld",
                         lk->name, h->host, (long long)h->pid);
}

static int hold(struct pg_store *ps, struct dlock_lock *lk, struct sess *s)
{
    struct held *h = malloc(sizeof(*h));

    if (h == NULL)
        return dlock__enomem();
    h->s = s;
    h->keyed = 1;
    h->prev = NULL;
    pthread_mutex_lock(&ps->pool_mu);
    h->next = ps->helds;
    if (h->next != NULL)
        h->next->prev = h;
    ps->helds = h;
    pthread_mutex_unlock(&ps->pool_mu);
    lk->priv = h;
    return DLOCK_OK;
}

/* The lock was granted on s but cannot be kept (no memory): give it
 * back (caller holds s->mu). */
static void session_undo(struct pg_store *ps, struct sess *s,
                         struct dlock_lock *lk)
{
    const char *v[2] = {lk->name, lk->token};
    int q = lk->shared ? Q_RELEASE_S : Q_RELEASE_X;
    PGresult *res;

    if (s->c != NULL && runp(s->c, ps->base.url, "release", q, ps->sql[q], 2, v,
                             ps->op_timeout_ms, &res, NULL) == DLOCK_OK)
        PQclear(res);
    else
        sess_retire(ps, s, 1);
}

/* One try, on the mux session, or on a session of its own for a lock
 * without auto-renewal: if such a lock outlives its lease unreleased, a
 * contender terminates its session, which must not take the process's
 * other (renewed, healthy) locks with it.  A session that died while idle
 * (a server restart) is replaced once. */
static int mux_attempt(struct pg_store *ps, struct dlock_lock *lk,
                       struct sess **sp)
{
    for (int round = 0;; round++) {
        struct sess *s;
        int rc = lk->auto_renew ? mux_get(ps, &s) : sess_new(ps, &s);

        if (rc != DLOCK_OK)
            return rc;
        pthread_mutex_lock(&s->mu);
        rc = session_attempt(ps, s, lk, 0);
        pthread_mutex_unlock(&s->mu);
        if (rc == DLOCK_EUNAVAIL && round == 0) {
            sess_unref(ps, s);
            continue;
        }
        if (rc != DLOCK_OK && rc != DLOCK_BUSY) {
            sess_unref(ps, s);
            return rc;
        }
        *sp = s;
        return rc;
    }
}

static int session_try(struct pg_store *ps, struct dlock_lock *lk,
                       int64_t deadline, int64_t *retry_ms)
{
    struct holders h;
    struct sess *s;
    int rc;

    rc = mux_attempt(ps, lk, &s);
    if (rc != DLOCK_OK && rc != DLOCK_BUSY)
        return rc;
    if (rc == DLOCK_BUSY) {
        int64_t until = dlock__now_ms() + TERMINATE_GRACE_MS;

        pthread_mutex_lock(&s->mu);
        session_holders(ps, s, lk, &h);
        pthread_mutex_unlock(&s->mu);
        if (until > deadline)
            until = deadline;
        /* A hung holder is being terminated: its key goes within
         * moments.  Short naps, not a wait on the shared session. */
        for (unsigned i = 0; h.killed > 0 && rc == DLOCK_BUSY; i++) {
            int64_t nap = dlock__backoff_ms(i, dlock__rand32());

            if (dlock__now_ms() + nap > until)
                break;
            dlock__sleep_ms(nap);
            pthread_mutex_lock(&s->mu);
            rc = session_attempt(ps, s, lk, 0);
            pthread_mutex_unlock(&s->mu);
        }
        if (rc == DLOCK_BUSY) {
            *retry_ms = h.left_ms;
            busy_msg(lk, &h);
        }
    }
    if (rc == DLOCK_OK) {
        rc = hold(ps, lk, s);
        if (rc == DLOCK_OK)
            return rc;
        pthread_mutex_lock(&s->mu);
        session_undo(ps, s, lk);
        pthread_mutex_unlock(&s->mu);
    }
    sess_unref(ps, s);
    return rc;
}

/* A wait, natively, on a session of its own, in chunks: the holder's
 * lease end wakes us to fence it off if it has not let go by then. */
static int session_wait(struct pg_store *ps, struct dlock_lock *lk,
                        int64_t deadline)
{
    struct holders h;
    struct sess *s;
    int64_t sent = dlock__now_ms();
    int rc;

    /* First a try on the shared session: the common, free case. */
    rc = mux_attempt(ps, lk, &s);
    if (rc == DLOCK_OK) {
        rc = hold(ps, lk, s);
        if (rc == DLOCK_OK)
            return rc;
        pthread_mutex_lock(&s->mu);
        session_undo(ps, s, lk);
        pthread_mutex_unlock(&s->mu);
        sess_unref(ps, s);
        return rc;
    }
    if (rc != DLOCK_BUSY)
        return rc;
    sess_unref(ps, s);
    rc = sess_new(ps, &s);
    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&s->mu);
    rc = DLOCK_BUSY;
    memset(&h, 0, sizeof(h));
    h.left_ms = -1;
    for (int first = 1; rc == DLOCK_BUSY; first = 0) {
        int64_t chunk;

        /* Out of time: answer now, with what we knew of the holder. */
        if (!first && dlock__remaining_ms(deadline) == 0) {
            busy_msg(lk, &h);
            break;
        }
        session_holders(ps, s, lk, &h);
        chunk = dlock__remaining_ms(deadline);
        if (chunk == 0) {
            busy_msg(lk, &h);
            break;
        }
        if (h.killed > 0 && chunk > TERMINATE_GRACE_MS)
            chunk = TERMINATE_GRACE_MS;
        else if (h.why[0] != '\0' && chunk > 1000)
            chunk = 1000;
        else if (h.left_ms >= 0 && chunk > h.left_ms + 20)
            chunk = h.left_ms + 20;
        else if (chunk > WAIT_CHUNK_MS)
            chunk = WAIT_CHUNK_MS;
        if (chunk < 1)
            chunk = 1;
        sent = dlock__now_ms();
        rc = session_attempt(ps, s, lk, chunk);
    }
    if (rc == DLOCK_OK) {
        /* The lease started when the winning statement was sent, at the
         * earliest. */
        if (sent + lk->ttl_ms > lk->lease_end)
            lk->lease_end = sent + lk->ttl_ms;
        rc = hold(ps, lk, s);
        if (rc != DLOCK_OK)
            session_undo(ps, s, lk);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc != DLOCK_OK)
        sess_unref(ps, s);
    return rc;
}

/* A statement for a held lock, on its session.  The session's failure
 * means its advisory locks are gone: the lock is lost. */
static int held_run(struct pg_store *ps, struct dlock_lock *lk,
                    const char *what, int id, const char *sql, int n,
                    const char *const *v, PGresult **res)
{
    struct held *h = lk->priv;
    struct sess *s;
    char why[600];
    int rc;

    if (h == NULL || !h->keyed)
        return dlock__lost(lk, "its database session ended or it was let go");
    s = h->s;
    pthread_mutex_lock(&s->mu);
    if (s->c == NULL) {
        pthread_mutex_unlock(&s->mu);
        h->keyed = 0;
        return dlock__lost(lk, "its database session ended");
    }
    rc = runq(s->c, ps->base.url, what, id, sql, n, v, ps->op_timeout_ms, res,
              NULL);
    if (rc == DLOCK_EUNAVAIL) {
        snprintf(why, sizeof(why), "its database session ended (%s)",
                 dlock_errmsg());
        sess_retire(ps, s, 1);
        pthread_mutex_unlock(&s->mu);
        h->keyed = 0;
        return dlock__lost(lk, why);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Delete our row and let our key go (one level: other locks on the same
 * session keep theirs).  *live: the row was there and within its lease. */
static int held_drop(struct pg_store *ps, struct dlock_lock *lk, int *live)
{
    struct held *h = lk->priv;
    const char *v[2] = {lk->name, lk->token};
    int q = lk->shared ? Q_RELEASE_S : Q_RELEASE_X;
    PGresult *res;
    int rc;

    *live = 0;
    if (h == NULL || !h->keyed)
        return DLOCK_OK;
    rc = held_run(ps, lk, "release", q, ps->sql[q], 2, v, &res);
    if (rc == DLOCK_LOST)
        return rc;
    h->keyed = 0;
    if (rc != DLOCK_OK) {
        /* Not known whether the key went: no new locks on that session,
         * and it is closed once its other locks are gone. */
        pthread_mutex_lock(&h->s->mu);
        h->s->dirty = 1;
        sess_retire(ps, h->s, 0);
        pthread_mutex_unlock(&h->s->mu);
        return rc;
    }
    *live = col_bool(res, 0, 0) && col_bool(res, 0, 1);
    PQclear(res);
    return DLOCK_OK;
}

/* Forget lk's session reference and its priv. */
static void held_free(struct pg_store *ps, struct dlock_lock *lk)
{
    struct held *h = lk->priv;

    if (h == NULL)
        return;
    pthread_mutex_lock(&ps->pool_mu);
    if (h->prev != NULL)
        h->prev->next = h->next;
    else
        ps->helds = h->next;
    if (h->next != NULL)
        h->next->prev = h->prev;
    pthread_mutex_unlock(&ps->pool_mu);
    sess_unref(ps, h->s);
    free(h);
    lk->priv = NULL;
}

/* --- lease mode -------------------------------------------------------- */

static int lease_try(struct pg_store *ps, struct dlock_lock *lk,
                     int64_t *retry_ms)
{
    const char *sh = lk->shared ? "true" : "false";
    char *name = NULL, *host = NULL, *sql = NULL;
    struct acq_params p;
    PGresult *res = NULL;
    PGconn *c;
    size_t len;
    int rc;

    acq_params(&p, lk, 0);
    pthread_mutex_lock(&ps->ctl_mu);
    rc = ctl_get(ps, &c);
    if (rc != DLOCK_OK)
        goto out;
    name = PQescapeLiteral(c, lk->name, lk->name_len);
    host = PQescapeLiteral(c, p.v[4], strlen(p.v[4]));
    if (name == NULL || host == NULL) {
        rc = dlock__enomem();
        goto out;
    }
    len = sizeof(SQL_LEASE_FMT) + 5 * strlen(name) + strlen(host) + 200;
    sql = malloc(len);
    if (sql == NULL) {
        rc = dlock__enomem();
        goto out;
    }
    snprintf(sql, len, SQL_LEASE_FMT, name, name, name, sh, name, name,
             lk->token, sh, host, p.pid, p.ttl);
    rc = ctl_exec(ps, "acquire", -1, sql, 0, NULL, &res);
    if (rc != DLOCK_OK)
        goto out;
    if (PQgetisnull(res, 0, 0)) {
        *retry_ms = col_i64(res, 0, 1, -1);
        rc = dlock__seterr(DLOCK_BUSY, "lock '%s' is held by someone else",
                           lk->name);
    } else {
        lk->fence = (uint64_t)col_i64(res, 0, 0, 0);
    }
    PQclear(res);
out:
    ctl_done(ps);
    pthread_mutex_unlock(&ps->ctl_mu);
    PQfreemem(name);
    PQfreemem(host);
    free(sql);
    return rc;
}

/* A statement on the control connection (lease mode's per-lock calls). */
static int ctl_run(struct pg_store *ps, const char *what, int id,
                   const char *sql, int n, const char *const *v, PGresult **res)
{
    int rc;

    pthread_mutex_lock(&ps->ctl_mu);
    rc = ctl_exec(ps, what, id, sql, n, v, res);
    ctl_done(ps);
    pthread_mutex_unlock(&ps->ctl_mu);
    return rc;
}

/* --- the ops --------------------------------------------------------- */

static int pg_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms)
{
    struct pg_store *ps = (struct pg_store *)s;

    if (ps->lease_mode)
        return lease_try(ps, lk, retry_ms);
    return session_try(ps, lk, deadline, retry_ms);
}

static int pg_wait_acquire(struct dlock_store *s, struct dlock_lock *lk,
                           int64_t deadline)
{
    struct pg_store *ps = (struct pg_store *)s;

    return session_wait(ps, lk, deadline); /* lease mode: core polls */
}

/* Run a per-lock statement where it belongs: the lock's session, or
 * the control connection in lease mode. */
static int lock_run(struct pg_store *ps, struct dlock_lock *lk,
                    const char *what, int id, const char *sql, int n,
                    const char *const *v, PGresult **res)
{
    if (ps->lease_mode)
        return ctl_run(ps, what, id, sql, n, v, res);
    return held_run(ps, lk, what, id, sql, n, v, res);
}

/* The row is gone or past its lease: let the key go now, so nobody waits
 * for a lock we know we lost. */
static int found_lost(struct pg_store *ps, struct dlock_lock *lk)
{
    int live;

    if (!ps->lease_mode)
        (void)held_drop(ps, lk, &live);
    return dlock__lost(lk, "its lease ran out or it was broken");
}

static int pg_extend(struct dlock_store *s, struct dlock_lock *lk,
                     int64_t ttl_ms)
{
    struct pg_store *ps = (struct pg_store *)s;
    char ttl[24];
    const char *v[3] = {lk->name, lk->token, ttl};
    PGresult *res;
    int rc, changed;

    snprintf(ttl, sizeof(ttl), "%lld", (long long)ttl_ms);
    rc = lock_run(ps, lk, "extend", Q_EXTEND, SQL_EXTEND, 3, v, &res);
    if (rc != DLOCK_OK)
        return rc;
    changed = atoi(PQcmdTuples(res));
    PQclear(res);
    return changed == 0 ? found_lost(ps, lk) : DLOCK_OK;
}

static int pg_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                       int64_t *left_ms)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[2] = {lk->name, lk->token};
    PGresult *res;
    int rc;

    rc = lock_run(ps, lk, "assert_ttl", Q_TTL, SQL_TTL, 2, v, &res);
    if (rc != DLOCK_OK)
        return rc;
    if (PQntuples(res) == 0) {
        PQclear(res);
        return found_lost(ps, lk);
    }
    *left_ms = col_i64(res, 0, 0, 1);
    PQclear(res);
    return DLOCK_OK;
}

static int pg_release(struct dlock_store *s, struct dlock_lock *lk)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[2] = {lk->name, lk->token};
    PGresult *res;
    int rc, live;

    if (ps->lease_mode) {
        rc = ctl_run(ps, "release", Q_RELEASE_L, SQL_RELEASE_L, 2, v, &res);
        if (rc != DLOCK_OK)
            return rc;
        live = col_bool(res, 0, 0);
        PQclear(res);
    } else {
        rc = held_drop(ps, lk, &live);
        held_free(ps, lk);
        if (rc != DLOCK_OK)
            return rc;
    }
    return live ? DLOCK_OK : dlock__lost(lk, "its lease ran out or it was broken");
}

static void pg_forget(struct dlock_store *s, struct dlock_lock *lk)
{
    struct pg_store *ps = (struct pg_store *)s;
    int live;

    (void)held_drop(ps, lk, &live);
    held_free(ps, lk);
}

/* --- status, list, force_release ------------------------------------ */

/* Fill out for name (caller holds ctl_mu). */
static int describe(struct pg_store *ps, const char *name, dlock_info *out)
{
    const char *v[2] = {name, ps->lease_mode ? "t" : "f"};
    PGresult *res;
    int64_t last = -1;
    int rc;

    rc = ctl_exec(ps, "status", -1, ps->sql[Q_STATUS], 2, v, &res);
    if (rc != DLOCK_OK)
        return rc;
    for (int i = 0; i < PQntuples(res); i++) {
        int64_t left = col_i64(res, i, 3, 0);

        out->held = 1;
        out->holders++;
        out->shared = col_bool(res, i, 0);
        if (left > last) {
            last = left;
            out->ttl_ms = left;
            dlock__strlcpy(out->host, PQgetvalue(res, i, 1), sizeof(out->host));
            out->pid = col_i64(res, i, 2, 0);
            out->since_ms = col_i64(res, i, 4, 0);
        }
    }
    PQclear(res);
    rc = run(ps->ctl, ps->base.url, "status", ps->sql[Q_STATUS2], 2, v,
             ps->op_timeout_ms, &res, NULL);
    if (rc != DLOCK_OK)
        return rc;
    out->fence = (uint64_t)col_i64(res, 0, 0, 0);
    /* Held by sessions that are not dlock's (psql, a Laravel app): the
     * key is taken all the same. */
    if (!out->held && col_i64(res, 0, 1, 0) > 0) {
        out->held = 1;
        out->holders = (unsigned)col_i64(res, 0, 1, 0);
        out->shared = col_bool(res, 0, 2);
    }
    PQclear(res);
    return DLOCK_OK;
}

static int pg_status(struct dlock_store *s, const char *name, dlock_info *out)
{
    struct pg_store *ps = (struct pg_store *)s;
    int rc;

    pthread_mutex_lock(&ps->ctl_mu);
    rc = describe(ps, name, out);
    ctl_done(ps);
    pthread_mutex_unlock(&ps->ctl_mu);
    return rc;
}

static int pg_list(struct dlock_store *s, const char *prefix,
                   int (*cb)(const dlock_info *info, void *payload),
                   void *payload)
{
    struct pg_store *ps = (struct pg_store *)s;
    const char *v[1] = {prefix};
    size_t plen = strlen(prefix);
    PGresult *names;
    int rc;

    rc = ctl_run(ps, "list", -1, SQL_NAMES, 1, v, &names);
    if (rc != DLOCK_OK)
        return rc;
    /* The callback runs without the connection held: it may call back
     * into the library. */
    for (int i = 0; i < PQntuples(names) && rc == DLOCK_OK; i++) {
        const char *name = PQgetvalue(names, i, 0);
        dlock_info info;

        if (strlen(name) < plen || memcmp(name, prefix, plen) != 0 ||
            strlen(name) > DLOCK_NAME_MAX)
            continue;
        memset(&info, 0, sizeof(info));
        info.ttl_ms = -1;
        dlock__strlcpy(info.name, name, sizeof(info.name));
        pthread_mutex_lock(&ps->ctl_mu);
        rc = describe(ps, name, &info);
        ctl_done(ps);
        pthread_mutex_unlock(&ps->ctl_mu);
        if (rc == DLOCK_OK && info.held)
            rc = cb(&info, payload);
    }
    PQclear(names);
    return rc;
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

    rc = ctl_run(ps, "release --force", -1, SQL_FORCE, 1, v, &res);
    if (rc != DLOCK_OK)
        return rc;
    *removed = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        *removed += col_bool(res, i, 1);
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
        /* Their sessions still hold the key: end them (best effort; the
         * holders also find their rows gone at their next renewal). */
        v[1] = pids;
        if (ctl_run(ps, "release --force", -1, ps->sql[Q_FORCE_KILL], 2, v,
                    &res) == DLOCK_OK)
            PQclear(res);
        free(pids);
    }
    dlock__clearerr();
    return DLOCK_OK;
}

static int pg_ddl(char **out, const struct dlock_url *u)
{
    (void)u;
    *out = dlock__strdup(DDL);
    return *out != NULL ? DLOCK_OK : dlock__enomem();
}

const struct dlock_store_ops dlock__postgres_ops = {
    .version = DLOCK_STORE_OPS_VERSION,
    .name = "postgres",
    .has_shared = 1,
    .open = pg_open,
    .close = pg_close,
    .try_acquire = pg_try_acquire,
    .wait_acquire = pg_wait_acquire,
    .extend = pg_extend,
    .ttl_left = pg_ttl_left,
    .release = pg_release,
    .forget = pg_forget,
    .status = pg_status,
    .list = pg_list,
    .force_release = pg_force_release,
    .init = pg_init,
    .ddl = pg_ddl,
};

/* --- transaction-scoped locks on the caller's connection ------------- */

static int xact_run(PGconn *c, const char *sql, int n, const char *const *v,
                    PGresult **res, char state[6])
{
    /* The caller's connection: no URL of ours to show. */
    return run(c, "connection", "dlock_pg_xact_lock", sql, n, v, INT64_MAX / 4,
               res, state);
}

int dlock_pg_xact_lock(PGconn *conn, const char *name, int64_t wait_ms)
{
    char timeout[24], state[6];
    const char *v[2] = {name, timeout};
    PGresult *res;
    int rc, got;

    if (conn == NULL)
        return dlock__seterr(DLOCK_EINVAL, "conn is NULL");
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    rc = dlock__check_name(name, strlen(name));
    if (rc != DLOCK_OK)
        return rc;
    if (wait_ms < DLOCK_WAIT_FOREVER)
        return dlock__seterr(DLOCK_EINVAL,
                             "wait_ms %lld is negative (use "
                             "DLOCK_WAIT_FOREVER to wait forever)",
                             (long long)wait_ms);
    if (PQstatus(conn) != CONNECTION_OK)
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "dlock_pg_xact_lock: the connection is broken");
    switch (PQtransactionStatus(conn)) {
    case PQTRANS_INTRANS:
        break;
    case PQTRANS_IDLE:
        return dlock__seterr(DLOCK_EINVAL,
                             "dlock_pg_xact_lock('%s'): not inside a "
                             "transaction (run BEGIN first); a transaction "
                             "lock outside one would be released at once",
                             name);
    case PQTRANS_INERROR:
        return dlock__seterr(DLOCK_ESTORE,
                             "dlock_pg_xact_lock('%s'): the transaction "
                             "is aborted; ROLLBACK first",
                             name);
    default:
        return dlock__seterr(DLOCK_EINVAL,
                             "dlock_pg_xact_lock('%s'): the connection is "
                             "busy with another command",
                             name);
    }
    if (wait_ms == 0) {
        rc = xact_run(conn,
                      "SELECT pg_try_advisory_xact_lock("
                      "hashtextextended($1::text, 0))",
                      1, v, &res, NULL);
        if (rc != DLOCK_OK)
            return rc;
        got = col_bool(res, 0, 0);
        PQclear(res);
        if (!got)
            return dlock__seterr(DLOCK_BUSY,
                                 "lock '%s' is held by "
                                 "someone else",
                                 name);
        dlock__clearerr();
        return DLOCK_OK;
    }
    /* A savepoint of our own: a lock timeout then aborts only it, and its
     * set_config(lock_timeout) goes with it.  On success the old value is
     * put back (RELEASE SAVEPOINT would keep ours). */
    snprintf(timeout, sizeof(timeout), "%lld",
             wait_ms == DLOCK_WAIT_FOREVER ? 0LL : (long long)wait_ms);
    rc = xact_run(conn, "SAVEPOINT dlock_xact_lock", 0, NULL, &res, NULL);
    if (rc != DLOCK_OK)
        return rc;
    PQclear(res);
    rc = xact_run(conn,
                  "SELECT s.old FROM (SELECT current_setting('lock_timeout')"
                  " AS old, set_config('lock_timeout', $2::text, true) AS "
                  "c OFFSET 0) s, LATERAL (SELECT pg_advisory_xact_lock("
                  "hashtextextended($1::text, 0)), s.c) l",
                  2, v, &res, state);
    if (rc == DLOCK_OK) {
        const char *r[1];
        PGresult *res2;
        char old[64];

        dlock__strlcpy(old, PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "0",
                       sizeof(old));
        PQclear(res);
        r[0] = old;
        rc = xact_run(conn, "RELEASE SAVEPOINT dlock_xact_lock", 0, NULL, &res,
                      NULL);
        if (rc != DLOCK_OK)
            return rc;
        PQclear(res);
        rc = xact_run(conn, "SELECT set_config('lock_timeout', $1, true)", 1, r,
                      &res2, NULL);
        if (rc != DLOCK_OK)
            return rc;
        PQclear(res2);
        dlock__clearerr();
        return DLOCK_OK;
    }
    if (rc == DLOCK_EUNAVAIL)
        return rc;
    {
        int rc2 = xact_run(conn,
                           "ROLLBACK TO SAVEPOINT dlock_xact_lock; "
                           "RELEASE SAVEPOINT dlock_xact_lock",
                           0, NULL, &res, NULL);

        if (rc2 != DLOCK_OK)
            return rc2;
        PQclear(res);
    }
    if (strcmp(state, "55P03") == 0)
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held by someone "
                             "else (waited %lld ms)",
                             name, (long long)wait_ms);
    return rc; /* the server's message is still the thread's */
}
