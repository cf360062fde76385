/*
 * sql.c - the PostgreSQL store's SQL text, and nothing else.
 *
 * Keyed statements come in two sets, one per key function (see pg.h); the
 * server computes the key, so dlock and other clients of the same key
 * (psql, mpyw/laravel-database-advisory-lock) agree on it.
 */
#include "pg.h"

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

const char *const dlock__pg_sql_x[Q_KEYED] = KEYED_SQL(KEY_X);
const char *const dlock__pg_sql_h[Q_KEYED] = KEYED_SQL(KEY_H);

/* Key-independent statements.  $1 name, $2 owner, $3 ttl ms. */
const char dlock__pg_sql_extend[] =
    "UPDATE dlock_locks SET expires_at = clock_timestamp() + $3::bigint * "
    "interval '1 millisecond' WHERE name = $1 AND owner = $2 AND "
    "expires_at > clock_timestamp()";
const char dlock__pg_sql_ttl[] =
    "SELECT greatest(1, " LEFT_MS("expires_at") ") FROM dlock_locks WHERE "
    "name = $1 AND owner = $2 AND expires_at > clock_timestamp()";
const char dlock__pg_sql_release_l[] =
    "DELETE FROM dlock_locks WHERE name = $1 AND owner = $2 RETURNING "
    "expires_at > clock_timestamp()";
const char dlock__pg_sql_unlock_all[] = "SELECT pg_advisory_unlock_all()";
/* Lease mode, one round trip: two statements in one implicit
 * transaction.  The first locks the name's fence row, so acquirers of a
 * name queue there; the second (a new snapshot, READ COMMITTED) sees every
 * row committed before it and decides.  Literals, not parameters: a
 * multi-statement query cannot take them, and poolers in transaction mode
 * cannot follow prepared statements.  Arguments: name, name, name,
 * shared, name, name, owner, shared, host, pid, ttl ms. */
const char dlock__pg_sql_lease_fmt[] =
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
const char dlock__pg_sql_names[] =
    "SELECT DISTINCT name FROM dlock_locks WHERE starts_with(name, $1) AND "
    "expires_at > clock_timestamp() ORDER BY name";
const char dlock__pg_sql_force[] =
    "DELETE FROM dlock_locks WHERE name = $1 RETURNING backend_pid, "
    "expires_at > clock_timestamp()";
const char dlock__pg_sql_have_tables[] =
    "SELECT to_regclass('dlock_locks') IS NOT NULL AND "
    "to_regclass('dlock_fences') IS NOT NULL";
/* Serialised by a transaction-scoped advisory lock: concurrent CREATE
 * TABLE IF NOT EXISTS can otherwise fail on the catalog's unique keys. */
const char dlock__pg_sql_init[] =
    "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended('dlock: create "
    "tables', 0)); " DDL "COMMIT;";

/* clang-format on */

const char dlock__pg_sql_ddl[] = DDL;
