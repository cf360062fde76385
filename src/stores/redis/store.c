/*
 * store.c - the Redis store's ops table: open and close, acquire, extend,
 * assert, release, status, list and force-release (see redis.h for the
 * keys and the threads).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "locks.h"

#define DEFAULT_PREFIX "dlock:"
#define DEFAULT_TIMEOUT_MS 5000
#define DEFAULT_REPLICAS_TIMEOUT_MS 1000

/* --- open / close ------------------------------------------------------ */

static void redis_close(struct dlock_store *s)
{
    struct redis_store *rs = (struct redis_store *)s;

    dlock__redis_sub_stop(rs);
    if (rs->pool.ops != NULL)
        dlock__pool_destroy(&rs->pool);
    dlock__redis_chans_free(rs);
    dlock__redis_cluster_free(rs);
    dlock__redis_scripts_free(rs);
    dlock__redis_master_free(rs);
    free(rs->pend);
    pthread_mutex_destroy(&rs->tmu);
    pthread_mutex_destroy(&rs->mu);
    pthread_mutex_destroy(&rs->smu);
    free(rs->host);
    free(rs->sock);
    free(rs->user);
    free(rs->password);
    free(rs->prefix);
    dlock__rtls_free(rs->tls);
    free(rs);
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;

    if (s == NULL || *s == '\0')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* The database: /N in a redis:// path, or ?db=N (the only spelling where
 * the path is a socket or a master name).  Both may be given only if they
 * agree: one URL names one database. */
static int parse_db(struct redis_store *rs, const struct dlock_url *u,
                    int path_is_db)
{
    const char *v = dlock__url_param(u, "db");
    int path_db = -1, db;

    if (path_is_db && u->path != NULL && strcmp(u->path, "/") != 0 &&
        parse_int(u->path + 1, 0, 100000, &path_db) != 0)
        return dlock__seterr(DLOCK_EINVAL,
                             "the path of a redis URL is "
                             "the database number: %s",
                             u->redacted);
    rs->db = path_db >= 0 ? path_db : 0;
    if (v == NULL)
        return DLOCK_OK;
    if (parse_int(v, 0, 100000, &db) != 0)
        return dlock__seterr(DLOCK_EINVAL, "bad db=%s in %s", v, u->redacted);
    if (path_db >= 0 && db != path_db)
        return dlock__seterr(DLOCK_EINVAL,
                             "db=%s disagrees with the "
                             "database /%d of the path in %s",
                             v, path_db, u->redacted);
    rs->db = db;
    return DLOCK_OK;
}

static int redis_open(struct dlock_store **out, const struct dlock_url *u)
{
    static const char *const known[] = {
        "prefix",   "connect_timeout",  "timeout", "db",  "password",
        "fair",     "cacert",           "cert",    "key", "sni",
        "replicas", "replicas_timeout", NULL};
    static const char *const tls_only[] = {"cacert", "cert", "key", "sni"};
    struct redis_store *rs;
    struct dlock__nopipe np;
    const char *v;
    void *c;
    /* rediss://, rediss-sentinel://, rediss-cluster://: the same over
     * TLS (the "s" of https://, as redis-cli, redis-py and the others
     * spell it).  No ?tls= as well: one spelling, so a URL never says
     * TLS one way and plaintext the other. */
    int tls = strncmp(u->scheme, "rediss", 6) == 0;
    const char *kind = tls                                   ? u->scheme + 6
                       : strncmp(u->scheme, "redis", 5) == 0 ? u->scheme + 5
                                                             : "";
    int rc, is_unix = strcmp(u->scheme, "unix") == 0,
            is_sentinel = strcmp(kind, "-sentinel") == 0,
            is_cluster = strcmp(kind, "-cluster") == 0;

    if (dlock__url_param(u, "tls") != NULL ||
        dlock__url_param(u, "ssl") != NULL)
        return dlock__seterr(DLOCK_EINVAL,
                             "TLS is spelled rediss:// "
                             "(rediss-sentinel://, rediss-cluster://), not "
                             "?tls= or ?ssl=: %s",
                             u->redacted);
    rc = dlock__url_check_params(u, known);
    if (rc != DLOCK_OK)
        return rc;
    for (size_t i = 0; !tls && i < sizeof(tls_only) / sizeof(*tls_only); i++)
        if (dlock__url_param(u, tls_only[i]) != NULL)
            return dlock__seterr(DLOCK_EINVAL,
                                 "?%s= is for TLS, which is "
                                 "spelled rediss://: %s",
                                 tls_only[i], u->redacted);
    rs = calloc(1, sizeof(*rs));
    if (rs == NULL)
        return dlock__enomem();
    pthread_mutex_init(&rs->mu, NULL);
    pthread_mutex_init(&rs->smu, NULL);
    pthread_mutex_init(&rs->tmu, NULL);
    rs->url = u->redacted;
    rs->connect_timeout_ms = DEFAULT_TIMEOUT_MS;
    rs->timeout_ms = DEFAULT_TIMEOUT_MS;
    rc = dlock__url_param_ms(u, "connect_timeout", 1000,
                             &rs->connect_timeout_ms);
    if (rc == DLOCK_OK)
        rc = dlock__url_param_ms(u, "timeout", 1000, &rs->timeout_ms);
    if (rc != DLOCK_OK)
        goto fail;
    if (rs->connect_timeout_ms <= 0 || rs->timeout_ms <= 0) {
        rc = dlock__seterr(DLOCK_EINVAL, "timeouts must be positive in %s",
                           u->redacted);
        goto fail;
    }
    {
        /* The handle's id (rs->hid): half of a fresh owner token. */
        char t[DLOCK_TOKEN_HEX + 1];

        rc = dlock__token(t);
        if (rc != DLOCK_OK)
            goto fail;
        memcpy(rs->hid, t, 16);
        rs->hid[16] = '\0';
    }
    v = dlock__url_param(u, "fair");
    rs->fair = 1;
    if (v != NULL && parse_int(v, 0, 1, &rs->fair) != 0) {
        rc = dlock__seterr(DLOCK_EINVAL, "fair must be 0 or 1 in %s",
                           u->redacted);
        goto fail;
    }
    v = dlock__url_param(u, "replicas");
    rs->acks = -1;
    rs->replicas_timeout_ms = DEFAULT_REPLICAS_TIMEOUT_MS;
    if (v != NULL && parse_int(v, 0, 1000, &rs->replicas) != 0) {
        rc = dlock__seterr(DLOCK_EINVAL, "replicas must be 0..1000 in %s",
                           u->redacted);
        goto fail;
    }
    rc = dlock__url_param_ms(u, "replicas_timeout", 1000,
                             &rs->replicas_timeout_ms);
    if (rc != DLOCK_OK)
        goto fail;
    if (rs->replicas_timeout_ms <= 0) {
        rc = dlock__seterr(DLOCK_EINVAL,
                           "replicas_timeout must be "
                           "positive in %s",
                           u->redacted);
        goto fail;
    }
    v = dlock__url_param(u, "prefix");
    rs->prefix = dlock__strdup(v != NULL ? v : DEFAULT_PREFIX);
    if (rs->prefix == NULL) {
        rc = dlock__enomem();
        goto fail;
    }
    rs->prefix_len = strlen(rs->prefix);
    if (is_unix) {
        if (u->path == NULL || u->path[0] != '/' ||
            (u->host != NULL && u->host[0] != '\0')) {
            rc = dlock__seterr(DLOCK_EINVAL,
                               "expected unix:///path/to/"
                               "redis.sock, got %s",
                               u->redacted);
            goto fail;
        }
        rs->sock = dlock__strdup(u->path);
    } else if (is_cluster) {
        rs->cluster = 1;
        rs->host = dlock__strdup(""); /* the nodes have theirs */
    } else if (is_sentinel) {
        rc = dlock__redis_sentinel_parse(rs, u);
        if (rc != DLOCK_OK)
            goto fail;
        rs->host = dlock__strdup(rs->sent_host[0]); /* until asked */
    } else {
        rs->host = dlock__strdup(
            u->host != NULL && u->host[0] != '\0' ? u->host : "127.0.0.1");
        rs->port = u->port != 0 ? u->port : 6379;
    }
    if (!is_cluster) { /* cluster.c: database 0 only */
        rc = parse_db(rs, u, !is_unix && !is_sentinel);
        if (rc != DLOCK_OK)
            goto fail;
    }
    if ((is_unix && rs->sock == NULL) || (!is_unix && rs->host == NULL)) {
        rc = dlock__enomem();
        goto fail;
    }
    v = u->password != NULL ? u->password : dlock__url_param(u, "password");
    if (v != NULL && (rs->password = dlock__strdup(v)) == NULL) {
        rc = dlock__enomem();
        goto fail;
    }
    if (u->user != NULL && (rs->user = dlock__strdup(u->user)) == NULL) {
        rc = dlock__enomem();
        goto fail;
    }
    if (tls) {
        rc = dlock__rtls_new(&rs->tls, dlock__url_param(u, "cacert"),
                             dlock__url_param(u, "cert"),
                             dlock__url_param(u, "key"),
                             dlock__url_param(u, "sni"), u->redacted);
        if (rc != DLOCK_OK)
            goto fail;
    }
    rc = dlock__redis_scripts_init(rs);
    if (rc != DLOCK_OK)
        goto fail;
    /* Connect now: a wrong address or password is reported by open, not
     * by the first acquire.  The connection waits in the pool.  A cluster
     * is asked for its slot map (cluster.c). */
    if (is_cluster) {
        pthread_mutex_lock(&rs->mu);
        rc = dlock__redis_cluster_open(rs, u);
        pthread_mutex_unlock(&rs->mu);
        if (rc != DLOCK_OK)
            goto fail;
        *out = &rs->base;
        return DLOCK_OK;
    }
    dlock__pool_init(&rs->pool, &dlock__redis_pool_ops, rs, 1);
    dlock__redis_nopipe_begin(&np);
    rc = dlock__pool_open(&rs->pool, &c);
    /* Sentinel: the sentinels answer, but the master they name does not
     * (yet): a failover under way.  Open without a connection, as
     * redis-cluster:// does while a slot's master is down: the first
     * command connects, and an acquire that may wait waits the failover
     * out within its deadline, as it does an outage met later. */
    if (rc == DLOCK_EUNAVAIL && is_sentinel &&
        dlock__redis_sentinel_knows(rs)) {
        dlock__redis_nopipe_end(&np);
        dlock__clearerr();
        *out = &rs->base;
        return DLOCK_OK;
    }
    dlock__redis_nopipe_end(&np);
    if (rc != DLOCK_OK)
        goto fail;
    dlock__pool_put(&rs->pool, c);
    *out = &rs->base;
    return DLOCK_OK;
fail:
    redis_close(&rs->base);
    return rc;
}

static int redis_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                             int64_t deadline, int64_t *retry_ms)
{
    int foreign = 0, rc;
    long long place = 0;
    uint64_t epoch = 0;

    (void)deadline; /* one round trip, bounded by the timeout */
    rc = dlock__redis_attempt((struct redis_store *)s, lk, Q_TRY, retry_ms,
                              &foreign, &place, &epoch);
    if (rc == DLOCK_OK)
        dlock__redis_held(lk, epoch);
    return rc;
}

/* --- status, list, force_release ------------------------------------ */

static int describe(struct redis_store *rs, const char *name, dlock_info *out)
{
    struct dlock__rkeys k;
    redisReply *r;
    const char *a[2] = {"", ""};
    size_t al[2] = {0, 0};
    int rc;

    rc = dlock__redis_keys_of(rs, name, strlen(name), &k);
    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run(rs, S_STATUS, &k, 0, a, al, 1, &rc);
    pthread_mutex_unlock(&rs->mu);
    free(k.buf);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 9)
        return dlock__redis_bad_reply(rs, r);
    {
        redisReply **e = r->element;
        long long held = e[0]->integer, readers = e[1]->integer,
                  sem = e[7]->integer;

        out->held = held == 1 || readers > 0 || sem > 0;
        out->shared = held != 1 && readers > 0;
        out->holders = held == 1     ? 1
                       : readers > 0 ? (unsigned)readers
                                     : (unsigned)sem;
        /* A lock (shared or not) has limit 1, a semaphore the one its
         * holders asked. */
        out->limit = held != 1 && readers == 0 && sem > 0
                         ? (unsigned)e[8]->integer
                         : (unsigned)(out->held != 0);
        out->ttl_ms = out->held ? e[2]->integer : -1;
        if (e[3]->type == REDIS_REPLY_STRING)
            out->fence = strtoull(e[3]->str, NULL, 10);
        if (out->held && e[4]->type == REDIS_REPLY_STRING) {
            dlock__strlcpy(out->host, e[4]->str, sizeof(out->host));
            out->pid = e[5]->type == REDIS_REPLY_STRING
                           ? strtoll(e[5]->str, NULL, 10)
                           : 0;
            out->since_ms = e[6]->type == REDIS_REPLY_STRING
                                ? strtoll(e[6]->str, NULL, 10)
                                : 0;
        }
    }
    freeReplyObject(r);
    return DLOCK_OK;
}

static int redis_status(struct dlock_store *s, const char *name,
                        dlock_info *out)
{
    return describe((struct redis_store *)s, name, out);
}

/* A lock key (or a shared lock's readers key) SCAN met: its name. */
static int take_lock_key(struct redis_store *rs, const char *key, size_t len,
                         void *arg)
{
    size_t cut;

    /* With Cluster only the lock keys: a shared lock's key is there while
     * it has readers, and a tagged derived key (with an empty prefix) is
     * no name. */
    if ((rs->cluster && memchr(key, 0xff, len) != NULL) ||
        !dlock__redis_key_name(key, len, rs->prefix, rs->prefix_len, &cut))
        return DLOCK_OK;
    return dlock__names_add(arg, key + rs->prefix_len, cut);
}

static int redis_list(struct dlock_store *s, const char *prefix,
                      int (*cb)(const dlock_info *info, void *payload),
                      void *payload)
{
    struct redis_store *rs = (struct redis_store *)s;
    size_t plen = strlen(prefix);
    char *lit = malloc(rs->prefix_len + plen + 1), *pattern;
    struct dlock__names names = {0};
    int rc;

    if (lit == NULL)
        return dlock__enomem();
    memcpy(lit, rs->prefix, rs->prefix_len);
    memcpy(lit + rs->prefix_len, prefix, plen + 1);
    pattern = dlock__redis_glob_prefix(lit, rs->prefix_len + plen);
    free(lit);
    if (pattern == NULL)
        return dlock__enomem();
    /* Collect first (SCAN may return a key twice), then describe each
     * without the connection held, so cb may call into the library. */
    rc = dlock__redis_scan(rs, pattern, take_lock_key, &names);
    free(pattern);
    if (rc != DLOCK_OK) {
        dlock__names_free(&names);
        return rc;
    }
    return dlock__names_report(&names, s, redis_status, cb, payload);
}

static int redis_force_release(struct dlock_store *s, const char *name,
                               unsigned *removed)
{
    struct redis_store *rs = (struct redis_store *)s;
    const char *a[2];
    size_t al[2];
    struct dlock__rkeys k;
    redisReply *r;
    long long n = 0;
    int rc;

    rc = dlock__redis_keys_of(rs, name, strlen(name), &k);
    if (rc != DLOCK_OK)
        return rc;
    a[0] = "";
    al[0] = 0;
    a[1] = k.chan;
    al[1] = k.chan_len;
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run(rs, S_FORCE, &k, 2, a, al, 1, &rc);
    pthread_mutex_unlock(&rs->mu);
    free(k.buf);
    rc = dlock__redis_int_reply(rs, r, rc, &n);
    if (rc == DLOCK_OK)
        *removed = (unsigned)n;
    return rc;
}

static int redis_init(struct dlock_store *s)
{
    (void)s;
    return DLOCK_OK; /* no schema */
}

static int redis_ddl(char **out, const struct dlock_url *u)
{
    (void)u;
    *out = dlock__strdup("-- Redis needs no schema: dlock keeps each lock "
                         "in the key <prefix><name>\n"
                         "-- (default prefix \"dlock:\") and derives its "
                         "fence counter from it.\n");
    return *out != NULL ? DLOCK_OK : dlock__enomem();
}

const struct dlock_store_ops dlock__redis_ops = {
    .version = DLOCK_STORE_OPS_VERSION,
    .name = "redis",
    .has_shared = 1,
    .has_limit = 1,
    .open = redis_open,
    .close = redis_close,
    .try_acquire = redis_try_acquire,
    .wait_slice = dlock__redis_wait_slice,
    .extend = dlock__redis_extend,
    .extend_many = dlock__redis_extend_many,
    .ttl_left = dlock__redis_ttl_left,
    .release = dlock__redis_release,
    .forget = dlock__redis_forget,
    .status = redis_status,
    .list = redis_list,
    .force_release = redis_force_release,
    .init = redis_init,
    .probe = dlock__redis_probe,
    .ddl = redis_ddl,
    .run_begin = dlock__redis_run_begin,
    .run_end = dlock__redis_run_end,
    .keep_runs = dlock__redis_keep_runs,
    .kept_runs = dlock__redis_kept_runs,
    .runs = dlock__redis_runs,
    .last_runs = dlock__redis_last_runs,
    .value_set = dlock__redis_value_set,
    .value_get = dlock__redis_value_get,
    .watch = dlock__redis_watch,
    .watch_end = dlock__redis_watch_end,
    .suspend = dlock__redis_suspend,
    .resume = dlock__redis_resume,
    .suspension = dlock__redis_suspension,
    .suspensions = dlock__redis_suspensions,
};
