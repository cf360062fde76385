/*
 * handoff_mysql.c - MariaDB's hand-off floor (handoff.h): the contract
 * floor's cycle (contract.h: the lock, a fence and the holder row; the
 * row deleted and the lock let go in one statement, on a MEMORY table as
 * dlock's) with its GET_LOCK made a wait.  The waiter blocks in the
 * server in GET_LOCK(name, a year) and takes its fence (NEXTVAL of a
 * SEQUENCE) in the same statement, only once GET_LOCK answered 1; then
 * it writes its holder row.  The row cannot go in the blocked statement:
 * an INSERT ... SELECT waiting in GET_LOCK holds the MEMORY table's lock,
 * and the releaser's DELETE would wait for it.  The releaser's one
 * statement deletes its row and frees the name, and the server hands it
 * to the next blocked session itself.  Three requests per cycle.  The
 * SEQUENCE needs MariaDB >= 10.3 (MySQL has none: there setup fails and
 * the contended part runs without a floor).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "bench.h"
#include "contract.h"
#include "handoff.h"

#define MY_SEQ "dlock_bench_handoff_seq"
#define MY_TABLE "dlock_bench_handoff_held"
#define MY_NOWMS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"

struct my_floor {
    struct bench_noop *n;
    MYSQL *c;
    char acq[256], name[72];
    char owner[40];
};

/* Run sql on c, reading whatever it answers; *v (if not NULL) the first
 * column of its first row as a number (0 for none or NULL). */
static int my_q(MYSQL *c, const char *sql, long long *v)
{
    MYSQL_RES *r;
    MYSQL_ROW row;

    if (mysql_real_query(c, sql, (unsigned long)strlen(sql)) != 0) {
        fprintf(stderr, "dlock-bench: hand-off floor: %s: %s\n", sql,
                mysql_error(c));
        return -1;
    }
    r = mysql_store_result(c);
    if (v != NULL)
        *v = r != NULL && (row = mysql_fetch_row(r)) != NULL && row[0] != NULL
                 ? atoll(row[0])
                 : 0;
    mysql_free_result(r);
    return 0;
}

/* One statement on a connection of its own. */
static int my_once(const char *url, const char *sql)
{
    struct bench_noop *n;
    int rc;

    if (bench_noop_open(&n, url) != 0)
        return -1;
    rc = my_q(bench_noop_conn(n), sql, NULL);
    bench_noop_close(n);
    return rc;
}

static int my_setup(const char *url)
{
    if (my_once(url, "CREATE SEQUENCE IF NOT EXISTS " MY_SEQ " CACHE 1000") !=
        0)
        return -1;
    /* The contract floor's MEMORY table (contract.c). */
    return my_once(
        url, "CREATE TABLE IF NOT EXISTS " MY_TABLE " (name VARCHAR(64) "
             "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, "
             "connection_id BIGINT NOT NULL, created BIGINT NOT NULL, ttl "
             "BIGINT NOT NULL, lock_acquired TINYINT(1) NOT NULL, owner "
             "CHAR(32) CHARACTER SET ascii NULL, fence BIGINT UNSIGNED NULL, "
             "expires_ms BIGINT NULL, acquired_ms BIGINT NULL, host "
             "VARCHAR(255) CHARACTER SET utf8mb4 NULL, pid BIGINT NULL, "
             "UNIQUE KEY (name)) ENGINE=MEMORY DEFAULT CHARSET=utf8mb4");
}

static void my_teardown(const char *url)
{
    (void)my_once(url, "DROP TABLE IF EXISTS " MY_TABLE);
    (void)my_once(url, "DROP SEQUENCE IF EXISTS " MY_SEQ);
}

/* A name dlock-bench chose (letters, digits, '-', '_', ':', '.'): it goes
 * in a string literal as it is; anything else is refused. */
static int plain(const char *name)
{
    for (const char *p = name; *p; p++)
        if (*p == '\'' || *p == '\\')
            return 0;
    return strlen(name) <= 64;
}

static void *my_open(const char *url, const char *name)
{
    struct my_floor *f;

    if (!plain(name)) {
        fprintf(stderr, "dlock-bench: hand-off floor: name '%s' not plain\n",
                name);
        return NULL;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL || bench_noop_open(&f->n, url) != 0) {
        free(f);
        return NULL;
    }
    f->c = bench_noop_conn(f->n);
    /* IF() runs NEXTVAL only once GET_LOCK has answered 1: the fence is
     * drawn by the holder, in the statement that made it one. */
    snprintf(f->acq, sizeof(f->acq),
             "SELECT IF(GET_LOCK('%s', 31536000), NEXTVAL(" MY_SEQ "), 0)",
             name);
    snprintf(f->name, sizeof(f->name), "%s", name);
    return f;
}

/* sql, which must change exactly one row. */
static int my_affected(MYSQL *c, const char *sql)
{
    if (my_q(c, sql, NULL) != 0)
        return -1;
    if (mysql_affected_rows(c) != 1) {
        fprintf(stderr, "dlock-bench: hand-off floor: %s: %llu rows\n", sql,
                (unsigned long long)mysql_affected_rows(c));
        return -1;
    }
    return 0;
}

static int my_acquire(void *p)
{
    struct my_floor *f = p;
    long long fence = 0;
    char sql[640];

    if (my_q(f->c, f->acq, &fence) != 0)
        return -1;
    if (fence <= 0) {
        fprintf(stderr, "dlock-bench: hand-off floor: GET_LOCK gave no "
                        "lock, or NEXTVAL no fence\n");
        return -1;
    }
    /* A new owner token per acquire, as dlock's (contract.c). */
    snprintf(f->owner, sizeof(f->owner), "%s", cfloor_owner());
    snprintf(sql, sizeof(sql),
             "INSERT INTO " MY_TABLE " (name, connection_id, created, ttl, "
             "lock_acquired, owner, fence, expires_ms, acquired_ms, host, "
             "pid) VALUES ('%s', CONNECTION_ID(), UNIX_TIMESTAMP(), 30, 1, "
             "'%s', %lld, " MY_NOWMS " + 30000, " MY_NOWMS
             ", 'benchhost', 4242)",
             f->name, f->owner, fence);
    return my_affected(f->c, sql);
}

static int my_release(void *p)
{
    struct my_floor *f = p;
    char sql[512];

    snprintf(sql, sizeof(sql),
             "DELETE FROM " MY_TABLE " WHERE name = '%s' AND owner = '%s' "
             "AND RELEASE_LOCK('%s') = 1",
             f->name, f->owner, f->name);
    return my_affected(f->c, sql);
}

static void my_close(void *p)
{
    struct my_floor *f = p;

    bench_noop_close(f->n);
    free(f);
}

const struct handoff_ops handoff_floor_mysql = {
    "the contract floor with a blocked GET_LOCK(): lock and fence in one "
    "statement, the holder row in the next; row deleted and RELEASE_LOCK() "
    "in one",
    my_setup,
    my_open,
    my_acquire,
    my_release,
    my_close,
    my_teardown};
