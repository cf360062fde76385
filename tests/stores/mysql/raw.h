/*
 * raw.h - what the MySQL store tests share: a raw client connection made
 * from the same URL, the way another application (PHP, Laravel) would talk
 * to the server, and a small EXPECT harness.
 */
#ifndef DLOCK_TEST_MYSQL_RAW_H
#define DLOCK_TEST_MYSQL_RAW_H

#include <errno.h>
#include <mysql.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dlock.h"

struct target {
    char user[128], password[128], host[128], db[128];
    unsigned port;
};

/* mysql://user:password@host:port/db[?...] (no percent-escapes: the test
 * server's URL has none). */
static inline int parse_target(const char *url, struct target *t)
{
    const char *p = strstr(url, "://"), *at, *colon, *slash, *q;

    memset(t, 0, sizeof(*t));
    if (p == NULL)
        return -1;
    p += 3;
    at = strchr(p, '@');
    slash = strchr(p, '/');
    if (at == NULL || slash == NULL || at > slash)
        return -1;
    colon = memchr(p, ':', (size_t)(at - p));
    if (colon == NULL)
        return -1;
    snprintf(t->user, sizeof(t->user), "%.*s", (int)(colon - p), p);
    snprintf(t->password, sizeof(t->password), "%.*s", (int)(at - colon - 1),
             colon + 1);
    colon = memchr(at + 1, ':', (size_t)(slash - at - 1));
    if (colon != NULL) {
        snprintf(t->host, sizeof(t->host), "%.*s", (int)(colon - at - 1),
                 at + 1);
        t->port = (unsigned)atoi(colon + 1);
    } else {
        snprintf(t->host, sizeof(t->host), "%.*s", (int)(slash - at - 1),
                 at + 1);
    }
    q = strchr(slash, '?');
    snprintf(t->db, sizeof(t->db), "%.*s",
             (int)(q ? q - slash - 1 : (long)strlen(slash + 1)), slash + 1);
    return 0;
}

static inline MYSQL *raw_connect_as(const struct target *t, const char *user,
                                    const char *password)
{
    MYSQL *db = mysql_init(NULL);
    unsigned timeout = 10;

    mysql_optionsv(db, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    mysql_optionsv(db, MYSQL_OPT_READ_TIMEOUT, &timeout);
    mysql_optionsv(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    if (mysql_real_connect(db, t->host, user, password, t->db, t->port, NULL,
                           0) == NULL) {
        fprintf(stderr, "raw connect as %s: %s\n", user, mysql_error(db));
        mysql_close(db);
        return NULL;
    }
    return db;
}

static inline MYSQL *raw_connect(const struct target *t)
{
    MYSQL *db = raw_connect_as(t, t->user, t->password);

    if (db == NULL) {
        fprintf(stderr, "cannot connect the raw client\n");
        exit(2);
    }
    return db;
}

/* Run SQL built with printf; return the first column of the first row as
 * a number (-1 for NULL or no result, -2 on error; *err gets the error). */
static inline long long sqlf(MYSQL *db, unsigned *err, const char *fmt, ...)
{
    char sql[8192];
    va_list ap;
    MYSQL_RES *res;
    MYSQL_ROW row;
    long long v = -1;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    if (err != NULL)
        *err = 0;
    if (mysql_query(db, sql) != 0) {
        if (err != NULL)
            *err = mysql_errno(db);
        else
            fprintf(stderr, "  SQL failed: %s: %s\n", sql, mysql_error(db));
        return -2;
    }
    res = mysql_store_result(db);
    if (res == NULL)
        return (long long)mysql_affected_rows(db);
    row = mysql_fetch_row(res);
    if (row != NULL && row[0] != NULL)
        v = strtoll(row[0], NULL, 10);
    mysql_free_result(res);
    return v;
}

/* The first column of the first row as text (into buf). */
static inline const char *sqls(MYSQL *db, char *buf, size_t len,
                               const char *sql)
{
    MYSQL_RES *res;
    MYSQL_ROW row;

    buf[0] = '\0';
    if (mysql_query(db, sql) != 0) {
        fprintf(stderr, "  SQL failed: %s: %s\n", sql, mysql_error(db));
        return buf;
    }
    res = mysql_store_result(db);
    if (res != NULL && (row = mysql_fetch_row(res)) != NULL && row[0])
        snprintf(buf, len, "%s", row[0]);
    mysql_free_result(res);
    return buf;
}

/* A quoted, escaped SQL literal of s (static buffers, rotating). */
static inline const char *lit(MYSQL *db, const char *s)
{
    static char bufs[4][4200];
    static int i;
    char *b = bufs[i = (i + 1) % 4];

    b[0] = '\'';
    mysql_real_escape_string(db, b + 1, s, (unsigned long)strlen(s));
    strcat(b, "'");
    return b;
}

static inline long long mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline const char *test_url(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("DLOCK_TEST_MYSQL_URL");

    if (url == NULL || url[0] == '\0') {
        fprintf(stderr, "usage: %s URL (or set DLOCK_TEST_MYSQL_URL)\n",
                argv[0]);
        exit(2);
    }
    return url;
}

/* A name unique to this run. */
static inline const char *uniq(const char *base)
{
    static char bufs[8][2048];
    static int i;
    static unsigned run;
    char *b = bufs[i = (i + 1) % 8];

    if (run == 0)
        run = (unsigned)time(NULL) ^ ((unsigned)getpid() << 8);
    snprintf(b, sizeof(bufs[0]), "t%x-%s", run, base);
    return b;
}

#endif
