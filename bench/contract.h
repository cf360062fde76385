/*
 * contract.h - the contract's floor (DESIGN.md section 7, issue 26) and
 * the server's CPU time, shared by dlock-floors and dlock-bench.
 *
 * The floor is the least cycle that keeps what dlock promises: the lock,
 * a fence and a holder row (name, owner token, fence, lease end, holding
 * session, host, pid: what status, list and a waiter's judgement of a
 * hung holder read) written in ONE statement, and the row deleted and the
 * lock let go in ONE statement.  Each is sent the way dlock sends its own
 * (PostgreSQL: prepared, generic plans; MariaDB: text protocol).
 *
 *   PostgreSQL: pg_try_advisory_lock(hashtextextended(name, 0)) + nextval
 *     of an UNLOGGED sequence + INSERT of an UNLOGGED row, in one WITH;
 *     DELETE ... RETURNING + pg_advisory_unlock in one.
 *   MariaDB: GET_LOCK + NEXTVAL of a SEQUENCE + the row in one
 *     INSERT ... SELECT; DELETE ... AND RELEASE_LOCK(...) in one.  On a
 *     MEMORY table (what dlock creates for session mode) and on a MyISAM
 *     latin1 table of its-mieger's DDL with dlock's columns.
 *
 * Scratch objects dlock_cfloor_* are created and dropped again.  All
 * functions return 0 on success, -1 on failure.
 */
#ifndef DLOCK_BENCH_CONTRACT_H
#define DLOCK_BENCH_CONTRACT_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef DLOCK_HAVE_POSTGRES
#include <libpq-fe.h>
#endif
#ifdef DLOCK_HAVE_MYSQL
#include <mysql.h>
#endif

#define CFLOOR_NAME "dlock-contract-floor"

/* A new owner token per cycle, as dlock's (random 128 bits, hex): the
 * index sees the same spread of keys. */
static inline const char *cfloor_owner(void)
{
    static char o[40];
    static unsigned long long n;

    if (n == 0)
        n = ((unsigned long long)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
    n = n * 6364136223846793005ULL + 1442695040888963407ULL;
    snprintf(o, sizeof(o), "%016llx%016llx", n, n * 0xff51afd7ed558ccdULL);
    return o;
}

static inline void cfloor_quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* --- PostgreSQL --------------------------------------------------------- */

#ifdef DLOCK_HAVE_POSTGRES
static inline int cfloor_pg_ok(PGresult *r)
{
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
             PQresultStatus(r) == PGRES_TUPLES_OK;

    if (!ok)
        fprintf(stderr, "contract floor: %s", PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

static inline int cfloor_pg_setup(PGconn *c)
{
    PGresult *r;

    PQsetNoticeProcessor(c, cfloor_quiet, NULL);
    r = PQexec(c, "CREATE UNLOGGED SEQUENCE IF NOT EXISTS "
                  "dlock_cfloor_seq");

    if (PQresultStatus(r) != PGRES_COMMAND_OK) { /* before 15 */
        PQclear(r);
        r = PQexec(c, "CREATE SEQUENCE IF NOT EXISTS dlock_cfloor_seq");
    }
    if (cfloor_pg_ok(r) != 0 ||
        cfloor_pg_ok(PQexec(
            c, "CREATE UNLOGGED TABLE IF NOT EXISTS dlock_cfloor_held (name "
               "text NOT NULL, owner text NOT NULL, fence bigint NOT NULL, "
               "backend_pid integer NOT NULL, host text NOT NULL, pid bigint "
               "NOT NULL, expires_at timestamptz NOT NULL, PRIMARY KEY "
               "(name, owner))")) != 0 ||
        cfloor_pg_ok(PQexec(c, "SET plan_cache_mode = force_generic_plan")) !=
            0 ||
        cfloor_pg_ok(PQexec(c, "SET enable_bitmapscan = off")) != 0)
        return -1;
    if (cfloor_pg_ok(PQprepare(
            c, "cfloor_acq",
            "WITH l AS (SELECT pg_try_advisory_lock(hashtextextended($1, 0)) "
            "AS got), i AS (INSERT INTO dlock_cfloor_held SELECT $1, $2, "
            "nextval('dlock_cfloor_seq'), pg_backend_pid(), $3, $4::bigint, "
            "clock_timestamp() + interval '30 s' FROM l WHERE got RETURNING "
            "fence) SELECT (SELECT fence FROM i)",
            4, NULL)) != 0 ||
        cfloor_pg_ok(PQprepare(
            c, "cfloor_rel",
            "WITH d AS (DELETE FROM dlock_cfloor_held WHERE name = $1 AND "
            "owner = $2 RETURNING 1) SELECT (SELECT count(*) FROM d) = 1 AND "
            "pg_advisory_unlock(hashtextextended($1, 0))",
            2, NULL)) != 0)
        return -1;
    return 0;
}

static inline int cfloor_pg_cycle(PGconn *c)
{
    const char *p[4] = {CFLOOR_NAME, cfloor_owner(), "benchhost", "4242"};
    PGresult *r = PQexecPrepared(c, "cfloor_acq", 4, p, NULL, NULL, 0);
    int ok = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
             !PQgetisnull(r, 0, 0);

    PQclear(r);
    r = PQexecPrepared(c, "cfloor_rel", 2, p, NULL, NULL, 0);
    ok = ok && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
         !strcmp(PQgetvalue(r, 0, 0), "t");
    PQclear(r);
    return ok ? 0 : -1;
}

static inline void cfloor_pg_teardown(PGconn *c)
{
    PQclear(PQexec(c, "DEALLOCATE cfloor_acq"));
    PQclear(PQexec(c, "DEALLOCATE cfloor_rel"));
    PQclear(PQexec(c, "DROP TABLE IF EXISTS dlock_cfloor_held"));
    PQclear(PQexec(c, "DROP SEQUENCE IF EXISTS dlock_cfloor_seq"));
}

/* The postmaster: the parent of our backend. */
static inline long cfloor_pg_server_pid(PGconn *c)
{
    char path[64];
    long ppid = -1;
    FILE *f;
    int pid = PQbackendPID(c);

    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    f = fopen(path, "r");
    if (f != NULL) {
        if (fscanf(f, "%*d (%*[^)]) %*c %ld", &ppid) != 1)
            ppid = -1;
        fclose(f);
    }
    return ppid;
}
#endif

/* --- MariaDB ------------------------------------------------------------ */

#ifdef DLOCK_HAVE_MYSQL
#define CFLOOR_MY_COLS                                                         \
    "(name, connection_id, created, ttl, lock_acquired, owner, fence, "        \
    "expires_ms, acquired_ms, host, pid)"
#define CFLOOR_MY_NOWMS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"

/* engine 0: MEMORY, utf8mb4 (what dlock creates); 1: MyISAM latin1,
 * its-mieger's DDL plus dlock's columns. */
static const char *const cfloor_my_table[2] = {"dlock_cfloor_memory",
                                               "dlock_cfloor_myisam"};

static inline int cfloor_my_q(MYSQL *c, const char *sql)
{
    if (mysql_query(c, sql) != 0) {
        fprintf(stderr, "contract floor: %s: %s\n", sql, mysql_error(c));
        return -1;
    }
    mysql_free_result(mysql_store_result(c));
    return 0;
}

/* -1: the server has no SEQUENCE (MySQL, MariaDB < 10.3). */
static inline int cfloor_my_setup(MYSQL *c)
{
    if (cfloor_my_q(c, "CREATE SEQUENCE IF NOT EXISTS dlock_cfloor_seq "
                       "CACHE 1000") != 0)
        return -1;
    return cfloor_my_q(
               c, "CREATE TABLE IF NOT EXISTS dlock_cfloor_memory (name "
                  "VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT "
                  "NULL, connection_id BIGINT NOT NULL, created BIGINT NOT "
                  "NULL, ttl BIGINT NOT NULL, lock_acquired TINYINT(1) NOT "
                  "NULL, owner CHAR(32) CHARACTER SET ascii NULL, fence BIGINT "
                  "UNSIGNED NULL, expires_ms BIGINT NULL, acquired_ms BIGINT "
                  "NULL, host VARCHAR(255) CHARACTER SET utf8mb4 NULL, pid "
                  "BIGINT NULL, UNIQUE KEY (name)) ENGINE=MEMORY DEFAULT "
                  "CHARSET=utf8mb4") != 0 ||
                   cfloor_my_q(
                       c, "CREATE TABLE IF NOT EXISTS dlock_cfloor_myisam ("
                          "`name` varchar(64) NOT NULL, `connection_id` "
                          "bigint(20) NOT NULL, `created` bigint(20) NOT "
                          "NULL, `ttl` bigint(20) NOT NULL, `lock_acquired` "
                          "tinyint(1) NOT NULL, owner CHAR(32) CHARACTER SET "
                          "ascii NULL, fence BIGINT UNSIGNED NULL, "
                          "expires_ms BIGINT NULL, acquired_ms BIGINT NULL, "
                          "host VARCHAR(255) CHARACTER SET utf8mb4 NULL, pid "
                          "BIGINT NULL, UNIQUE KEY `dlock_cfloor_ix1` "
                          "(`name`)) ENGINE=MyISAM DEFAULT CHARSET=latin1") != 0
               ? -1
               : 0;
}

static inline int cfloor_my_stmt(MYSQL *c, const char *sql)
{
    MYSQL_RES *r;

    if (mysql_query(c, sql) != 0)
        return -1;
    r = mysql_store_result(c);
    mysql_free_result(r);
    return r == NULL && mysql_affected_rows(c) == 1 ? 0 : -1;
}

static inline int cfloor_my_cycle(MYSQL *c, int engine)
{
    char acq[1024], rel[512];
    const char *owner = cfloor_owner();

    snprintf(acq, sizeof(acq),
             "INSERT INTO %s " CFLOOR_MY_COLS " SELECT '" CFLOOR_NAME
             "', CONNECTION_ID(), UNIX_TIMESTAMP(), 30, 1, '%s', "
             "NEXTVAL(dlock_cfloor_seq), " CFLOOR_MY_NOWMS
             " + 30000, " CFLOOR_MY_NOWMS ", 'benchhost', 4242 FROM DUAL WHERE "
             "GET_LOCK('" CFLOOR_NAME "', 0) = 1",
             cfloor_my_table[engine], owner);
    snprintf(rel, sizeof(rel),
             "DELETE FROM %s WHERE name = '" CFLOOR_NAME "' AND owner = "
             "'%s' AND RELEASE_LOCK('" CFLOOR_NAME "') = 1",
             cfloor_my_table[engine], owner);
    if (cfloor_my_stmt(c, acq) != 0 || cfloor_my_stmt(c, rel) != 0) {
        fprintf(stderr, "contract floor: %s\n", mysql_error(c));
        return -1;
    }
    return 0;
}

static inline void cfloor_my_teardown(MYSQL *c)
{
    (void)cfloor_my_q(c, "DROP TABLE IF EXISTS dlock_cfloor_memory, "
                         "dlock_cfloor_myisam");
    (void)cfloor_my_q(c, "DROP SEQUENCE IF EXISTS dlock_cfloor_seq");
}

/* mariadbd's pid, from its pid file (same machine only). */
static inline long cfloor_my_server_pid(MYSQL *c)
{
    MYSQL_RES *r;
    MYSQL_ROW row;
    long pid = -1;

    if (mysql_query(c, "SELECT @@pid_file") != 0 ||
        (r = mysql_store_result(c)) == NULL)
        return -1;
    row = mysql_fetch_row(r);
    if (row != NULL && row[0] != NULL) {
        FILE *f = fopen(row[0], "r");

        if (f != NULL) {
            if (fscanf(f, "%ld", &pid) != 1)
                pid = -1;
            fclose(f);
        }
    }
    mysql_free_result(r);
    return pid;
}
#endif

/* --- the server's CPU ------------------------------------------------------
 */

/* CPU time (ns, schedstat) of every thread of pid. */
static inline long long cfloor_cpu_of(long pid)
{
    char path[96];
    DIR *d;
    struct dirent *e;
    long long sum = 0;

    snprintf(path, sizeof(path), "/proc/%ld/task", pid);
    d = opendir(path);
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        unsigned long long ns;
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/task/%.20s/schedstat", pid,
                 e->d_name);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fscanf(f, "%llu", &ns) == 1)
            sum += (long long)ns;
        fclose(f);
    }
    closedir(d);
    return sum;
}

/* CPU time (ns) of the server: pid, its threads and its children (a
 * PostgreSQL backend is a child of the postmaster); -1 if pid is not a
 * process we can see. */
static inline long long cfloor_server_cpu_ns(long pid)
{
    DIR *d;
    struct dirent *e;
    long long sum;

    if (pid <= 0)
        return -1;
    {
        char path[64];

        snprintf(path, sizeof(path), "/proc/%ld/task", pid);
        if (access(path, R_OK) != 0)
            return -1;
    }
    sum = cfloor_cpu_of(pid);
    d = opendir("/proc");
    if (d == NULL)
        return sum;
    while ((e = readdir(d)) != NULL) {
        char path[64];
        long ppid = 0;
        FILE *f;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%.20s/stat", e->d_name);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fscanf(f, "%*d (%*[^)]) %*c %ld", &ppid) == 1 && ppid == pid)
            sum += cfloor_cpu_of(strtol(e->d_name, NULL, 10));
        fclose(f);
    }
    closedir(d);
    return sum;
}

#endif
