/*
 * handoff_mysql.c - MariaDB's hand-off floor (handoff.h): the waiter
 * blocks in the server in GET_LOCK(name, a year) and takes its fence
 * (NEXTVAL of a SEQUENCE) in the same statement, only once GET_LOCK
 * answered 1; the releaser's one statement, DO RELEASE_LOCK(name) (no
 * answer to read), frees the name, and the server hands it to the next
 * blocked session itself.  Two requests per cycle.  The SEQUENCE needs
 * MariaDB >= 10.3 (MySQL has none: there setup fails and the contended
 * part runs without a floor).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mysql.h>

#include "bench.h"
#include "handoff.h"

#define MY_SEQ "dlock_bench_handoff_seq"

struct my_floor {
    struct bench_noop *n;
    MYSQL *c;
    char acq[256], rel[200];
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
    return my_once(url, "CREATE SEQUENCE IF NOT EXISTS " MY_SEQ " CACHE 1000");
}

static void my_teardown(const char *url)
{
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
    snprintf(f->rel, sizeof(f->rel), "DO RELEASE_LOCK('%s')", name);
    return f;
}

static int my_acquire(void *p)
{
    struct my_floor *f = p;
    long long fence = 0;

    if (my_q(f->c, f->acq, &fence) != 0)
        return -1;
    if (fence <= 0) {
        fprintf(stderr, "dlock-bench: hand-off floor: GET_LOCK gave no "
                        "lock, or NEXTVAL no fence\n");
        return -1;
    }
    return 0;
}

static int my_release(void *p)
{
    struct my_floor *f = p;

    return my_q(f->c, f->rel, NULL);
}

static void my_close(void *p)
{
    struct my_floor *f = p;

    bench_noop_close(f->n);
    free(f);
}

const struct handoff_ops handoff_floor_mysql = {
    "a blocked GET_LOCK() + NEXTVAL() in one statement; DO RELEASE_LOCK()",
    my_setup,
    my_open,
    my_acquire,
    my_release,
    my_close,
    my_teardown};
