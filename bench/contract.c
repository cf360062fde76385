/*
 * contract.c - the contract's floor on each SQL server and etcd, and the
 * server's CPU time (contract.h says what the floor is and why).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef DLOCK_HAVE_ETCD
#include <json-c/json.h>
#include <openssl/evp.h>
#endif

#include "contract.h"

#define CFLOOR_NAME "dlock-contract-floor"

#if defined(DLOCK_HAVE_POSTGRES) || defined(DLOCK_HAVE_MYSQL) ||               \
    defined(DLOCK_HAVE_ETCD)
/* A new owner token per cycle, as dlock's (random 128 bits, hex): the
 * index sees the same spread of keys.  Seeded again in a fork child (the
 * hand-off floors' contenders), so no two processes draw the same ones. */
const char *cfloor_owner(void)
{
    static char o[40];
    static unsigned long long n;
    static pid_t seeded;

    if (seeded != getpid()) {
        seeded = getpid();
        n = ((unsigned long long)seeded << 32) ^ 0x9e3779b97f4a7c15ULL;
    }
    n = n * 6364136223846793005ULL + 1442695040888963407ULL;
    snprintf(o, sizeof(o), "%016llx%016llx", n, n * 0xff51afd7ed558ccdULL);
    return o;
}
#endif

/* --- PostgreSQL --------------------------------------------------------- */

#ifdef DLOCK_HAVE_POSTGRES
static void cfloor_quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static int cfloor_pg_ok(PGresult *r)
{
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK ||
             PQresultStatus(r) == PGRES_TUPLES_OK;

    if (!ok)
        fprintf(stderr, "contract floor: %s", PQresultErrorMessage(r));
    PQclear(r);
    return ok ? 0 : -1;
}

int cfloor_pg_setup(PGconn *c)
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

int cfloor_pg_cycle(PGconn *c)
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

void cfloor_pg_teardown(PGconn *c)
{
    PQclear(PQexec(c, "DEALLOCATE cfloor_acq"));
    PQclear(PQexec(c, "DEALLOCATE cfloor_rel"));
    PQclear(PQexec(c, "DROP TABLE IF EXISTS dlock_cfloor_held"));
    PQclear(PQexec(c, "DROP SEQUENCE IF EXISTS dlock_cfloor_seq"));
}

/* The postmaster: the parent of our backend. */
long cfloor_pg_server_pid(PGconn *c)
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

static int cfloor_my_q(MYSQL *c, const char *sql)
{
    if (mysql_query(c, sql) != 0) {
        fprintf(stderr, "contract floor: %s: %s\n", sql, mysql_error(c));
        return -1;
    }
    mysql_free_result(mysql_store_result(c));
    return 0;
}

/* -1: the server has no SEQUENCE (MySQL, MariaDB < 10.3). */
int cfloor_my_setup(MYSQL *c)
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

static int cfloor_my_stmt(MYSQL *c, const char *sql)
{
    MYSQL_RES *r;

    if (mysql_query(c, sql) != 0)
        return -1;
    r = mysql_store_result(c);
    mysql_free_result(r);
    return r == NULL && mysql_affected_rows(c) == 1 ? 0 : -1;
}

int cfloor_my_cycle(MYSQL *c, int engine)
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

void cfloor_my_teardown(MYSQL *c)
{
    (void)cfloor_my_q(c, "DROP TABLE IF EXISTS dlock_cfloor_memory, "
                         "dlock_cfloor_myisam");
    (void)cfloor_my_q(c, "DROP SEQUENCE IF EXISTS dlock_cfloor_seq");
}

/* mariadbd's pid, from its pid file (same machine only). */
long cfloor_my_server_pid(MYSQL *c)
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

/* --- etcd ---------------------------------------------------------------- */

#ifdef DLOCK_HAVE_ETCD
static size_t cfloor_etcd_data(char *p, size_t sz, size_t n, void *arg)
{
    struct cfloor_etcd *c = arg;
    size_t k = sz * n;

    if (c->len + k + 1 > c->cap) {
        size_t cap = (c->len + k + 1) * 2;
        char *b = realloc(c->buf, cap);

        if (b == NULL)
            return 0;
        c->buf = b;
        c->cap = cap;
    }
    memcpy(c->buf + c->len, p, k);
    c->len += k;
    c->buf[c->len] = '\0';
    return k;
}

int cfloor_etcd_open(struct cfloor_etcd *c, const char *host, int port)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->base, sizeof(c->base),
             strchr(host, ':') ? "http://[%s]:%d" : "http://%s:%d", host, port);
    c->h = curl_easy_init();
    c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    if (c->h == NULL || c->hdrs == NULL)
        return -1;
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c->h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(c->h, CURLOPT_PROXY, "");
    curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, cfloor_etcd_data);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
    return 0;
}

/* GET path (body NULL) or POST body to it: 0 and the reply in c->buf on
 * HTTP 200. */
int cfloor_etcd_req(struct cfloor_etcd *c, const char *path, const char *body)
{
    char url[400];
    long code = 0;
    CURLcode rc;

    snprintf(url, sizeof(url), "%s%s", c->base, path);
    c->len = 0;
    if (c->buf != NULL)
        c->buf[0] = '\0';
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    if (body != NULL) {
        curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->hdrs);
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
    }
    rc = curl_easy_perform(c->h);
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
    if (rc != CURLE_OK || code != 200) {
        fprintf(stderr, "etcd %s: %s (HTTP %ld) %.200s\n", path,
                curl_easy_strerror(rc), code, c->buf ? c->buf : "");
        return -1;
    }
    return 0;
}

/* POST the JSON object body (consumed) and parse the reply into *out
 * (may be NULL: parsed and dropped), as the store does its own. */
static int cfloor_etcd_post(struct cfloor_etcd *c, const char *path,
                            json_object *body, json_object **out)
{
    json_object *r;
    int rc = cfloor_etcd_req(
        c, path, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));

    json_object_put(body);
    if (rc != 0)
        return -1;
    r = json_tokener_parse(c->buf);
    if (r == NULL || !json_object_object_get_ex(r, "header", NULL)) {
        json_object_put(r);
        return -1;
    }
    if (out != NULL)
        *out = r;
    else
        json_object_put(r);
    return 0;
}

static json_object *cfloor_etcd_b64(const char *s)
{
    size_t n = strlen(s);
    char *b = malloc(4 * ((n + 2) / 3) + 1);
    json_object *o;

    if (b == NULL)
        return NULL;
    EVP_EncodeBlock((unsigned char *)b, (const unsigned char *)s, (int)n);
    o = json_object_new_string(b);
    free(b);
    return o;
}

/* The cheapest round trip through the gateway: a serializable range of
 * a key that is not there (no Raft, no disk). */
int cfloor_etcd_noop(struct cfloor_etcd *c)
{
    json_object *b = json_object_new_object();

    json_object_object_add(b, "key", cfloor_etcd_b64(CFLOOR_NAME "-noop"));
    json_object_object_add(b, "serializable", json_object_new_boolean(1));
    return cfloor_etcd_post(c, "/v3/kv/range", b, NULL);
}

/* The floor's lease, granted once for 600 s (longer than any run: never
 * kept alive, so no keepalive is timed) and its key. */
int cfloor_etcd_setup(struct cfloor_etcd *c)
{
    json_object *b = json_object_new_object(), *r = NULL, *id;

    json_object_object_add(b, "TTL", json_object_new_int64(600));
    if (cfloor_etcd_post(c, "/v3/lease/grant", b, &r) != 0)
        return -1;
    if (json_object_object_get_ex(r, "ID", &id))
        c->lease = strtoll(json_object_get_string(id), NULL, 10);
    json_object_put(r);
    if (c->lease == 0)
        return -1;
    snprintf(c->key, sizeof(c->key), CFLOOR_NAME "/%llx",
             (unsigned long long)c->lease);
    return 0;
}

/* A txn op of kind ("request_put", ...) on body o. */
static json_object *cfloor_etcd_op(const char *kind, json_object *o)
{
    json_object *op = json_object_new_object();

    json_object_object_add(op, kind, o);
    return op;
}

/* A range of the floor's name (every key under CFLOOR_NAME "/"), by
 * create revision: the Mutex's queue read. */
static json_object *cfloor_etcd_queue(void)
{
    json_object *r = json_object_new_object();

    json_object_object_add(r, "key", cfloor_etcd_b64(CFLOOR_NAME "/"));
    json_object_object_add(r, "range_end", cfloor_etcd_b64(CFLOOR_NAME "0"));
    json_object_object_add(r, "sort_order", json_object_new_string("ASCEND"));
    json_object_object_add(r, "sort_target", json_object_new_string("CREATE"));
    return cfloor_etcd_op("request_range", r);
}

/* A compare of the key's create revision with rev. */
static json_object *cfloor_etcd_cmp(const char *key, long long rev)
{
    json_object *c = json_object_new_object();

    json_object_object_add(c, "key", cfloor_etcd_b64(key));
    json_object_object_add(c, "target", json_object_new_string("CREATE"));
    json_object_object_add(c, "result", json_object_new_string("EQUAL"));
    json_object_object_add(c, "create_revision", json_object_new_int64(rev));
    return c;
}

/* One cycle, each reply checked.  The floor: the put (holder record as
 * the value, on the lease), the deleterange.  With c->txn, the shape of
 * etcd's own Mutex (and of dlock's requests): a txn If(CreateRevision
 * (key) == 0) Then(Put, Range(name by create revision)) Else(Range(key),
 * Range(name)), then a txn If(CreateRevision(key) == the fence)
 * Then(Delete): what the server does for the recipe, our client's cost. */
int cfloor_etcd_cycle(struct cfloor_etcd *c)
{
    char rec[512];
    json_object *b = json_object_new_object(), *r = NULL, *f, *put;
    long long fence = 0;
    int64_t deleted = 0;

    snprintf(rec, sizeof(rec),
             "{\"dlock\":1,\"token\":\"%s\",\"host\":\"benchhost\","
             "\"pid\":4242,\"since_ms\":1700000000000,\"ttl_ms\":"
             "30000,\"limit\":1,\"shared\":0}",
             cfloor_owner());
    put = json_object_new_object();
    json_object_object_add(put, "key", cfloor_etcd_b64(c->key));
    json_object_object_add(put, "value", cfloor_etcd_b64(rec));
    json_object_object_add(put, "lease", json_object_new_int64(c->lease));
    if (!c->txn) {
        json_object_put(b);
        if (cfloor_etcd_post(c, "/v3/kv/put", put, &r) != 0)
            return -1;
        json_object_put(r);
        b = json_object_new_object();
        json_object_object_add(b, "key", cfloor_etcd_b64(c->key));
        if (cfloor_etcd_post(c, "/v3/kv/deleterange", b, &r) != 0)
            return -1;
    } else {
        json_object *a = json_object_new_array();

        json_object_array_add(a, cfloor_etcd_cmp(c->key, 0));
        json_object_object_add(b, "compare", a);
        a = json_object_new_array();
        json_object_array_add(a, cfloor_etcd_op("request_put", put));
        json_object_array_add(a, cfloor_etcd_queue());
        json_object_object_add(b, "success", a);
        a = json_object_new_array();
        f = json_object_new_object();
        json_object_object_add(f, "key", cfloor_etcd_b64(c->key));
        json_object_array_add(a, cfloor_etcd_op("request_range", f));
        json_object_array_add(a, cfloor_etcd_queue());
        json_object_object_add(b, "failure", a);
        if (cfloor_etcd_post(c, "/v3/kv/txn", b, &r) != 0)
            return -1;
        /* succeeded, and our key first: its create revision (the fence)
         * is the header's revision */
        if (json_object_object_get_ex(r, "succeeded", &f) &&
            json_object_get_boolean(f) &&
            json_object_object_get_ex(r, "header", &f) &&
            json_object_object_get_ex(f, "revision", &f))
            fence = strtoll(json_object_get_string(f), NULL, 10);
        json_object_put(r);
        if (fence == 0)
            return -1;
        b = json_object_new_object();
        a = json_object_new_array();
        json_object_array_add(a, cfloor_etcd_cmp(c->key, fence));
        json_object_object_add(b, "compare", a);
        a = json_object_new_array();
        f = json_object_new_object();
        json_object_object_add(f, "key", cfloor_etcd_b64(c->key));
        json_object_array_add(a, cfloor_etcd_op("request_delete_range", f));
        json_object_object_add(b, "success", a);
        if (cfloor_etcd_post(c, "/v3/kv/txn", b, &r) != 0)
            return -1;
        /* the txn's first response: response_delete_range.deleted */
        if (json_object_object_get_ex(r, "responses", &f) &&
            json_object_array_length(f) == 1 &&
            json_object_object_get_ex(json_object_array_get_idx(f, 0),
                                      "response_delete_range", &f) &&
            json_object_object_get_ex(f, "deleted", &f))
            deleted = strtoll(json_object_get_string(f), NULL, 10);
        json_object_put(r);
        return deleted == 1 ? 0 : -1;
    }
    if (json_object_object_get_ex(r, "deleted", &f))
        deleted = strtoll(json_object_get_string(f), NULL, 10);
    json_object_put(r);
    return deleted == 1 ? 0 : -1;
}

void cfloor_etcd_teardown(struct cfloor_etcd *c)
{
    json_object *b = json_object_new_object();

    if (c->lease == 0) {
        json_object_put(b);
        return;
    }
    json_object_object_add(b, "ID", json_object_new_int64(c->lease));
    (void)cfloor_etcd_post(c, "/v3/lease/revoke", b, NULL);
    c->lease = 0;
}

void cfloor_etcd_close(struct cfloor_etcd *c)
{
    cfloor_etcd_teardown(c);
    if (c->h != NULL)
        curl_easy_cleanup(c->h);
    curl_slist_free_all(c->hdrs);
    free(c->buf);
    memset(c, 0, sizeof(*c));
}

/* The member's pid, for its CPU time: DLOCK_TEST_ETCD_DIR's (scripts/
 * server-etcd.sh) first member, when that directory is given. */
long cfloor_etcd_server_pid(void)
{
    const char *d = getenv("DLOCK_TEST_ETCD_DIR");
    char path[4200];
    long pid = -1;
    FILE *f;

    if (d == NULL || *d == '\0')
        return -1;
    snprintf(path, sizeof(path), "%s/m1/pid", d);
    f = fopen(path, "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = -1;
    fclose(f);
    return pid;
}
#endif

/* --- the server's CPU ------------------------------------------------------
 */

/* CPU time (ns, schedstat) of every thread of pid. */
static long long cfloor_cpu_of(long pid)
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
long long cfloor_server_cpu_ns(long pid)
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
