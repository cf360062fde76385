/*
 * mysql.c - MySQL/MariaDB store: GET_LOCK plus the `shared_locks` table of
 * its-mieger/mysql-shared-locks, with its TTL enforced by KILL.
 *
 * mysql://user:pass@host[:port]/database[?options]   (or mariadb://)
 * options: timeout=5s, table=shared_locks, quote=ansi|backtick,
 *          mode=lock|lease, socket=/path.sock, ssl=0|1|verify,
 *          ssl-ca=, ssl-cert=, ssl-key=
 *
 * A lock is two things held together on one dedicated autocommit
 * connection, pinned to the lock while it is held: a row in the lock table
 * (the lease: owner token, expiry on the server's clock, fence) and
 * GET_LOCK(key) (the native mutual exclusion, which the server drops the
 * moment the session ends, so a crashed holder frees the lock at once).
 * The row is the lock; the GET_LOCK is how waiters sleep and how death is
 * seen.  A holder past its lease has its row deleted and, if and only if
 * IS_USED_LOCK(key) is the connection id recorded in its row, its
 * connection KILLed: that drops its GET_LOCK and makes anything it still
 * does on that connection fail.  A session that a waiter saw hold the key
 * with a row, and that still holds the GET_LOCK after someone else deleted
 * the row, is KILLed the same way once that row's lease and a grace are
 * over; a session that never had a row (an application using GET_LOCK
 * directly) is a legitimate holder and is waited for without bound.
 *
 * GET_LOCK compares names byte for byte, so every key handed to GET_LOCK,
 * IS_USED_LOCK or RELEASE_LOCK is text in the connection's utf8mb4: our
 * own key as a literal, or a row's name explicitly CONVERTed (the table
 * of its-mieger's DDL is latin1, and its column read raw gives latin1
 * bytes, which no holder took).  A name the column's character set cannot
 * store is refused with DLOCK_EINVAL.
 *
 * Keys: a name of up to 64 characters is its own key; a longer one becomes
 * its first 24 characters followed by the SHA1 hex of the whole name, as
 * mpyw/laravel-database-advisory-lock computes it.
 *
 * ?mode=lease keeps only the row (for Galera and other servers where
 * GET_LOCK is not cluster-wide): waiting polls, and a dead holder blocks
 * others until its lease runs out.
 *
 * Fences come from a separate counter table that deleting lock rows never
 * touches.
 */
#include <errmsg.h>
#include <errno.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keys.h"
#include "store.h"

#define DEFAULT_TIMEOUT_MS 5000
/* Longest single GET_LOCK wait (never longer than ?timeout=).  A
 * connection's read timeout, fixed when it connects, is ?timeout= plus one
 * slice: so a statement that hangs is given up after at most twice the
 * operation timeout, and a GET_LOCK wait is never mistaken for a hang. */
#define MAX_SLICE_MS 5000

static int64_t max_slice(int64_t timeout_ms)
{
    return timeout_ms < MAX_SLICE_MS ? timeout_ms : MAX_SLICE_MS;
}
/* An idle pooled connection older than this is pinged before reuse. */
#define IDLE_PING_MS 1000
#define MAX_IDLE 8
#define KEY_MAX DLOCK__MYSQL_KEY_MAX
#define TABLE_MAX 64

/* The server's clock in ms; every connection runs with time_zone +00:00,
 * so this has no daylight-saving jumps. */
#define NOWMS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"

/* --- the handle and its connection pool ------------------------------- */

struct conn {
    MYSQL *db;
    struct conn *next;
    unsigned long id; /* CONNECTION_ID() */
    int frac;         /* GET_LOCK takes fractional seconds (MariaDB) */
    int reused;       /* came from the idle pool */
    int64_t idle_since;
    const char *name; /* the lock name it works for, for messages */
};

struct my_store {
    struct dlock_store base;
    pthread_mutex_t mu; /* guards idle and nidle */
    struct conn *idle;
    unsigned nidle;
    /* Held locks' state, so it stays reachable where the core drops a
     * lock without telling us (a fork child's copy of a parent's lock:
     * its connection must not be closed there, it is the parent's). */
    struct my_lock *held;

    char *host, *user, *password, *database, *socket;
    unsigned port;
    char *ssl_ca, *ssl_cert, *ssl_key;
    int ssl; /* 0 off, 1 required, 2 required and verified */
    int lease_mode;
    int mariadb; /* the server is MariaDB (checked on open) */
    int64_t timeout_ms;
    char table[TABLE_MAX + 3]; /* quoted identifiers */
    char fences[TABLE_MAX + 10];
    char index[TABLE_MAX + 7];
    char raw_table[TABLE_MAX + 1];
    char name_charset[65]; /* of the table's name column ("" unknown) */
};

/* Per held lock. */
struct my_lock {
    struct my_lock *prev, *next; /* my_store.held */
    struct conn *c;              /* pinned (lock mode); NULL in lease mode */
    size_t key_len;
    char key[KEY_MAX + 1];
    /* While acquiring: the session last seen holding the key's GET_LOCK
     * with a row, the end of that row's lease (monotonic ms), and since
     * when it has held the GET_LOCK with no row (0: not seen so). */
    unsigned long long seen_conn;
    int64_t seen_until, rowless_since;
};

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_rc;

static void lib_init(void)
{
    lib_rc = mysql_library_init(0, NULL, NULL);
}

static int is_conn_error(unsigned e)
{
    return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST ||
           e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR ||
           e == CR_UNKNOWN_HOST || e == CR_SERVER_LOST_EXTENDED ||
           (e >= 2000 && e < 3000) || e == ER_CONNECTION_KILLED ||
           e == ER_SERVER_SHUTDOWN || e == ER_QUERY_INTERRUPTED;
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

static int unstorable(struct my_store *ms, const char *name,
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

static int db_err(struct my_store *ms, struct conn *c, const char *what)
{
    unsigned e = mysql_errno(c->db);
    int rc = is_conn_error(e) ? DLOCK_EUNAVAIL : DLOCK_ESTORE;

    if (c->name != NULL && is_charset_error(e))
        return unstorable(ms, c->name, mysql_error(c->db));
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

static void conn_close(struct conn *c)
{
    if (c == NULL)
        return;
    mysql_close(c->db);
    free(c);
}

static unsigned secs_up(int64_t ms)
{
    return (unsigned)((ms + 999) / 1000);
}

static int conn_open(struct my_store *ms, struct conn **out)
{
    unsigned ct = secs_up(ms->timeout_ms);
    unsigned rt = secs_up(ms->timeout_ms + max_slice(ms->timeout_ms));
    unsigned wt = ct;
    my_bool off = 0, on = 1;
    struct conn *c;
    MYSQL_RES *res;
    MYSQL_ROW row;
    const char *info;

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
    /* A reconnect would silently drop the session's GET_LOCKs. */
    mysql_optionsv(c->db, MYSQL_OPT_RECONNECT, &off);
    mysql_optionsv(c->db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_optionsv(c->db, MYSQL_INIT_COMMAND,
                   "SET time_zone = '+00:00', autocommit = 1");
    /* Fewer gap locks between concurrent INSERTs and DELETEs of a key. */
    mysql_optionsv(c->db, MYSQL_INIT_COMMAND,
                   "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
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
    if (mysql_real_connect(c->db, ms->host, ms->user, ms->password,
                           ms->database, ms->port, ms->socket,
                           CLIENT_FOUND_ROWS) == NULL) {
        unsigned e = mysql_errno(c->db);
        int rc =
            dlock__seterr(e >= 2000 && e < 3000 ? DLOCK_EUNAVAIL : DLOCK_ESTORE,
                          "cannot connect to %s: %s (MySQL error %u)",
                          ms->base.url, mysql_error(c->db), e);

        conn_close(c);
        return rc;
    }
    info = mysql_get_server_info(c->db);
    c->frac = info != NULL && strstr(info, "MariaDB") != NULL;
    if (mysql_query(c->db, "SELECT CONNECTION_ID()") != 0 ||
        (res = mysql_store_result(c->db)) == NULL) {
        int rc = db_err(ms, c, "connect");

        conn_close(c);
        return rc;
    }
    row = mysql_fetch_row(res);
    c->id = row != NULL && row[0] != NULL ? strtoul(row[0], NULL, 10) : 0;
    mysql_free_result(res);
    *out = c;
    return DLOCK_OK;
}

/* A connection for one operation (or one held lock). */
static int conn_get(struct my_store *ms, struct conn **out)
{
    for (;;) {
        struct conn *c;

        pthread_mutex_lock(&ms->mu);
        c = ms->idle;
        if (c != NULL) {
            ms->idle = c->next;
            ms->nidle--;
        }
        pthread_mutex_unlock(&ms->mu);
        if (c == NULL)
            return conn_open(ms, out);
        /* An old idle connection may have died with a server restart. */
        if (dlock__now_ms() - c->idle_since < IDLE_PING_MS ||
            mysql_ping(c->db) == 0) {
            c->next = NULL;
            c->reused = 1;
            *out = c;
            return DLOCK_OK;
        }
        conn_close(c);
    }
}

/* Give a connection back; a broken one (or any after an error whose
 * session state is unknown) is closed instead. */
static void conn_put(struct my_store *ms, struct conn *c, int ok)
{
    if (c == NULL)
        return;
    if (!ok || mysql_errno(c->db) != 0) {
        conn_close(c);
        return;
    }
    c->idle_since = dlock__now_ms();
    c->name = NULL;
    pthread_mutex_lock(&ms->mu);
    if (ms->nidle < MAX_IDLE) {
        c->next = ms->idle;
        ms->idle = c;
        ms->nidle++;
        c = NULL;
    }
    pthread_mutex_unlock(&ms->mu);
    conn_close(c);
}

/* --- SQL text ---------------------------------------------------------- */

struct sb {
    char *p;
    size_t len, cap;
    int oom;
};

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

static void sb_add(struct sb *b, const char *fmt, ...) DLOCK_PRINTF(2, 3);
static void sb_add(struct sb *b, const char *fmt, ...)
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
 * NO_BACKSLASH_ESCAPES. */
static void sb_lit(struct sb *b, struct conn *c, const char *s, size_t len)
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

static void sb_reset(struct sb *b)
{
    b->len = 0;
    if (b->p != NULL)
        b->p[0] = '\0';
}

static void sb_free(struct sb *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* Send one statement.  In autocommit an InnoDB deadlock or lock wait
 * timeout rolls back just that statement, so it is simply sent again. */
static int query(struct conn *c, const char *sql, size_t len)
{
    for (int tries = 0;; tries++) {
        unsigned e;

        if (mysql_real_query(c->db, sql, (unsigned long)len) == 0)
            return 0;
        e = mysql_errno(c->db);
        if ((e != ER_LOCK_DEADLOCK && e != ER_LOCK_WAIT_TIMEOUT) || tries >= 20)
            return -1;
        dlock__sleep_ms(tries < 3 ? 0 : 1);
    }
}

/* Run b's statement.  res (may be NULL) receives its result set. */
static int run(struct my_store *ms, struct conn *c, struct sb *b,
               MYSQL_RES **res, const char *what)
{
    if (res != NULL)
        *res = NULL;
    if (b->oom)
        return dlock__enomem();
    if (query(c, b->p, b->len) != 0)
        return db_err(ms, c, what);
    if (res != NULL) {
        *res = mysql_store_result(c->db);
        if (*res == NULL && mysql_field_count(c->db) != 0)
            return db_err(ms, c, what);
    }
    return DLOCK_OK;
}

/* Run a statement returning one integer (or NULL, or no row: *found 0). */
static int run_int(struct my_store *ms, struct conn *c, struct sb *b,
                   long long *val, int *found, const char *what)
{
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc = run(ms, c, b, &res, what);

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

/* The expiry of a row in server ms: ours carry expires_ms; rows of
 * its-mieger's library only created + ttl, which that library considers
 * obsolete once unix_timestamp() exceeds it. */
#define EXPIRES "COALESCE(expires_ms, (created + ttl + 1) * 1000)"

/* The GET_LOCK key a row's holder took, read from the row: GET_LOCK
 * compares bytes, and a latin1 column (its-mieger's DDL) gives latin1
 * bytes, so the column goes through utf8mb4 like every other key we send.
 * A row found by `name = key` may be another string than our key under a
 * case- or accent-insensitive collation (latin1_swedish_ci: ü = y): its
 * holder is judged by its own key, never by ours. */
#define ROW_KEY "CONVERT(name USING utf8mb4)"

/* What the holder-reading queries select (see struct holder).  MariaDB
 * refuses IS_USED_LOCK() of a name over 192 bytes (and fails the whole
 * query): such a row, which only another tool can have written, reads as
 * not holding the GET_LOCK there. */
#define COLUMNS(used)                                                          \
    "connection_id, owner, lock_acquired, " EXPIRES " - " NOWMS                \
    ", IFNULL(" used ", 0), created, fence, host, pid, "                       \
    "COALESCE(acquired_ms, created * 1000), COALESCE(full_name, name)"

static const char *columns(const struct my_store *ms)
{
    return ms->mariadb
               ? COLUMNS("IF(LENGTH(" ROW_KEY ") > 192, NULL, "
                         "IS_USED_LOCK(" ROW_KEY "))")
               : COLUMNS("IS_USED_LOCK(" ROW_KEY ")");
}

/* A row of the lock table, as `columns` selects it. */
struct holder {
    unsigned long long conn_id, used_by;
    char owner[DLOCK_TOKEN_HEX + 1];
    int has_owner;
    int acquired;
    long long left, created, pid, since;
    unsigned long long fence;
    char host[256];
    char *name; /* malloc'd, list only */
    size_t name_len;
};

static void read_holder(MYSQL_ROW row, unsigned long *lens, struct holder *h,
                        int want_name)
{
    memset(h, 0, sizeof(*h));
    h->conn_id = row[0] ? strtoull(row[0], NULL, 10) : 0;
    h->has_owner = row[1] != NULL;
    dlock__strlcpy(h->owner, row[1] ? row[1] : "", sizeof(h->owner));
    h->acquired = row[2] ? atoi(row[2]) : 0;
    h->left = row[3] ? strtoll(row[3], NULL, 10) : 0;
    h->used_by = row[4] ? strtoull(row[4], NULL, 10) : 0;
    h->created = row[5] ? strtoll(row[5], NULL, 10) : 0;
    h->fence = row[6] ? strtoull(row[6], NULL, 10) : 0;
    dlock__strlcpy(h->host, row[7] ? row[7] : "", sizeof(h->host));
    h->pid = row[8] ? strtoll(row[8], NULL, 10) : 0;
    h->since = row[9] ? strtoll(row[9], NULL, 10) : 0;
    if (want_name && row[10] != NULL) {
        h->name = dlock__strndup(row[10], lens[10]);
        h->name_len = lens[10];
    }
}

/* A row whose holder is gone: lease over, or (GET_LOCK-style rows) the
 * session that took the GET_LOCK no longer holds it. */
static int holder_dead(const struct holder *h)
{
    return h->left <= 0 || (h->acquired && h->used_by != h->conn_id);
}

/* --- open / close / init ---------------------------------------------- */

static void my_close(struct dlock_store *s)
{
    struct my_store *ms = (struct my_store *)s;

    while (ms->idle != NULL) {
        struct conn *c = ms->idle;

        ms->idle = c->next;
        conn_close(c);
    }
    pthread_mutex_destroy(&ms->mu);
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

static void ddl_locks(struct sb *b, const char *t, const char *ix)
{
    sb_add(b,
           "CREATE TABLE IF NOT EXISTS %s (\n"
           "    name          VARCHAR(64) CHARACTER SET utf8mb4 "
           "COLLATE utf8mb4_bin NOT NULL,\n"
           "    connection_id BIGINT NOT NULL,\n"
           "    created       BIGINT NOT NULL,      -- unix seconds\n"
           "    ttl           BIGINT NOT NULL,      -- seconds\n"
           "    lock_acquired TINYINT(1) NOT NULL,\n"
           "    owner         CHAR(32) CHARACTER SET ascii NULL,\n"
           "    fence         BIGINT UNSIGNED NULL,\n"
           "    expires_ms    BIGINT NULL,          -- unix ms\n"
           "    acquired_ms   BIGINT NULL,          -- unix ms\n"
           "    host          VARCHAR(255) CHARACTER SET utf8mb4 NULL,\n"
           "    pid           BIGINT NULL,\n"
           "    full_name     VARBINARY(1024) NULL,\n"
           "    UNIQUE KEY %s (name)\n"
           ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
           t, ix);
}

static void ddl_fences(struct sb *b, const char *f)
{
    sb_add(b,
           "CREATE TABLE IF NOT EXISTS %s (\n"
           "    name  VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin "
           "NOT NULL PRIMARY KEY,\n"
           "    fence BIGINT UNSIGNED NOT NULL  -- highest fence handed out\n"
           ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
           f);
}

static void ddl_alter(struct sb *b, const char *t)
{
    sb_add(b,
           "-- For a table made by its-mieger/mysql-shared-locks, instead:\n"
           "-- ALTER TABLE %s\n"
           "--     ADD COLUMN owner CHAR(32) CHARACTER SET ascii NULL,\n"
           "--     ADD COLUMN fence BIGINT UNSIGNED NULL,\n"
           "--     ADD COLUMN expires_ms BIGINT NULL,\n"
           "--     ADD COLUMN acquired_ms BIGINT NULL,\n"
           "--     ADD COLUMN host VARCHAR(255) CHARACTER SET utf8mb4 NULL,\n"
           "--     ADD COLUMN pid BIGINT NULL,\n"
           "--     ADD COLUMN full_name VARBINARY(1024) NULL;\n"
           "-- and, as its name column is latin1 (names outside latin1, such\n"
           "-- as Greek, CJK or emoji, are refused until then):\n"
           "-- ALTER TABLE %s\n"
           "--     MODIFY name VARCHAR(64) CHARACTER SET utf8mb4 "
           "COLLATE utf8mb4_bin NOT NULL;\n",
           t, t);
}

/* Are both tables there, with our columns? */
static int check_tables(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    MYSQL_RES *res;
    int rc;

    sb_add(&b,
           "SELECT name, connection_id, created, ttl, lock_acquired, "
           "owner, fence, expires_ms, acquired_ms, host, pid, full_name "
           "FROM %s LIMIT 0",
           ms->table);
    rc = run(ms, c, &b, &res, "checking the lock table");
    mysql_free_result(res);
    if (rc == DLOCK_OK) {
        sb_reset(&b);
        sb_add(&b, "SELECT name, fence FROM %s LIMIT 0", ms->fences);
        rc = run(ms, c, &b, &res, "checking the fence table");
        mysql_free_result(res);
    }
    if (rc == DLOCK_OK) {
        MYSQL_ROW row;

        /* For messages only (a name it cannot store is refused by the
         * server): best effort. */
        sb_reset(&b);
        sb_add(&b,
               "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS "
               "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ");
        sb_lit(&b, c, ms->raw_table, strlen(ms->raw_table));
        sb_add(&b, " AND COLUMN_NAME = 'name'");
        if (run(ms, c, &b, &res, "reading the name column's charset") ==
                DLOCK_OK &&
            res != NULL && (row = mysql_fetch_row(res)) != NULL &&
            row[0] != NULL)
            dlock__strlcpy(ms->name_charset, row[0],
                           sizeof(ms->name_charset));
        mysql_free_result(res);
        dlock__clearerr();
    }
    sb_free(&b);
    return rc;
}

static int create_tables(struct my_store *ms, struct conn *c)
{
    struct sb b = {0};
    int rc = DLOCK_OK;

    for (int i = 0; i < 2 && rc == DLOCK_OK; i++) {
        sb_reset(&b);
        if (i == 0)
            ddl_locks(&b, ms->table, ms->index);
        else
            ddl_fences(&b, ms->fences);
        if (b.oom) {
            rc = dlock__enomem();
            break;
        }
        if (query(c, b.p, b.len) == 0)
            continue;
        if (mysql_errno(c->db) == ER_TABLEACCESS_DENIED_ERROR ||
            mysql_errno(c->db) == ER_DBACCESS_DENIED_ERROR)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "the lock tables %s and %s are missing in %s "
                               "and this user may not create them: ask a "
                               "DBA to run the DDL of `dlock init --print` "
                               "(%s)",
                               ms->table, ms->fences, ms->base.url,
                               mysql_error(c->db));
        else
            rc = db_err(ms, c, "creating the lock tables");
    }
    sb_free(&b);
    return rc;
}

/* On open: use the tables if they are there (a DBA may have made them for
 * a user without CREATE), else create them. */
static int ensure_tables(struct my_store *ms, struct conn *c)
{
    int rc = check_tables(ms, c);

    if (rc == DLOCK_OK || mysql_errno(c->db) != ER_NO_SUCH_TABLE)
        return rc;
    rc = create_tables(ms, c);
    return rc == DLOCK_OK ? check_tables(ms, c) : rc;
}

static int my_init(struct dlock_store *s)
{
    struct my_store *ms = (struct my_store *)s;
    struct conn *c;
    int rc = conn_get(ms, &c);

    if (rc != DLOCK_OK)
        return rc;
    rc = create_tables(ms, c);
    if (rc == DLOCK_OK)
        rc = check_tables(ms, c);
    conn_put(ms, c, rc == DLOCK_OK);
    return rc;
}

static int valid_table(const char *t)
{
    size_t n = strlen(t);

    if (n == 0 || n > TABLE_MAX - 7)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '$'))
            return 0;
    }
    return 1;
}

/* Table and quote settings (shared by open and ddl). */
static int parse_names(const struct dlock_url *u, char *t, char *f, char *ix,
                       char *raw)
{
    const char *table = dlock__url_param(u, "table");
    const char *quote = dlock__url_param(u, "quote");
    char q = '`';

    if (table == NULL)
        table = "shared_locks";
    if (!valid_table(table))
        return dlock__seterr(DLOCK_EINVAL,
                             "table '%s' in %s: use 1..57 letters, digits, "
                             "'_' or '$'",
                             table, u->redacted);
    if (quote != NULL) {
        if (strcmp(quote, "ansi") == 0)
            q = '"';
        else if (strcmp(quote, "backtick") != 0 && strcmp(quote, "") != 0)
            return dlock__seterr(DLOCK_EINVAL,
                                 "quote=%s in %s: use quote=ansi or "
                                 "quote=backtick",
                                 quote, u->redacted);
    }
    snprintf(raw, TABLE_MAX + 1, "%s", table);
    snprintf(t, TABLE_MAX + 3, "%c%s%c", q, table, q);
    snprintf(f, TABLE_MAX + 10, "%c%s_fences%c", q, table, q);
    snprintf(ix, TABLE_MAX + 7, "%c%s_ix1%c", q, table, q);
    return DLOCK_OK;
}

static int dup_opt(char **dst, const char *src)
{
    if (src == NULL || src[0] == '\0')
        return DLOCK_OK;
    *dst = dlock__strdup(src);
    return *dst != NULL ? DLOCK_OK : dlock__enomem();
}

static int my_open(struct dlock_store **out, const struct dlock_url *u)
{
    static const char *const known[] = {
        "timeout", "table",  "quote",    "mode",    "socket",
        "ssl",     "ssl-ca", "ssl-cert", "ssl-key", NULL};
    const char *mode, *ssl, *sock;
    struct my_store *ms;
    struct conn *c = NULL;
    int rc;

    rc = dlock__url_check_params(u, known);
    if (rc != DLOCK_OK)
        return rc;
    pthread_once(&lib_once, lib_init);
    if (lib_rc != 0)
        return dlock__seterr(DLOCK_ESTORE,
                             "cannot initialise the MariaDB client library");
    ms = calloc(1, sizeof(*ms));
    if (ms == NULL)
        return dlock__enomem();
    pthread_mutex_init(&ms->mu, NULL);
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
    rc = parse_names(u, ms->table, ms->fences, ms->index, ms->raw_table);
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
    rc = conn_get(ms, &c);
    if (rc != DLOCK_OK)
        goto fail;
    ms->mariadb = c->frac;
    rc = ensure_tables(ms, c);
    conn_put(ms, c, rc == DLOCK_OK);
    if (rc != DLOCK_OK)
        goto fail;
    *out = &ms->base;
    return DLOCK_OK;
fail:
    my_close(&ms->base);
    return rc;
}

static int my_ddl(char **out, const struct dlock_url *u)
{
    char t[TABLE_MAX + 3], f[TABLE_MAX + 10], ix[TABLE_MAX + 7],
        raw[TABLE_MAX + 1];
    struct sb b = {0};
    int rc = parse_names(u, t, f, ix, raw);

    if (rc != DLOCK_OK)
        return rc;
    ddl_locks(&b, t, ix);
    sb_add(&b, ";\n");
    ddl_fences(&b, f);
    sb_add(&b, ";\n");
    ddl_alter(&b, t);
    if (b.oom) {
        sb_free(&b);
        return dlock__enomem();
    }
    *out = b.p;
    return DLOCK_OK;
}

/* --- acquiring ---------------------------------------------------------- */

static int lost(const struct dlock_lock *lk, const char *why)
{
    return dlock__seterr(DLOCK_LOST, "lock '%s' is no longer ours: %s",
                         lk->name, why);
}

static void sb_key(struct sb *b, struct conn *c, const struct my_lock *ml)
{
    sb_lit(b, c, ml->key, ml->key_len);
}

/* Best effort: drop our GET_LOCK (once) on this connection. */
static void release_getlock(struct my_store *ms, struct conn *c,
                            const struct my_lock *ml)
{
    struct sb b = {0};
    long long v;
    int found;

    sb_add(&b, "SELECT RELEASE_LOCK(");
    sb_key(&b, c, ml);
    sb_add(&b, ")");
    (void)run_int(ms, c, &b, &v, &found, "RELEASE_LOCK");
    sb_free(&b);
}

/* Delete our own row (whatever state it is in). */
static int delete_own_row(struct my_store *ms, struct conn *c,
                          const struct dlock_lock *lk, const struct my_lock *ml)
{
    struct sb b = {0};
    int rc;

    sb_add(&b, "DELETE FROM %s WHERE name = ", ms->table);
    sb_key(&b, c, ml);
    sb_add(&b, " AND owner = '%s'", lk->token);
    rc = run(ms, c, &b, NULL, "deleting a lock row");
    sb_free(&b);
    return rc;
}

/* End the session conn_id that holds ml's GET_LOCK past its lease, so it
 * loses the GET_LOCK and its pending work fails.  *killed is set when the
 * KILL was sent. */
static int kill_holder(struct my_store *ms, struct conn *c,
                       const struct my_lock *ml, unsigned long long conn_id,
                       int *killed)
{
    char sql[64];
    int n = snprintf(sql, sizeof(sql), "KILL CONNECTION %llu", conn_id);

    if (query(c, sql, (size_t)n) == 0) {
        *killed = 1;
        return DLOCK_OK;
    }
    if (mysql_errno(c->db) == ER_KILL_DENIED_ERROR)
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%.*s': its holder's lease ran out "
                             "but this user may not KILL its connection "
                             "%llu (needs CONNECTION ADMIN or SUPER): %s",
                             (int)ml->key_len, ml->key, conn_id,
                             mysql_error(c->db));
    if (mysql_errno(c->db) != ER_NO_SUCH_THREAD)
        return db_err(ms, c, "KILL of an expired holder");
    return DLOCK_OK;
}

/* Take over a dead holder's row: delete exactly that row if it is still
 * dead, then KILL its session if (and only if) that session still holds
 * our key's GET_LOCK.  *killed is set when a KILL was sent. */
static int take_over(struct my_store *ms, struct conn *c,
                     const struct my_lock *ml, const struct holder *h,
                     int *killed)
{
    struct sb b = {0};
    long long used = 0;
    int found, rc;

    sb_add(&b, "DELETE FROM %s WHERE name = ", ms->table);
    sb_key(&b, c, ml);
    sb_add(&b, " AND connection_id = %llu AND created = %lld AND ", h->conn_id,
           h->created);
    if (h->has_owner)
        sb_add(&b, "owner = '%s'", h->owner);
    else
        sb_add(&b, "owner IS NULL");
    sb_add(&b, " AND (" EXPIRES " <= " NOWMS " OR (lock_acquired AND "
               "IFNULL(IS_USED_LOCK(" ROW_KEY "), 0) <> connection_id))");
    rc = run(ms, c, &b, NULL, "taking over an expired lock");
    if (rc != DLOCK_OK || mysql_affected_rows(c->db) != 1 || h->conn_id == 0 ||
        h->conn_id == c->id) {
        sb_free(&b);
        return rc;
    }
    sb_reset(&b);
    sb_add(&b, "SELECT IFNULL(IS_USED_LOCK(");
    sb_key(&b, c, ml);
    sb_add(&b, "), 0)");
    rc = run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    sb_free(&b);
    if (rc == DLOCK_OK && found && (unsigned long long)used == h->conn_id)
        rc = kill_holder(ms, c, ml, h->conn_id, killed);
    return rc;
}

/* The row holding ml's key, if any (*found). */
static int read_row(struct my_store *ms, struct conn *c,
                    const struct my_lock *ml, struct holder *h, int *found)
{
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    *found = 0;
    sb_add(&b, "SELECT %s FROM %s WHERE name = ", columns(ms), ms->table);
    sb_key(&b, c, ml);
    rc = run(ms, c, &b, &res, "acquire");
    sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    row = res != NULL ? mysql_fetch_row(res) : NULL;
    if (row != NULL) {
        read_holder(row, mysql_fetch_lengths(res), h, 0);
        *found = 1;
    }
    mysql_free_result(res);
    return DLOCK_OK;
}

/* Take a fence and insert our row with it, in one transaction: one
 * commit (the cost of a lock is mostly its commits).  *dup: a row for the
 * key is there already (nothing changed). */
static int insert_row(struct my_store *ms, struct conn *c,
                      struct dlock_lock *lk, const struct my_lock *ml, int *dup)
{
    struct sb b = {0};
    uint64_t fence = 0;
    int rc = DLOCK_OK;

    for (int tries = 0;; tries++) {
        unsigned e;

        *dup = 0;
        if (mysql_real_query(c->db, "START TRANSACTION", 17) != 0) {
            rc = db_err(ms, c, "acquire");
            break;
        }
        /* LAST_INSERT_ID(expr) hands the new value back to this session
         * only: an atomic per-name increment in one statement. */
        sb_reset(&b);
        sb_add(&b, "INSERT INTO %s (name, fence) VALUES (", ms->fences);
        sb_key(&b, c, ml);
        sb_add(&b, ", LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE "
                   "fence = LAST_INSERT_ID(fence + 1)");
        if (b.oom) {
            rc = dlock__enomem();
            goto rollback;
        }
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0)
            goto failed;
        fence = (uint64_t)mysql_insert_id(c->db);
        sb_reset(&b);
        sb_add(&b,
               "INSERT INTO %s (name, connection_id, created, ttl, "
               "lock_acquired, owner, fence, expires_ms, acquired_ms, host, "
               "pid, full_name) VALUES (",
               ms->table);
        sb_key(&b, c, ml);
        sb_add(&b,
               ", CONNECTION_ID(), UNIX_TIMESTAMP(), %lld, %d, '%s', "
               "%llu, " NOWMS " + %lld, " NOWMS ", ",
               (long long)((lk->ttl_ms + 999) / 1000), ms->lease_mode ? 0 : 1,
               lk->token, (unsigned long long)fence, (long long)lk->ttl_ms);
        sb_lit(&b, c, dlock__hostname(), strlen(dlock__hostname()));
        sb_add(&b, ", %lld, ", (long long)getpid());
        sb_lit(&b, c, lk->name, lk->name_len);
        sb_add(&b, ")");
        if (b.oom) {
            rc = dlock__enomem();
            goto rollback;
        }
        if (mysql_real_query(c->db, b.p, (unsigned long)b.len) != 0) {
            if (mysql_errno(c->db) == ER_DUP_ENTRY) {
                *dup = 1;
                rc = DLOCK_OK;
                goto rollback;
            }
            goto failed;
        }
        if (mysql_warning_count(c->db) != 0) {
            /* Without a strict sql_mode the server stores what the column
             * cannot hold as '?' and warns: that row is not our key.  A
             * MyISAM table keeps it through ROLLBACK, so it goes by its
             * owner token (the name in it is not ours to match). */
            (void)mysql_real_query(c->db, "ROLLBACK", 8);
            sb_reset(&b);
            sb_add(&b, "DELETE FROM %s WHERE owner = '%s'", ms->table,
                   lk->token);
            (void)run(ms, c, &b, NULL, "deleting a lock row");
            rc = unstorable(ms, lk->name,
                            "the server stored it with substitutions");
            break;
        }
        if (mysql_real_query(c->db, "COMMIT", 6) != 0)
            goto failed;
        if (fence == 0) {
            rc = dlock__seterr(DLOCK_ESTORE,
                               "taking a fence on %s: the "
                               "server returned no value",
                               ms->base.url);
            break; /* committed a row with no fence: caller cleans up */
        }
        lk->fence = fence;
        rc = DLOCK_OK;
        break;
    failed:
        e = mysql_errno(c->db);
        rc = db_err(ms, c, "acquire");
        (void)mysql_real_query(c->db, "ROLLBACK", 8);
        /* A deadlock or lock wait timeout undid the whole transaction:
         * run it again. */
        if ((e == ER_LOCK_DEADLOCK || e == ER_LOCK_WAIT_TIMEOUT) && tries < 20)
            continue;
        break;
    rollback:
        (void)mysql_real_query(c->db, "ROLLBACK", 8);
        break;
    }
    sb_free(&b);
    return rc;
}

/* Insert our row (in lock mode: holding the key's GET_LOCK).  DLOCK_OK:
 * inserted; DLOCK_BUSY: a live holder has it (*retry_ms its lease left). */
static int claim_row(struct my_store *ms, struct conn *c, struct dlock_lock *lk,
                     const struct my_lock *ml, int64_t *retry_ms)
{
    int rc = DLOCK_BUSY;

    for (int tries = 0; tries < 4; tries++) {
        struct holder h;
        int dup, found, killed = 0;

        rc = insert_row(ms, c, lk, ml, &dup);
        if (rc != DLOCK_OK || !dup)
            break;
        /* Taken: look at the holder. */
        rc = read_row(ms, c, ml, &h, &found);
        if (rc != DLOCK_OK)
            break;
        rc = DLOCK_BUSY;
        if (!found)
            continue; /* gone meanwhile: insert again */
        /* While we hold the GET_LOCK, a row marked acquired is dead: its
         * session does not hold the GET_LOCK any more. */
        if (!holder_dead(&h)) {
            *retry_ms = h.left;
            break;
        }
        rc = take_over(ms, c, ml, &h, &killed);
        if (rc != DLOCK_OK)
            break;
        rc = DLOCK_BUSY;
    }
    return rc;
}

/* Remember who holds the key with a row (see rowless()). */
static void saw_row(struct my_lock *ml, const struct holder *h)
{
    if (h->conn_id == 0 || h->used_by != h->conn_id)
        return;
    ml->seen_conn = h->conn_id;
    ml->seen_until = dlock__now_ms() + (h->left > 0 ? h->left : 0);
    ml->rowless_since = 0;
}

/* The key's GET_LOCK is held and no row is there.  A session this acquire
 * saw holding it with a row lost that row to someone else (its-mieger's
 * clean-up of an expired row, `release --force` without KILL rights, a
 * DBA): it has no lease left to honour once that row's lease is over, and
 * is KILLed then like any holder past its lease, but not before it has
 * been seen without a row for ?timeout= (a session taking the key again
 * holds the GET_LOCK for a moment before its row is in).  Any other
 * session never had a row: a GET_LOCK-only client (an application using
 * GET_LOCK directly, mpyw/laravel-database-advisory-lock) is a legitimate
 * holder with no lease, waited for without bound, never KILLed.  *retry_ms
 * is when to look again (-1: when it lets go). */
static int rowless(struct my_store *ms, struct conn *c, struct my_lock *ml,
                   int64_t *retry_ms, int *killed)
{
    struct sb b = {0};
    struct holder h;
    long long used = 0;
    int64_t now, bound;
    int found, rc;

    sb_add(&b, "SELECT IFNULL(IS_USED_LOCK(");
    sb_key(&b, c, ml);
    sb_add(&b, "), 0)");
    rc = run_int(ms, c, &b, &used, &found, "IS_USED_LOCK");
    sb_free(&b);
    if (rc != DLOCK_OK)
        return rc;
    if (used == 0) {
        *retry_ms = 0; /* let go meanwhile */
        return DLOCK_BUSY;
    }
    if ((unsigned long long)used != ml->seen_conn) {
        ml->rowless_since = 0;
        return dlock__seterr(DLOCK_BUSY,
                             "lock '%s' is held by MySQL session %lld "
                             "with GET_LOCK only, with no row in %s (not "
                             "a lease this acquire saw): waiting for it "
                             "to let go, without a lease to bound the wait",
                             c->name ? c->name : ml->key, used,
                             ms->raw_table);
    }
    now = dlock__now_ms();
    if (ml->rowless_since == 0)
        ml->rowless_since = now;
    bound = ml->rowless_since + ms->timeout_ms;
    if (bound < ml->seen_until)
        bound = ml->seen_until;
    if (now < bound) {
        *retry_ms = bound - now;
        return DLOCK_BUSY;
    }
    /* Still no row (a row back means a holder with a lease again)? */
    rc = read_row(ms, c, ml, &h, &found);
    if (rc != DLOCK_OK)
        return rc;
    if (found) {
        *retry_ms = 0;
        return DLOCK_BUSY;
    }
    return kill_holder(ms, c, ml, ml->seen_conn, killed);
}

/* GET_LOCK(key, wait_ms): *got 1 if this session now holds it. */
static int get_lock(struct my_store *ms, struct conn *c,
                    const struct my_lock *ml, int64_t wait_ms, int *got)
{
    struct sb b = {0};
    long long v = 0;
    int found, rc;

    sb_add(&b, "SELECT GET_LOCK(");
    sb_key(&b, c, ml);
    /* MariaDB takes fractional seconds; MySQL whole ones (rounded down
     * here, never up past the caller's deadline). */
    if (c->frac)
        sb_add(&b, ", %lld.%03lld)", (long long)(wait_ms / 1000),
               (long long)(wait_ms % 1000));
    else
        sb_add(&b, ", %lld)", (long long)(wait_ms / 1000));
    rc = run_int(ms, c, &b, &v, &found, "GET_LOCK");
    sb_free(&b);
    if (rc == DLOCK_OK && !found)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "GET_LOCK failed on %s (the "
                           "server returned NULL)",
                           ms->base.url);
    *got = rc == DLOCK_OK && v == 1;
    return rc;
}

/* One attempt on ml->c: GET_LOCK(key, 0), then our row.  have_gl: this
 * session holds the key's GET_LOCK already (from a wait).  Unless we
 * return DLOCK_OK, the GET_LOCK is given up again. */
static int attempt(struct my_store *ms, struct dlock_lock *lk,
                   struct my_lock *ml, int have_gl, int64_t deadline,
                   int64_t *retry_ms)
{
    struct conn *c = ml->c;
    int rc, got;

    if (!ms->lease_mode && !have_gl) {
        rc = get_lock(ms, c, ml, 0, &got);
        if (rc != DLOCK_OK)
            return rc;
        if (!got) {
            struct holder h;
            int found, killed = 0;
            int64_t wait;

            /* Someone holds the GET_LOCK: live, or past its lease? */
            rc = read_row(ms, c, ml, &h, &found);
            if (rc != DLOCK_OK)
                return rc;
            if (!found) {
                rc = rowless(ms, c, ml, retry_ms, &killed);
            } else if (!holder_dead(&h)) {
                saw_row(ml, &h);
                *retry_ms = h.left;
                return DLOCK_BUSY;
            } else {
                saw_row(ml, &h);
                rc = take_over(ms, c, ml, &h, &killed);
            }
            if (rc != DLOCK_OK || !killed)
                return rc != DLOCK_OK ? rc : DLOCK_BUSY;
            /* A KILLed session lets go of its GET_LOCK a moment later. */
            wait = dlock__remaining_ms(deadline);
            if (wait > 2000)
                wait = 2000;
            if (wait > max_slice(ms->timeout_ms))
                wait = max_slice(ms->timeout_ms);
            rc = get_lock(ms, c, ml, wait, &got);
            if (rc != DLOCK_OK)
                return rc;
            if (!got)
                return DLOCK_BUSY;
        }
    }
    rc = claim_row(ms, c, lk, ml, retry_ms);
    if (rc != DLOCK_OK) {
        if (rc != DLOCK_BUSY && mysql_errno(c->db) == 0)
            (void)delete_own_row(ms, c, lk, ml); /* committed, unusable */
        if (!ms->lease_mode)
            release_getlock(ms, c, ml);
    }
    return rc;
}

/* attempt(), once more on a fresh connection if a pooled one turns out to
 * have died while idle (a server restart, wait_timeout): the first use
 * after that must not fail. */
static int attempt_fresh(struct my_store *ms, struct dlock_lock *lk,
                         struct my_lock *ml, int64_t deadline,
                         int64_t *retry_ms)
{
    int rc = attempt(ms, lk, ml, 0, deadline, retry_ms);

    if (rc == DLOCK_EUNAVAIL && ml->c->reused &&
        is_conn_error(mysql_errno(ml->c->db))) {
        conn_close(ml->c);
        ml->c = NULL;
        rc = conn_open(ms, &ml->c);
        if (rc == DLOCK_OK) {
            ml->c->name = lk->name;
            rc = attempt(ms, lk, ml, 0, deadline, retry_ms);
        }
    }
    if (ml->c != NULL)
        ml->c->reused = 0;
    return rc;
}

static int new_priv(struct my_store *ms, struct dlock_lock *lk,
                    struct my_lock **out)
{
    struct my_lock *ml = calloc(1, sizeof(*ml));
    int rc;

    if (ml == NULL)
        return dlock__enomem();
    ml->key_len = dlock__mysql_key(lk->name, lk->name_len, ms->mariadb, ml->key);
    rc = conn_get(ms, &ml->c);
    if (rc != DLOCK_OK) {
        free(ml);
        return rc;
    }
    ml->c->name = lk->name;
    *out = ml;
    return DLOCK_OK;
}

/* Done with ml: in lease mode or after failure its connection goes back
 * to the pool (or is closed if it saw an error). */
static void free_priv(struct my_store *ms, struct my_lock *ml, int ok)
{
    if (ml == NULL)
        return;
    conn_put(ms, ml->c, ok);
    free(ml);
}

/* After an attempt: keep ml on success, else give it back. */
static int settle(struct my_store *ms, struct dlock_lock *lk,
                  struct my_lock *ml, int rc)
{
    if (rc == DLOCK_OK) {
        if (ms->lease_mode) {
            /* Nothing is pinned in lease mode. */
            conn_put(ms, ml->c, 1);
            ml->c = NULL;
        }
        pthread_mutex_lock(&ms->mu);
        ml->next = ms->held;
        if (ms->held != NULL)
            ms->held->prev = ml;
        ms->held = ml;
        pthread_mutex_unlock(&ms->mu);
        lk->priv = ml;
        return rc;
    }
    free_priv(ms, ml, rc == DLOCK_BUSY);
    return rc;
}

static int my_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t deadline, int64_t *retry_ms)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock *ml = NULL;
    int rc = new_priv(ms, lk, &ml);

    if (rc != DLOCK_OK)
        return rc;
    rc = attempt_fresh(ms, lk, ml, deadline, retry_ms);
    return settle(ms, lk, ml, rc);
}

/* Wait natively: GET_LOCK(key, slice) sleeps on the server until the
 * holder lets go or dies; slices end when the holder's lease does (so it
 * is taken over then) and at the caller's deadline. */
static int my_wait_acquire(struct dlock_store *s, struct dlock_lock *lk,
                           int64_t deadline)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock *ml = NULL;
    unsigned spins = 0;
    int rc = new_priv(ms, lk, &ml);

    if (rc != DLOCK_OK)
        return rc;
    for (;;) {
        int64_t retry = -1, rem, slice, t0 = dlock__now_ms();
        int got = 0;

        lk->lease_end = t0 + lk->ttl_ms;
        rc = attempt_fresh(ms, lk, ml, deadline, &retry);
        if (rc != DLOCK_BUSY)
            break;
        rem = dlock__remaining_ms(deadline);
        if (rem == 0)
            break;
        slice = max_slice(ms->timeout_ms);
        if (rem < slice)
            slice = rem;
        if (retry >= 0 && retry + 2 < slice)
            slice = retry + 2;
        if (!ml->c->frac && slice < 1000) {
            /* The sub-second tail on MySQL, whose GET_LOCK takes whole
             * seconds only: poll with jittered backoff.  (Lease mode never
             * gets here: the core polls for it.) */
            int64_t d = dlock__backoff_ms(spins++, dlock__rand32());

            dlock__sleep_ms(d < slice ? d : slice);
            continue;
        }
        t0 = dlock__now_ms();
        rc = get_lock(ms, ml->c, ml, slice, &got);
        if (rc != DLOCK_OK)
            break;
        if (!got)
            continue; /* slice over: look at the holder again */
        lk->lease_end = t0 + lk->ttl_ms;
        rc = attempt(ms, lk, ml, 1, deadline, &retry);
        if (rc != DLOCK_BUSY)
            break;
        /* The GET_LOCK was free but a row is still there (a lease-mode or
         * half-made holder): do not spin on it. */
        rem = dlock__remaining_ms(deadline);
        if (rem == 0)
            break;
        {
            int64_t d = dlock__backoff_ms(spins++, dlock__rand32());

            dlock__sleep_ms(d < rem ? d : rem);
        }
    }
    return settle(ms, lk, ml, rc);
}

/* --- held locks --------------------------------------------------------- */

/* The connection for calls on a held lock: the pinned one, or in lease
 * mode one from the pool (given back by done_conn). */
static int lock_conn(struct my_store *ms, struct my_lock *ml, struct conn **c)
{
    if (ml->c != NULL) {
        *c = ml->c;
        return DLOCK_OK;
    }
    return conn_get(ms, c);
}

static void done_conn(struct my_store *ms, struct my_lock *ml, struct conn *c,
                      int ok)
{
    if (c != ml->c)
        conn_put(ms, c, ok);
}

/* A pooled connection that died while idle (a server restart, a KILL,
 * wait_timeout) fails its first statement.  For a statement that needs no
 * session of its own (never a pinned one), swap in a fresh connection: 1
 * when the caller should build and run its statement once more. */
static int reopen_pooled(struct my_store *ms, struct my_lock *ml,
                         struct conn **c, int rc)
{
    struct conn *n;

    if (rc != DLOCK_EUNAVAIL || *c == ml->c || !(*c)->reused ||
        !is_conn_error(mysql_errno((*c)->db)) ||
        conn_open(ms, &n) != DLOCK_OK)
        return 0;
    conn_close(*c);
    *c = n;
    return 1;
}

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
    conn_close(ml->c);
    ml->c = NULL;
    return lost(lk, why);
}

/* WHERE clause: lk's row, still live (and its GET_LOCK still ours). */
static void sb_own(struct sb *b, struct my_store *ms, struct conn *c,
                   const struct dlock_lock *lk, const struct my_lock *ml)
{
    sb_add(b, " WHERE name = ");
    sb_key(b, c, ml);
    sb_add(b, " AND owner = '%s' AND " EXPIRES " > " NOWMS, lk->token);
    if (!ms->lease_mode) {
        /* The key we took, not the column (see ROW_KEY). */
        sb_add(b, " AND connection_id = CONNECTION_ID() AND IS_USED_LOCK(");
        sb_key(b, c, ml);
        sb_add(b, ") = CONNECTION_ID()");
    }
}

/* After finding the lock lost: tidy our row and GET_LOCK away. */
static void tidy_lost(struct my_store *ms, struct conn *c,
                      const struct dlock_lock *lk, struct my_lock *ml)
{
    (void)delete_own_row(ms, c, lk, ml);
    if (!ms->lease_mode && ml->c != NULL) {
        long long v;
        int found;
        struct sb b = {0};

        /* Only if this session still holds it (after a takeover it does
         * not, and RELEASE_LOCK would just say so). */
        sb_add(&b, "SELECT IF(IS_USED_LOCK(");
        sb_key(&b, c, ml);
        sb_add(&b, ") = CONNECTION_ID(), RELEASE_LOCK(");
        sb_key(&b, c, ml);
        sb_add(&b, "), 0)");
        (void)run_int(ms, c, &b, &v, &found, "RELEASE_LOCK");
        sb_free(&b);
    }
}

static int my_extend(struct dlock_store *s, struct dlock_lock *lk,
                     int64_t ttl_ms)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock *ml = lk->priv;
    struct conn *c;
    struct sb b = {0};
    int rc;

    if (ml == NULL || (!ms->lease_mode && ml->c == NULL))
        return lost(lk, "its connection was lost earlier");
    rc = lock_conn(ms, ml, &c);
    if (rc != DLOCK_OK)
        return rc;
    do {
        sb_add(&b,
               "UPDATE %s SET expires_ms = " NOWMS " + %lld, created = "
               "UNIX_TIMESTAMP(), ttl = %lld",
               ms->table, (long long)ttl_ms,
               (long long)((ttl_ms + 999) / 1000));
        sb_own(&b, ms, c, lk, ml);
        rc = run(ms, c, &b, NULL, "extend");
        sb_free(&b);
    } while (reopen_pooled(ms, ml, &c, rc));
    if (rc == DLOCK_OK && mysql_affected_rows(c->db) != 1) {
        tidy_lost(ms, c, lk, ml);
        rc = lost(lk, "its lease ran out or it was broken");
    } else if (rc != DLOCK_OK && c == ml->c) {
        rc = pinned_failed(ms, lk, ml);
        c = NULL;
    }
    done_conn(ms, ml, c, rc == DLOCK_OK || rc == DLOCK_LOST);
    return rc;
}

static int my_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                       int64_t *left_ms)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock *ml = lk->priv;
    struct conn *c;
    struct sb b = {0};
    long long left = 0;
    int found, rc;

    if (ml == NULL || (!ms->lease_mode && ml->c == NULL))
        return lost(lk, "its connection was lost earlier");
    rc = lock_conn(ms, ml, &c);
    if (rc != DLOCK_OK)
        return rc;
    do {
        sb_add(&b, "SELECT " EXPIRES " - " NOWMS " FROM %s", ms->table);
        sb_own(&b, ms, c, lk, ml);
        rc = run_int(ms, c, &b, &left, &found, "assert_ttl");
        sb_free(&b);
    } while (reopen_pooled(ms, ml, &c, rc));
    if (rc == DLOCK_OK && !found) {
        tidy_lost(ms, c, lk, ml);
        rc = lost(lk, "its lease ran out or it was broken");
    } else if (rc == DLOCK_OK) {
        *left_ms = left > 0 ? left : 1;
    } else if (c == ml->c) {
        rc = pinned_failed(ms, lk, ml);
        c = NULL;
    }
    done_conn(ms, ml, c, rc == DLOCK_OK || rc == DLOCK_LOST);
    return rc;
}

static int my_release(struct dlock_store *s, struct dlock_lock *lk)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock *ml = lk->priv;
    struct conn *c;
    struct sb b = {0};
    int rc, ok = 0;

    lk->priv = NULL;
    if (ml == NULL)
        return lost(lk, "it was not held");
    pthread_mutex_lock(&ms->mu);
    if (ml->prev != NULL)
        ml->prev->next = ml->next;
    else
        ms->held = ml->next;
    if (ml->next != NULL)
        ml->next->prev = ml->prev;
    pthread_mutex_unlock(&ms->mu);
    if (!ms->lease_mode && ml->c == NULL) {
        free(ml);
        return lost(lk, "its connection was lost earlier");
    }
    rc = lock_conn(ms, ml, &c);
    if (rc != DLOCK_OK) {
        free(ml);
        return rc;
    }
    /* Delete the row first, then drop the GET_LOCK: a waiter woken by the
     * GET_LOCK finds the row gone. */
    do {
        sb_add(&b, "DELETE FROM %s", ms->table);
        sb_own(&b, ms, c, lk, ml);
        rc = run(ms, c, &b, NULL, "release");
        sb_free(&b);
    } while (reopen_pooled(ms, ml, &c, rc));
    if (rc == DLOCK_OK) {
        if (mysql_affected_rows(c->db) != 1) {
            tidy_lost(ms, c, lk, ml);
            rc = lost(lk, "its lease ran out or it was broken");
        } else if (!ms->lease_mode) {
            release_getlock(ms, c, ml);
        }
        ok = mysql_errno(c->db) == 0;
    } else if (c == ml->c) {
        rc = pinned_failed(ms, lk, ml);
        c = NULL;
    }
    if (c != NULL) {
        if (c == ml->c)
            ml->c = NULL;
        conn_put(ms, c, ok);
    }
    free(ml);
    return rc;
}

/* --- status, list, force_release ---------------------------------------- */

static void fill_info(dlock_info *out, const struct holder *h)
{
    out->held = 1;
    out->holders = 1;
    out->shared = 0;
    out->ttl_ms = h->left;
    out->pid = h->pid;
    out->since_ms = h->since;
    dlock__strlcpy(out->host, h->host, sizeof(out->host));
}

static int my_status(struct dlock_store *s, const char *name, dlock_info *out)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock ml;
    struct conn *c;
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    int rc;

    ml.key_len = dlock__mysql_key(name, strlen(name), ms->mariadb, ml.key);
    rc = conn_get(ms, &c);
    if (rc != DLOCK_OK)
        return rc;
    c->name = name;
    sb_add(&b, "SELECT %s, (SELECT fence FROM %s WHERE name = ", columns(ms),
           ms->fences);
    sb_key(&b, c, &ml);
    sb_add(&b, "), IFNULL(IS_USED_LOCK(");
    sb_key(&b, c, &ml);
    sb_add(&b,
           "), 0) FROM (SELECT 1) AS one LEFT JOIN %s ON name = ", ms->table);
    sb_key(&b, c, &ml);
    rc = run(ms, c, &b, &res, "status");
    sb_free(&b);
    if (rc == DLOCK_OK && res != NULL) {
        row = mysql_fetch_row(res);
        if (row != NULL) {
            struct holder h;

            out->fence = row[11] ? strtoull(row[11], NULL, 10) : 0;
            if (row[0] != NULL) {
                read_holder(row, mysql_fetch_lengths(res), &h, 0);
                if (!holder_dead(&h))
                    fill_info(out, &h);
            } else if (!ms->lease_mode && row[12] != NULL &&
                       strcmp(row[12], "0") != 0) {
                /* A GET_LOCK-only holder (an application using the key
                 * directly): held, nothing more known. */
                out->held = 1;
                out->holders = 1;
            }
        }
        mysql_free_result(res);
    }
    conn_put(ms, c, rc == DLOCK_OK);
    return rc;
}

static int my_list(struct dlock_store *s, const char *prefix,
                   int (*cb)(const dlock_info *info, void *payload),
                   void *payload)
{
    struct my_store *ms = (struct my_store *)s;
    size_t plen = strlen(prefix), n = 0, cap = 0;
    dlock_info *infos = NULL;
    struct conn *c;
    struct sb b = {0};
    MYSQL_RES *res = NULL;
    MYSQL_ROW row;
    int rc;

    rc = conn_get(ms, &c);
    if (rc != DLOCK_OK)
        return rc;
    sb_add(&b,
           "SELECT %s, (SELECT f.fence FROM %s AS f WHERE f.name = "
           "t.name) FROM %s AS t",
           columns(ms), ms->fences, ms->table);
    rc = run(ms, c, &b, &res, "list");
    sb_free(&b);
    /* Collect first: the callback runs without a connection held. */
    while (rc == DLOCK_OK && res != NULL && (row = mysql_fetch_row(res))) {
        struct holder h;

        read_holder(row, mysql_fetch_lengths(res), &h, 1);
        if (row[10] != NULL && h.name == NULL) {
            rc = dlock__enomem();
            break;
        }
        if (h.name == NULL || holder_dead(&h) || h.name_len < plen ||
            h.name_len > DLOCK_NAME_MAX || memcmp(h.name, prefix, plen) != 0) {
            free(h.name);
            continue;
        }
        if (n == cap) {
            dlock_info *grown =
                realloc(infos, (cap ? cap * 2 : 16) * sizeof(*infos));

            if (grown == NULL) {
                free(h.name);
                rc = dlock__enomem();
                break;
            }
            infos = grown;
            cap = cap ? cap * 2 : 16;
        }
        memset(&infos[n], 0, sizeof(infos[n]));
        memcpy(infos[n].name, h.name, h.name_len);
        infos[n].name[h.name_len] = '\0';
        fill_info(&infos[n], &h);
        infos[n].fence = row[11] ? strtoull(row[11], NULL, 10) : h.fence;
        free(h.name);
        n++;
    }
    mysql_free_result(res);
    conn_put(ms, c, rc == DLOCK_OK);
    for (size_t i = 0; i < n && rc == DLOCK_OK; i++)
        rc = cb(&infos[i], payload);
    free(infos);
    return rc;
}

static int my_force_release(struct dlock_store *s, const char *name,
                            unsigned *removed)
{
    struct my_store *ms = (struct my_store *)s;
    struct my_lock ml;
    struct conn *c;
    struct sb b = {0};
    MYSQL_RES *res;
    MYSQL_ROW row;
    struct holder h;
    int rc, have = 0, killed = 0;

    ml.key_len = dlock__mysql_key(name, strlen(name), ms->mariadb, ml.key);
    rc = conn_get(ms, &c);
    if (rc != DLOCK_OK)
        return rc;
    c->name = name;
    sb_add(&b, "SELECT %s FROM %s WHERE name = ", columns(ms), ms->table);
    sb_key(&b, c, &ml);
    rc = run(ms, c, &b, &res, "release --force");
    if (rc == DLOCK_OK && res != NULL) {
        row = mysql_fetch_row(res);
        if (row != NULL) {
            read_holder(row, mysql_fetch_lengths(res), &h, 0);
            have = 1;
        }
        mysql_free_result(res);
    }
    if (rc != DLOCK_OK || !have) {
        *removed = 0;
        goto out;
    }
    /* take_over() with the row treated as dead whatever its lease. */
    h.left = 0;
    sb_reset(&b);
    sb_add(&b, "DELETE FROM %s WHERE name = ", ms->table);
    sb_key(&b, c, &ml);
    rc = run(ms, c, &b, NULL, "release --force");
    if (rc != DLOCK_OK)
        goto out;
    *removed = (unsigned)mysql_affected_rows(c->db);
    if (!ms->lease_mode && h.conn_id != 0 && h.used_by == h.conn_id) {
        sb_reset(&b);
        sb_add(&b, "KILL CONNECTION %llu", h.conn_id);
        if (query(c, b.p, b.len) == 0)
            killed = 1;
        else if (mysql_errno(c->db) == ER_KILL_DENIED_ERROR)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "'%s': row removed, but this user may not "
                               "KILL the holder's connection %llu (needs "
                               "CONNECTION ADMIN or SUPER); it keeps its "
                               "GET_LOCK until it notices: %s",
                               name, h.conn_id, mysql_error(c->db));
        else if (mysql_errno(c->db) != ER_NO_SUCH_THREAD)
            rc = db_err(ms, c, "release --force");
    }
    /* KILL returns before the session ends: wait (bounded) until its
     * GET_LOCK is free, so an acquire right after us succeeds. */
    for (int64_t until = dlock__now_ms() + ms->timeout_ms;
         killed && rc == DLOCK_OK && dlock__now_ms() < until;) {
        long long used = 0;
        int found;

        sb_reset(&b);
        sb_add(&b, "SELECT IFNULL(IS_USED_LOCK(");
        sb_key(&b, c, &ml);
        sb_add(&b, "), 0)");
        rc = run_int(ms, c, &b, &used, &found, "release --force");
        if (rc != DLOCK_OK || (unsigned long long)used != h.conn_id)
            break;
        dlock__sleep_ms(2);
    }
out:
    sb_free(&b);
    conn_put(ms, c, rc == DLOCK_OK);
    return rc;
}

const struct dlock_store_ops dlock__mysql_ops = {
    .version = DLOCK_STORE_OPS_VERSION,
    .name = "mysql",
    .has_shared = 0,
    .open = my_open,
    .close = my_close,
    .try_acquire = my_try_acquire,
    .wait_acquire = my_wait_acquire,
    .extend = my_extend,
    .ttl_left = my_ttl_left,
    .release = my_release,
    .forget = NULL,
    .status = my_status,
    .list = my_list,
    .force_release = my_force_release,
    .init = my_init,
    .ddl = my_ddl,
};
