/*
 * noop.c - a client of our own per store, doing the cheapest round trip
 * its server has.  It uses the same client libraries as libdlock, over a
 * separate connection, so the baseline is the physical limit of that
 * server and client, not of dlock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>
#ifdef DLOCK_HAVE_REDIS
#include <hiredis/hiredis.h>
#endif
#ifdef DLOCK_HAVE_POSTGRES
#include <libpq-fe.h>
#endif
#ifdef DLOCK_HAVE_MYSQL
#include <mysql.h>
#endif

#ifdef DLOCK_HAVE_ETCD
#include <json-c/json.h>
#endif

#include "bench.h"
#include "contract.h" /* etcd: the client of our own */
#include "dlock.h"
#include "internal.h" /* the URL parser */

struct bench_noop {
    char kind;
    long long own_requests; /* bench_server_requests() calls so far */
    sqlite3 *db;
    sqlite3 *durable; /* SQLite: a one-row commit, fsync included */
#ifdef DLOCK_HAVE_REDIS
    redisContext *rc;
#endif
#ifdef DLOCK_HAVE_POSTGRES
    PGconn *pg;
#endif
#ifdef DLOCK_HAVE_MYSQL
    MYSQL *my;
#endif
#ifdef DLOCK_HAVE_ETCD
    struct cfloor_etcd *etcd;
#endif
};

static char version[128] = "unknown";

#ifdef DLOCK_HAVE_POSTGRES
/* The URL libpq gets: dlock's own options removed. */
static char *pg_conninfo(const char *url)
{
    char *s = strdup(url), *q;

    if (s == NULL || (q = strchr(s, '?')) == NULL)
        return s;
    {
        char *out = calloc(1, strlen(s) + 2), *tok, *save = NULL;
        int first = 1;

        if (out == NULL)
            return s;
        memcpy(out, s, (size_t)(q - s));
        for (tok = strtok_r(q + 1, "&", &save); tok != NULL;
             tok = strtok_r(NULL, "&", &save)) {
            if (!strncmp(tok, "keys=", 5) || !strncmp(tok, "mode=", 5) ||
                !strncmp(tok, "timeout=", 8) || !strncmp(tok, "max_keys=", 9))
                continue;
            strcat(out, first ? "?" : "&");
            strcat(out, tok);
            first = 0;
        }
        free(s);
        return out;
    }
}
#endif

int bench_noop_open(struct bench_noop **out, const char *url)
{
    struct dlock_url *u;
    struct bench_noop *n = calloc(1, sizeof(*n));

    if (n == NULL || dlock__url_parse(&u, url) != DLOCK_OK) {
        free(n);
        return -1;
    }
    *out = n;
    n->kind = u->scheme[0];
    if (!strcmp(u->scheme, "sqlite")) {
        if (sqlite3_open(u->path, &n->db) != SQLITE_OK)
            goto fail;
        sqlite3_busy_timeout(n->db, 5000);
        {
            char path[4200];

            snprintf(path, sizeof(path), "%s-bench-noop", u->path);
            if (sqlite3_open(path, &n->durable) != SQLITE_OK ||
                sqlite3_exec(n->durable,
                             "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                             "CREATE TABLE IF NOT EXISTS t (k INTEGER "
                             "PRIMARY KEY, v INTEGER)",
                             NULL, NULL, NULL) != SQLITE_OK)
                goto fail;
        }
        snprintf(version, sizeof(version), "SQLite %s", sqlite3_libversion());
        dlock__url_free(u);
        return 0;
    }
#ifdef DLOCK_HAVE_REDIS
    if (!strcmp(u->scheme, "redis") || !strcmp(u->scheme, "unix")) {
        redisReply *r;

        n->kind = 'r';
        n->rc = !strcmp(u->scheme, "unix")
                    ? redisConnectUnix(u->path)
                    : redisConnect(u->host ? u->host : "127.0.0.1",
                                   u->port ? u->port : 6379);
        if (n->rc == NULL || n->rc->err)
            goto fail;
        if (u->password != NULL) {
            r = u->user && u->user[0]
                    ? redisCommand(n->rc, "AUTH %s %s", u->user, u->password)
                    : redisCommand(n->rc, "AUTH %s", u->password);
            freeReplyObject(r);
        }
        r = redisCommand(n->rc, "INFO server");
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            const char *v = strstr(r->str, "redis_version:");

            if (v != NULL)
                snprintf(version, sizeof(version), "Redis %.*s",
                         (int)strcspn(v + 14, "\r\n"), v + 14);
        }
        freeReplyObject(r);
        dlock__url_free(u);
        return 0;
    }
#endif
#ifdef DLOCK_HAVE_POSTGRES
    if (!strncmp(u->scheme, "postgres", 8)) {
        char *ci = pg_conninfo(url);

        n->kind = 'p';
        n->pg = PQconnectdb(ci);
        free(ci);
        if (PQstatus(n->pg) != CONNECTION_OK)
            goto fail;
        snprintf(version, sizeof(version), "PostgreSQL %s",
                 PQparameterStatus(n->pg, "server_version"));
        dlock__url_free(u);
        return 0;
    }
#endif
#ifdef DLOCK_HAVE_MYSQL
    if (!strcmp(u->scheme, "mysql") || !strcmp(u->scheme, "mariadb")) {
        n->kind = 'm';
        n->my = mysql_init(NULL);
        if (n->my == NULL ||
            !mysql_real_connect(n->my, u->host ? u->host : "127.0.0.1", u->user,
                                u->password,
                                u->path && u->path[1] ? u->path + 1 : NULL,
                                (unsigned)u->port, NULL, 0))
            goto fail;
        snprintf(version, sizeof(version), "MySQL/MariaDB %s",
                 mysql_get_server_info(n->my));
        dlock__url_free(u);
        return 0;
    }
#endif
#ifdef DLOCK_HAVE_ETCD
    /* The first endpoint only (a single member: what the bench runs on);
     * no auth, no TLS. */
    if (!strcmp(u->scheme, "etcd")) {
        char **hosts = NULL;
        int *ports = NULL, nh = 0, ok;
        json_object *r;

        n->kind = 'e';
        ok = u->password == NULL &&
             dlock__url_hosts(u, 2379, "etcd", &hosts, &ports, &nh) ==
                 DLOCK_OK &&
             nh > 0 && (n->etcd = calloc(1, sizeof(*n->etcd))) != NULL &&
             cfloor_etcd_open(n->etcd, hosts[0], ports[0]) == 0 &&
             cfloor_etcd_req(n->etcd, "/version", NULL) == 0;
        for (int i = 0; i < nh; i++)
            free(hosts[i]);
        free(hosts);
        free(ports);
        if (!ok)
            goto fail;
        r = json_tokener_parse(n->etcd->buf);
        {
            json_object *v;

            if (r != NULL && json_object_object_get_ex(r, "etcdserver", &v))
                snprintf(version, sizeof(version), "etcd %s",
                         json_object_get_string(v));
        }
        json_object_put(r);
        dlock__url_free(u);
        return 0;
    }
#endif
fail:
    dlock__url_free(u);
    bench_noop_close(n);
    *out = NULL;
    return -1;
}

int bench_noop(struct bench_noop *n)
{
    switch (n->kind) {
    case 's':
        return sqlite3_exec(n->db, "BEGIN IMMEDIATE; COMMIT;", NULL, NULL,
                            NULL) == SQLITE_OK
                   ? 0
                   : -1;
#ifdef DLOCK_HAVE_REDIS
    case 'r': {
        redisReply *r = redisCommand(n->rc, "PING");
        int ok = r != NULL && r->type == REDIS_REPLY_STATUS;

        freeReplyObject(r);
        return ok ? 0 : -1;
    }
#endif
#ifdef DLOCK_HAVE_POSTGRES
    case 'p': {
        PGresult *r = PQexec(n->pg, "SELECT 1");
        int ok = PQresultStatus(r) == PGRES_TUPLES_OK;

        PQclear(r);
        return ok ? 0 : -1;
    }
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm':
        return mysql_query(n->my, "DO 1") == 0 ? 0 : -1;
#endif
#ifdef DLOCK_HAVE_ETCD
    case 'e':
        return cfloor_etcd_noop(n->etcd);
#endif
    }
    return -1;
}

int bench_noop_durable(struct bench_noop *n)
{
    if (n->kind != 's')
        return -1;
    return sqlite3_exec(n->durable,
                        "BEGIN IMMEDIATE; INSERT OR REPLACE INTO t "
                        "VALUES (1, random()); COMMIT;",
                        NULL, NULL, NULL) == SQLITE_OK
               ? 0
               : -1;
}

long long bench_server_requests(struct bench_noop *n)
{
    switch (n->kind) {
#ifdef DLOCK_HAVE_REDIS
    case 'r': {
        /* Commands a client sent: commandstats counts the redis.call()s
         * inside scripts too, so only these names count.  INFO itself is
         * counted after it answers, so the next reading includes it. */
        static const char *const top[] = {
            "evalsha",     "eval",           "evalsha_ro", "eval_ro",
            "subscribe",   "unsubscribe",    "ping",       "info",
            "script|load", "script|exists",  "hello",      "auth",
            "select",      "client|setname", NULL};
        redisReply *r = redisCommand(n->rc, "INFO commandstats");
        long long total = 0;

        if (r == NULL || r->type != REDIS_REPLY_STRING) {
            freeReplyObject(r);
            return -1;
        }
        for (const char *l = r->str; l != NULL && *l; l = strchr(l, '\n')) {
            char name[64];
            long long calls;

            if (*l == '\n')
                l++;
            if (sscanf(l, "cmdstat_%63[^:]:calls=%lld", name, &calls) != 2)
                continue;
            for (int i = 0; top[i] != NULL; i++)
                if (strcmp(name, top[i]) == 0)
                    total += calls;
        }
        freeReplyObject(r);
        return total - n->own_requests++; /* our earlier INFOs */
    }
#endif
#ifdef DLOCK_HAVE_POSTGRES
    case 'p': {
        /* Top-level statements of every client, as pg_stat_statements
         * counts them the moment they end (where the server loads it). */
        PGresult *r = PQexec(n->pg, "SELECT sum(calls) FROM "
                                    "pg_stat_statements");
        long long v = -1;

        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
            !PQgetisnull(r, 0, 0))
            v = strtoll(PQgetvalue(r, 0, 0), NULL, 10) - n->own_requests++;
        PQclear(r);
        return v;
    }
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm': {
        MYSQL_RES *res;
        MYSQL_ROW row;
        long long v = -1;

        if (mysql_query(n->my, "SHOW GLOBAL STATUS LIKE 'Questions'") != 0 ||
            (res = mysql_store_result(n->my)) == NULL)
            return -1;
        row = mysql_fetch_row(res);
        if (row != NULL && row[1] != NULL)
            v = strtoll(row[1], NULL, 10) - 1 /* this statement */
                - n->own_requests++;          /* and the ones before */
        mysql_free_result(res);
        return v;
    }
#endif
#ifdef DLOCK_HAVE_ETCD
    case 'e': {
        /* gRPC calls and streams the member started, of every client
         * (the gateway turns each POST into one; a watch or keepalive
         * stream counts once); /metrics itself is no gRPC call. */
        long long total = 0;
        int seen = 0;

        if (cfloor_etcd_req(n->etcd, "/metrics", NULL) != 0)
            return -1;
        for (const char *l = n->etcd->buf; l != NULL && *l;
             l = strchr(l, '\n')) {
            const char *v;

            if (*l == '\n')
                l++;
            if (strncmp(l, "grpc_server_started_total{", 26) != 0)
                continue;
            v = strchr(l, '}');
            if (v != NULL) {
                total += (long long)strtod(v + 1, NULL);
                seen = 1;
            }
        }
        return seen ? total : -1;
    }
#endif
    }
    return -1;
}

void bench_noop_close(struct bench_noop *n)
{
    if (n == NULL)
        return;
    sqlite3_close(n->db);
    sqlite3_close(n->durable);
#ifdef DLOCK_HAVE_REDIS
    if (n->rc != NULL)
        redisFree(n->rc);
#endif
#ifdef DLOCK_HAVE_POSTGRES
    if (n->pg != NULL)
        PQfinish(n->pg);
#endif
#ifdef DLOCK_HAVE_MYSQL
    if (n->my != NULL)
        mysql_close(n->my);
#endif
#ifdef DLOCK_HAVE_ETCD
    if (n->etcd != NULL)
        cfloor_etcd_close(n->etcd);
    free(n->etcd);
#endif
    free(n);
}

void *bench_noop_conn(struct bench_noop *n)
{
    switch (n->kind) {
#ifdef DLOCK_HAVE_REDIS
    case 'r':
        return n->rc;
#endif
#ifdef DLOCK_HAVE_POSTGRES
    case 'p':
        return n->pg;
#endif
#ifdef DLOCK_HAVE_MYSQL
    case 'm':
        return n->my;
#endif
#ifdef DLOCK_HAVE_ETCD
    case 'e':
        return n->etcd;
#endif
    }
    return n->db;
}

char bench_noop_kind(struct bench_noop *n)
{
    return n->kind;
}

const char *bench_server_version(const char *url)
{
    struct bench_noop *n;

    if (bench_noop_open(&n, url) == 0)
        bench_noop_close(n);
    return version;
}
