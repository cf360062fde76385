/*
 * dlock-floors - what the parts of a lock cycle cost on a SQL server, as
 * the same ratio dlock-bench gives: (cycle time) / (2 x no-op time), the
 * no-op being dlock-bench's own (PostgreSQL: SELECT 1; MariaDB: DO 1) on
 * the same connection, in alternating blocks, median and spread.
 *
 *   dlock-floors URL [--json FILE] [--quick]
 *
 * Each candidate is a whole uncontended cycle of two statements, sent the
 * way dlock sends its own (PostgreSQL: prepared, generic plans; MariaDB:
 * text protocol), from the bare advisory lock pair of the seed libraries
 * up to the parts dlock's cycle is made of.  It answers "how low can a
 * cycle that keeps this part go on this server": a part whose floor is
 * over a target cannot be in a cycle that meets it.  Scratch objects
 * (dlock_floor_*) are created and dropped again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef DLOCK_HAVE_POSTGRES
#include <libpq-fe.h>
#endif
#ifdef DLOCK_HAVE_MYSQL
#include <mysql.h>
#endif

#include "bench.h"
#include "contract.h"

struct floor {
    const char *id;   /* JSON key */
    const char *what; /* one line for people */
    const char *acq;  /* statement 1 */
    const char *rel;  /* statement 2 */
    int check;        /* 1: statement 1 must answer true or change one
                       * row, 2: statement 2 must, 3: both */
};

static int quick;
static const char *only_ids; /* --only ID[,ID...] */
static FILE *json;
static struct bench_noop *noop;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void die(const char *what, const char *err)
{
    fprintf(stderr, "dlock-floors: %s: %s\n", what, err);
    exit(1);
}

/* --- PostgreSQL --------------------------------------------------------- */

#ifdef DLOCK_HAVE_POSTGRES
static const struct floor pg_floors[] = {
    {"advisory", "pg_try_advisory_lock + pg_advisory_unlock (the seed library)",
     "SELECT pg_try_advisory_lock($1)", "SELECT pg_advisory_unlock($1)", 1},
    {"fence", "+ a fence: nextval of an UNLOGGED sequence",
     "SELECT CASE WHEN pg_try_advisory_lock($1) THEN "
     "nextval('dlock_floor_seq') END IS NOT NULL",
     "SELECT pg_advisory_unlock($1)", 1},
    {"marker",
     "+ a lease marker: a shared (int, int) advisory lock, no row "
     "(a row-less design)",
     "SELECT CASE WHEN pg_try_advisory_lock($1) THEN "
     "nextval('dlock_floor_seq') END IS NOT NULL AND "
     "pg_try_advisory_lock_shared(($1 >> 32)::int, 12345)",
     "SELECT pg_advisory_unlock($1) AND "
     "pg_advisory_unlock_shared(($1 >> 32)::int, 12345)",
     1},
    {"row", "+ an UNLOGGED holder row inserted and deleted (no marker)",
     "WITH l AS (SELECT pg_try_advisory_lock($1) AS got), "
     "i AS (INSERT INTO dlock_floor_held SELECT $1, md5('o'), "
     "nextval('dlock_floor_seq'), clock_timestamp() + interval '30 s', "
     "pg_backend_pid() FROM l WHERE got RETURNING fence) "
     "SELECT (SELECT fence FROM i) IS NOT NULL",
     "WITH d AS (DELETE FROM dlock_floor_held WHERE k = $1 AND "
     "owner = md5('o') RETURNING 1) "
     "SELECT (SELECT count(*) FROM d) = 1 AND pg_advisory_unlock($1)",
     1},
};

static void pg_ok(PGconn *c, PGresult *r, const char *what)
{
    if (PQresultStatus(r) != PGRES_COMMAND_OK &&
        PQresultStatus(r) != PGRES_TUPLES_OK)
        die(what, PQerrorMessage(c));
    PQclear(r);
}

static void pg_setup(PGconn *c)
{
    PGresult *r = PQexec(c, "CREATE UNLOGGED SEQUENCE IF NOT EXISTS "
                            "dlock_floor_seq");

    if (PQresultStatus(r) != PGRES_COMMAND_OK) { /* before 15 */
        PQclear(r);
        r = PQexec(c, "CREATE SEQUENCE IF NOT EXISTS dlock_floor_seq");
    }
    pg_ok(c, r, "sequence");
    pg_ok(c,
          PQexec(c, "CREATE UNLOGGED TABLE IF NOT EXISTS dlock_floor_held "
                    "(k bigint PRIMARY KEY, owner text NOT NULL, fence "
                    "bigint NOT NULL, expires_at timestamptz NOT NULL, "
                    "backend int NOT NULL)"),
          "table");
    /* as dlock's session-mode connections */
    pg_ok(c, PQexec(c, "SET plan_cache_mode = force_generic_plan"), "SET");
    pg_ok(c, PQexec(c, "SET enable_bitmapscan = off"), "SET");
    for (size_t i = 0; i < sizeof(pg_floors) / sizeof(pg_floors[0]); i++) {
        char n[32];
        static const Oid types[1] = {20 /* int8 */};

        snprintf(n, sizeof(n), "a%zu", i);
        pg_ok(c, PQprepare(c, n, pg_floors[i].acq, 1, types), n);
        snprintf(n, sizeof(n), "r%zu", i);
        pg_ok(c, PQprepare(c, n, pg_floors[i].rel, 1, types), n);
    }
}

static int pg_cycle(PGconn *c, size_t i)
{
    static const char *const key[1] = {"4242424242424242"};
    char n[32];
    PGresult *r;
    int ok;

    snprintf(n, sizeof(n), "a%zu", i);
    r = PQexecPrepared(c, n, 1, key, NULL, NULL, 0);
    ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
         !strcmp(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    snprintf(n, sizeof(n), "r%zu", i);
    r = PQexecPrepared(c, n, 1, key, NULL, NULL, 0);
    ok = ok && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
         !strcmp(PQgetvalue(r, 0, 0), "t");
    if (!ok)
        die(pg_floors[i].id, PQerrorMessage(c));
    PQclear(r);
    return 0;
}

static void pg_teardown(PGconn *c)
{
    pg_ok(c, PQexec(c, "DROP TABLE IF EXISTS dlock_floor_held"), "drop");
    pg_ok(c, PQexec(c, "DROP SEQUENCE IF EXISTS dlock_floor_seq"), "drop");
}
#endif

/* --- MariaDB / MySQL ---------------------------------------------------- */

#ifdef DLOCK_HAVE_MYSQL
#define MY_ROW_COLS                                                            \
    "(name, connection_id, created, ttl, lock_acquired, owner, fence, "        \
    "expires_ms)"
#define MY_ROW_VALS                                                            \
    "'dlock-floor', CONNECTION_ID(), UNIX_TIMESTAMP(), 30, 0, "                \
    "'0123456789abcdef0123456789abcdef', 1, 0"
static const struct floor my_floors[] = {
    {"select1", "SELECT 1 twice (a result set instead of DO's bare OK)",
     "SELECT 1", "SELECT 1", 3},
    {"getlock",
     "SELECT GET_LOCK(k, 0) + SELECT RELEASE_LOCK(k) (the seed "
     "library)",
     "SELECT GET_LOCK('dlock-floor', 0)", "SELECT RELEASE_LOCK('dlock-floor')",
     3},
    {"fence", "+ a fence: NEXTVAL of a SEQUENCE (CACHE 1000), no row",
     "SELECT IF(GET_LOCK('dlock-floor', 0), NEXTVAL(dlock_floor_seq), 0) > 0",
     "SELECT RELEASE_LOCK('dlock-floor')", 3},
    {"fence_do",
     "the same, let go with DO RELEASE_LOCK (no answer to "
     "read): the least a fenced cycle can send",
     "SELECT IF(GET_LOCK('dlock-floor', 0), NEXTVAL(dlock_floor_seq), 0) > 0",
     "DO RELEASE_LOCK('dlock-floor')", 1},
    {"calls", "two CALLs of an empty procedure", "CALL dlock_floor_noop()",
     "CALL dlock_floor_noop()", 0},
    {"calls_answer",
     "two CALLs of a procedure that only answers a row (SELECT 1): the "
     "shape of dlock's cycle, doing nothing",
     "CALL dlock_floor_answer()", "CALL dlock_floor_answer()", 3},
    {"row_myisam",
     "a row alone: INSERT + DELETE of a MyISAM row "
     "(its-mieger's engine), no GET_LOCK, no fence",
     "INSERT INTO dlock_floor_myisam " MY_ROW_COLS " VALUES (" MY_ROW_VALS ")",
     "DELETE FROM dlock_floor_myisam WHERE name = 'dlock-floor'", 3},
    {"row_memory",
     "a row alone: INSERT + DELETE of a MEMORY row, no "
     "GET_LOCK, no fence",
     "INSERT INTO dlock_floor_memory " MY_ROW_COLS " VALUES (" MY_ROW_VALS ")",
     "DELETE FROM dlock_floor_memory WHERE name = 'dlock-floor'", 3},
    {"dlock_sql",
     "dlock's own two statements (a MEMORY table of dlock's columns, "
     "NEXTVAL, the IF(lease, RELEASE_LOCK) release), without libdlock",
     "INSERT INTO dlock_floor_dlock (name, connection_id, created, ttl, "
     "lock_acquired, owner, fence, expires_ms, acquired_ms, host, pid, "
     "full_name) SELECT 'dlock-floor', CONNECTION_ID(), UNIX_TIMESTAMP(), "
     "30, 1, '0123456789abcdef0123456789abcdef', "
     "LAST_INSERT_ID(NEXTVAL(dlock_floor_seq)), "
     "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + 30000, "
     "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED), 'benchhost', 4242, "
     "'dlock-floor' FROM DUAL WHERE GET_LOCK('dlock-floor', 0) = 1",
     "DELETE FROM dlock_floor_dlock WHERE name = 'dlock-floor' AND owner = "
     "'0123456789abcdef0123456789abcdef' AND IF(COALESCE(expires_ms, "
     "(created + ttl + 1) * 1000) > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS "
     "SIGNED) AND connection_id = CONNECTION_ID(), "
     "RELEASE_LOCK('dlock-floor'), 0) = 1",
     3},
    {"row_getlock",
     "GET_LOCK + a MEMORY row in one INSERT ... SELECT, "
     "DELETE + RELEASE_LOCK in one DELETE (the least a "
     "cycle with a row can send)",
     "INSERT INTO dlock_floor_memory " MY_ROW_COLS " SELECT " MY_ROW_VALS
     " FROM DUAL WHERE GET_LOCK('dlock-floor', 0) = 1",
     "DELETE FROM dlock_floor_memory WHERE name = 'dlock-floor' AND "
     "owner = '0123456789abcdef0123456789abcdef' AND "
     "RELEASE_LOCK('dlock-floor') = 1",
     3},
};

static void my_ok(MYSQL *c, const char *sql)
{
    MYSQL_RES *r;

    if (mysql_query(c, sql) != 0)
        die(sql, mysql_error(c));
    r = mysql_store_result(c);
    mysql_free_result(r);
    while (mysql_next_result(c) == 0) /* CALL's trailing status */
        mysql_free_result(mysql_store_result(c));
}

static void my_setup(MYSQL *c)
{
    static const char *const eng[2] = {"MyISAM", "MEMORY"};

    my_ok(c, "CREATE SEQUENCE IF NOT EXISTS dlock_floor_seq CACHE 1000");
    for (int e = 0; e < 2; e++) {
        char sql[512];

        snprintf(sql, sizeof(sql),
                 "CREATE TABLE IF NOT EXISTS dlock_floor_%s (name varchar(64) "
                 "NOT NULL, connection_id bigint NOT NULL, created bigint NOT "
                 "NULL, ttl bigint NOT NULL, lock_acquired tinyint NOT NULL, "
                 "owner char(32) NOT NULL, fence bigint NOT NULL, expires_ms "
                 "bigint NOT NULL, UNIQUE KEY (name)) ENGINE=%s",
                 e ? "memory" : "myisam", eng[e]);
        my_ok(c, sql);
    }
    my_ok(c, "SET SESSION max_heap_table_size = 1073741824");
    my_ok(c, "CREATE TABLE IF NOT EXISTS dlock_floor_dlock (name VARCHAR(64) "
             "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
             "connection_id BIGINT NOT NULL, created BIGINT NOT NULL, ttl "
             "BIGINT NOT NULL, lock_acquired TINYINT(1) NOT NULL, owner "
             "CHAR(32) CHARACTER SET ascii NULL, fence BIGINT UNSIGNED NULL, "
             "expires_ms BIGINT NULL, acquired_ms BIGINT NULL, host "
             "VARCHAR(255) CHARACTER SET utf8mb4 NULL, pid BIGINT NULL, "
             "full_name VARBINARY(1024) NULL, lim INT NULL, slot INT NULL, "
             "UNIQUE KEY (name)) ENGINE=MEMORY DEFAULT CHARSET=utf8mb4");
    my_ok(c, "SET SESSION max_heap_table_size = DEFAULT");
    my_ok(c, "CREATE PROCEDURE IF NOT EXISTS dlock_floor_noop() BEGIN END");
    my_ok(c, "CREATE PROCEDURE IF NOT EXISTS dlock_floor_answer() BEGIN "
             "SELECT 1; END");
}

/* One statement; -1 on error, else 1 if it answered a true first column
 * or changed one row. */
static int my_stmt(MYSQL *c, const char *sql)
{
    MYSQL_RES *r;
    MYSQL_ROW row;
    int got;

    if (mysql_query(c, sql) != 0)
        return -1;
    r = mysql_store_result(c);
    if (r == NULL)
        got = mysql_affected_rows(c) == 1;
    else
        got = (row = mysql_fetch_row(r)) != NULL && row[0] != NULL &&
              strcmp(row[0], "0") != 0;
    mysql_free_result(r);
    while (mysql_next_result(c) == 0)
        mysql_free_result(mysql_store_result(c));
    return got;
}

static int my_cycle(MYSQL *c, size_t i)
{
    int a = my_stmt(c, my_floors[i].acq);
    int b = a < 0 ? -1 : my_stmt(c, my_floors[i].rel);

    if (a < 0 || b < 0)
        die(my_floors[i].id, mysql_error(c));
    if (((my_floors[i].check & 1) && a != 1) ||
        ((my_floors[i].check & 2) && b != 1))
        die(my_floors[i].id, "did not take it, or did not let it go");
    return 0;
}

static void my_teardown(MYSQL *c)
{
    my_ok(c, "DROP TABLE IF EXISTS dlock_floor_myisam, dlock_floor_memory, "
             "dlock_floor_dlock");
    my_ok(c, "DROP SEQUENCE IF EXISTS dlock_floor_seq");
    my_ok(c, "DROP PROCEDURE IF EXISTS dlock_floor_noop");
    my_ok(c, "DROP PROCEDURE IF EXISTS dlock_floor_answer");
}
#endif

/* --- measuring ------------------------------------------------------------ */

static void measure(const char *store, const char *server,
                    const struct floor *f, size_t nf,
                    int (*cycle)(void *, size_t), void *conn, int part)
{
    const int blocks = quick ? 5 : 11, per = quick ? 200 : 1000;

    if (json != NULL && part == 0)
        fprintf(json,
                "{\n  \"store\": \"%s\",\n  \"server\": \"%s\",\n"
                "  \"floors\": {\n",
                store, server);
    if (part == 0)
        printf("%s (%s): cycle / (2 x no-op), median (range) of %d blocks "
               "of %d\n",
               store, server, blocks, per);
    for (size_t i = 0; i < nf; i++) {
        double ratio[64], us[64];

        if (only_ids != NULL) {
            const char *p = strstr(only_ids, f[i].id);
            size_t n = strlen(f[i].id);

            if (p == NULL || (p != only_ids && p[-1] != ',') ||
                (p[n] != '\0' && p[n] != ','))
                continue;
        }

        for (int w = 0; w < per / 10; w++) /* warm: plans, caches */
            cycle(conn, i);
        for (int b = 0; b < blocks; b++) {
            double t0 = now_s(), t1, noop_s, cyc_s;

            for (int k = 0; k < per; k++)
                if (bench_noop(noop) != 0)
                    die("no-op", "failed");
            t1 = now_s();
            noop_s = (t1 - t0) / per;
            for (int k = 0; k < per; k++)
                cycle(conn, i);
            cyc_s = (now_s() - t1) / per;
            ratio[b] = cyc_s / (2.0 * noop_s);
            us[b] = cyc_s * 1e6;
        }
        qsort(ratio, (size_t)blocks, sizeof(double), cmp_dbl);
        qsort(us, (size_t)blocks, sizeof(double), cmp_dbl);
        printf("  %-12s %5.2f (%.2f..%.2f) %7.1f us  %s\n", f[i].id,
               ratio[blocks / 2], ratio[0], ratio[blocks - 1], us[blocks / 2],
               f[i].what);
        if (json != NULL)
            fprintf(json,
                    "    \"%s\": {\"ratio_median\": %.4g, \"ratio_min\": "
                    "%.4g, \"ratio_max\": %.4g, \"cycle_us\": %.4g}%s\n",
                    f[i].id, ratio[blocks / 2], ratio[0], ratio[blocks - 1],
                    us[blocks / 2], i + 1 < nf || part == 0 ? "," : "");
    }
    if (json != NULL && part == 1)
        fprintf(json, "  }\n}\n");
}

#ifdef DLOCK_HAVE_POSTGRES
static int pg_cycle_v(void *c, size_t i)
{
    return pg_cycle(c, i);
}
static const struct floor pg_contract[] = {
    {"contract",
     "THE CONTRACT'S FLOOR: pg_try_advisory_lock + nextval (UNLOGGED) + "
     "INSERT of an UNLOGGED holder row (name, owner, fence, backend, host, "
     "pid, lease) in one statement; DELETE + pg_advisory_unlock in one",
     NULL, NULL, 0},
};
static int pg_contract_v(void *c, size_t i)
{
    (void)i;
    if (cfloor_pg_cycle(c) != 0)
        die("contract", PQerrorMessage(c));
    return 0;
}
#endif
#ifdef DLOCK_HAVE_MYSQL
static int my_cycle_v(void *c, size_t i)
{
    return my_cycle(c, i);
}
static const struct floor my_contract[] = {
    {"contract",
     "THE CONTRACT'S FLOOR: GET_LOCK + NEXTVAL (SEQUENCE) + a MEMORY holder "
     "row in one INSERT ... SELECT; DELETE ... AND RELEASE_LOCK in one",
     NULL, NULL, 0},
    {"contract_myisam",
     "the same on a MyISAM latin1 table (its-mieger's DDL + dlock's "
     "columns)",
     NULL, NULL, 0},
};
static int my_contract_v(void *c, size_t i)
{
    if (cfloor_my_cycle(c, (int)i) != 0)
        die("contract", mysql_error(c));
    return 0;
}
#endif

int main(int argc, char **argv)
{
    const char *url = NULL, *json_path = NULL, *server;
    void *conn;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json_path = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only_ids = argv[++i];
        else if (argv[i][0] != '-' && url == NULL)
            url = argv[i];
        else {
            fprintf(stderr, "usage: dlock-floors URL [--json FILE] [--quick] "
                            "[--only ID,...]\n");
            return 64;
        }
    }
    if (url == NULL) {
        fprintf(stderr, "usage: dlock-floors URL [--json FILE] [--quick] "
                        "[--only ID,...]\n");
        return 64;
    }
    server = bench_server_version(url);
    if (bench_noop_open(&noop, url) != 0)
        die("cannot connect", "see the URL");
    if (json_path != NULL && (json = fopen(json_path, "w")) == NULL)
        die(json_path, "cannot write");
    conn = bench_noop_conn(noop);
    switch (bench_noop_kind(noop)) {
#ifdef DLOCK_HAVE_POSTGRES
    case 'p':
        pg_setup(conn);
        if (cfloor_pg_setup(conn) != 0)
            die("contract floor", "setup failed");
        measure("postgres", server, pg_floors,
                sizeof(pg_floors) / sizeof(pg_floors[0]), pg_cycle_v, conn, 0);
        measure("postgres", server, pg_contract, 1, pg_contract_v, conn, 1);
        cfloor_pg_teardown(conn);
        pg_teardown(conn);
        break;
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm':
        my_setup(conn);
        if (cfloor_my_setup(conn) != 0)
            die("contract floor", "setup failed (no SEQUENCE?)");
        measure("mysql", server, my_floors,
                sizeof(my_floors) / sizeof(my_floors[0]), my_cycle_v, conn, 0);
        measure("mysql", server, my_contract, 2, my_contract_v, conn, 1);
        cfloor_my_teardown(conn);
        my_teardown(conn);
        break;
#endif
    default:
        fprintf(stderr,
                "dlock-floors: PostgreSQL and MariaDB/MySQL URLs only\n");
        bench_noop_close(noop);
        return 64;
    }
    if (json != NULL)
        fclose(json);
    bench_noop_close(noop);
    return 0;
}
