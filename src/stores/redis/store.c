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

/* --- keys ------------------------------------------------------------ */

int dlock__redis_keys_of(struct redis_store *rs, const char *name,
                         size_t name_len, struct dlock__rkeys *k)
{
    /* The derived keys of a name are its lock key, then 0xff (0xfe 0xff
     * with Cluster's tag) and a word: a name holding either byte would
     * spell another name's fence, info or queue key.  UTF-8 has neither,
     * so only release --force, which takes any bytes (a planted name),
     * can meet one here. */
    if (memchr(name, 0xff, name_len) != NULL ||
        memchr(name, 0xfe, name_len) != NULL)
        return dlock__seterr(DLOCK_EINVAL,
                             "refusing a lock name with a 0xfe or 0xff "
                             "byte on Redis: dlock derives each lock's "
                             "fence, info and queue keys with those "
                             "bytes, so the name would reach another "
                             "lock's keys");
    return dlock__redis_keys(rs->prefix, rs->prefix_len, name, name_len,
                             rs->cluster, k);
}

int dlock__redis_script(const struct dlock_lock *lk, int base)
{
    return base + (lk->limit > 1 ? 2 : lk->shared ? 1 : 0);
}

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

/* --- acquire, extend, release ---------------------------------------- */

static void lock_args(const struct dlock_lock *lk, int64_t ttl, char *ttlbuf,
                      char *pidbuf, const char **a, size_t *al)
{
    snprintf(ttlbuf, 24, "%lld", (long long)DLOCK__REDIS_LEASE(ttl));
    snprintf(pidbuf, 24, "%ld", (long)dlock__pid());
    a[0] = lk->token;
    al[0] = strlen(lk->token);
    a[1] = ttlbuf;
    al[1] = strlen(ttlbuf);
    a[2] = dlock__hostname();
    al[2] = strlen(a[2]);
    a[3] = pidbuf;
    al[3] = strlen(pidbuf);
}

/* What the WAIT after this thread's last script answered (?replicas=;
 * -1: none asked, or no count). */
static _Thread_local long long acks_seen = -1;

/* Run script s for lk with ARGV token, ttl, host, pid, the queue mode q
 * and the limit, the first nargs of them. */
static redisReply *lock_script(struct redis_store *rs, int s,
                               struct dlock_lock *lk, int64_t ttl, int nargs,
                               const char *q, int retry, int *rc,
                               uint64_t *epoch)
{
    char ttlbuf[24], pidbuf[24], limbuf[24];
    const char *a[6];
    size_t al[6];
    struct dlock__rkeys k;
    redisReply *r;

    *rc = dlock__redis_keys_of(rs, lk->name, lk->name_len, &k);
    if (*rc != DLOCK_OK)
        return NULL;
    lock_args(lk, ttl, ttlbuf, pidbuf, a, al);
    a[4] = q != NULL ? q : "";
    al[4] = strlen(a[4]);
    snprintf(limbuf, sizeof(limbuf), "%u", lk->limit);
    a[5] = limbuf;
    al[5] = strlen(limbuf);
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run(rs, s, &k, nargs, a, al, retry, rc);
    acks_seen = rs->acks;
    pthread_mutex_unlock(&rs->mu);
    if (epoch != NULL)
        *epoch = dlock__redis_epoch(rs, lk);
    free(k.buf);
    return r;
}

/* --- epochs ---------------------------------------------------------- */

/* A held lock's lk->priv is not a pointer but the epoch it was taken in,
 * tagged: 2 epoch + 1 (a wait's state in wait.c is a pointer, so even).
 * With Cluster the epoch is that of the lock's hash slot. */
uint64_t dlock__redis_epoch(struct redis_store *rs, const struct dlock_lock *lk)
{
    unsigned slot =
        rs->cluster ? dlock__redis_name_slot(rs, lk->name, lk->name_len) : 0;
    uint64_t e;

    pthread_mutex_lock(&rs->tmu);
    e = rs->cluster ? rs->slot_epoch[slot] : rs->epoch;
    pthread_mutex_unlock(&rs->tmu);
    return e;
}

void dlock__redis_held(struct dlock_lock *lk, uint64_t epoch)
{
    lk->priv = (void *)(uintptr_t)(epoch * 2 + 1);
}

int dlock__redis_is_held_tag(const void *priv)
{
    return ((uintptr_t)priv & 1) != 0;
}

/* Taken before the master changed, per the epoch read after the call. */
int dlock__redis_stale(const struct dlock_lock *lk, uint64_t now_epoch)
{
    return dlock__redis_is_held_tag(lk->priv) &&
           (uint64_t)((uintptr_t)lk->priv >> 1) != now_epoch;
}

static int lost_to_failover(const struct dlock_lock *lk)
{
    return dlock__lost(lk, "the master changed (a failover) since it was "
                           "taken");
}

/* One attempt (redis.h). */
int dlock__redis_attempt(struct redis_store *rs, struct dlock_lock *lk,
                         const char *q, int64_t *retry_ms, int *foreign,
                         long long *place, uint64_t *epoch)
{
    int rc;
    redisReply *r = lock_script(rs, dlock__redis_script(lk, S_ACQ), lk,
                                lk->ttl_ms, lk->limit > 1 ? 6 : 5,
                                rs->fair ? q : Q_UNFAIR, 1, &rc, epoch);

    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER)
        return dlock__redis_bad_reply(rs, r);
    if (r->element[0]->integer == 1 && rs->replicas > 0 &&
        acks_seen < rs->replicas) {
        /* Taken on the master, not (yet) on enough replicas: a failover
         * now could forget it.  Let go of it, and say so. */
        long long acks = acks_seen;

        freeReplyObject(r);
        freeReplyObject(lock_script(rs, dlock__redis_script(lk, S_REL), lk, 0,
                                    2, NULL, 0, &rc, NULL));
        return dlock__redis_unacked(rs, "an acquire", lk->name, acks);
    }
    if (r->element[0]->integer == 1) {
        lk->fence = (uint64_t)r->element[1]->integer;
        rc = DLOCK_OK;
    } else if (r->element[0]->integer == -1) {
        /* Held with another limit: admitting under two limits would let
         * the larger one in past the smaller; waiting would not help. */
        long long held = r->element[1]->integer,
                  n = r->elements >= 3 &&
                              r->element[2]->type == REDIS_REPLY_INTEGER
                          ? r->element[2]->integer
                          : 1;

        rc = dlock__seterr(DLOCK_EINVAL,
                           "'%s' is held with limit %lld (%lld holder%s); "
                           "this acquire asked for limit %u: every holder "
                           "of a name must ask the same limit",
                           lk->name, held, n, n == 1 ? "" : "s", lk->limit);
    } else {
        /* The server's word: a year at most (a hostile one's INT64_MAX
         * would overflow the wait loop's arithmetic). */
        *retry_ms = dlock__clamp_ms(r->element[1]->integer);
        *foreign = r->elements < 3 ||
                   r->element[2]->type != REDIS_REPLY_INTEGER ||
                   r->element[2]->integer == 0;
        *place = r->elements >= 4 && r->element[3]->type == REDIS_REPLY_INTEGER
                     ? r->element[3]->integer
                     : 0;
        rc = DLOCK_BUSY;
    }
    freeReplyObject(r);
    return rc;
}

int dlock__redis_leave(struct redis_store *rs, struct dlock_lock *lk)
{
    int rc = DLOCK_OK;
    redisReply *r =
        lock_script(rs, S_LEAVE, lk, lk->ttl_ms, 1, NULL, 0, &rc, NULL);

    if (r == NULL)
        return rc;
    freeReplyObject(r);
    return DLOCK_OK;
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

static int lost(const struct dlock_lock *lk)
{
    return dlock__lost(lk, "its lease ran out, it was broken, or the "
                           "server lost it");
}

/* A script's integer answer in *out (frees r); r NULL: its failure rc. */
static int int_reply(struct redis_store *rs, redisReply *r, int rc,
                     long long *out)
{
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        return dlock__redis_bad_reply(rs, r);
    *out = r->integer;
    freeReplyObject(r);
    return DLOCK_OK;
}

/* Run a per-lock script returning an integer; a lock taken before the
 * master changed (by the epoch after the call) is LOST, and let go of on
 * the new master if it is there (0 to release). */
static int int_script(struct redis_store *rs, int s, struct dlock_lock *lk,
                      int64_t ttl_or_0, int retry, long long *out)
{
    int rc;
    uint64_t epoch = 0;
    redisReply *r =
        lock_script(rs, s, lk, ttl_or_0, 2, NULL, retry, &rc, &epoch);

    rc = int_reply(rs, r, rc, out);
    if (rc == DLOCK_OK && dlock__redis_stale(lk, epoch)) {
        if (s != dlock__redis_script(lk, S_REL))
            freeReplyObject(lock_script(rs, dlock__redis_script(lk, S_REL), lk,
                                        0, 2, NULL, 0, &rc, NULL));
        return lost_to_failover(lk);
    }
    return rc;
}

/* A batch renewed a lock from before a failover: let go of it on the new
 * master (best effort) and say LOST, as int_script() does. */
int dlock__redis_drop_stale(struct redis_store *rs, struct dlock_lock *lk)
{
    int rc;

    freeReplyObject(lock_script(rs, dlock__redis_script(lk, S_REL), lk, 0, 2,
                                NULL, 0, &rc, NULL));
    return lost_to_failover(lk);
}

static struct redis_store *rs_of(struct dlock_store *s)
{
    return (struct redis_store *)s;
}

static int redis_extend(struct dlock_store *s, struct dlock_lock *lk,
                        int64_t ttl_ms)
{
    long long v = 0;
    int rc = int_script((struct redis_store *)s, dlock__redis_script(lk, S_EXT),
                        lk, ttl_ms, 1, &v);

    if (rc != DLOCK_OK)
        return rc;
    /* Not acknowledged: a failed renewal (EUNAVAIL), retried while the
     * lease runs, and LOST when it has run out. */
    if (v == 1 && rs_of(s)->replicas > 0 && acks_seen < rs_of(s)->replicas)
        return dlock__redis_unacked(rs_of(s), "a renewal", lk->name, acks_seen);
    return v == 1 ? DLOCK_OK : lost(lk);
}

static int redis_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t *left_ms)
{
    long long v = 0;
    int rc = int_script((struct redis_store *)s, dlock__redis_script(lk, S_TTL),
                        lk, 0, 1, &v);

    if (rc != DLOCK_OK)
        return rc;
    /* -1: our token without a TTL (someone PERSISTed it): still ours. */
    if (v == -1)
        v = INT64_MAX;
    if (v <= 0 && v != -1)
        return lost(lk);
    *left_ms = (int64_t)v;
    return DLOCK_OK;
}

static int redis_release(struct dlock_store *s, struct dlock_lock *lk)
{
    long long v = 0;
    int rc = int_script((struct redis_store *)s, dlock__redis_script(lk, S_REL),
                        lk, 0, 0, &v);

    lk->priv = NULL;
    if (rc != DLOCK_OK)
        return rc;
    return v == 1 ? DLOCK_OK : lost(lk);
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

/* SCAN one server (with Cluster: the master of slot) for the keys that
 * match pattern, each to take. */
struct scan {
    const char *pattern;
    int (*take)(struct redis_store *rs, const char *key, size_t len, void *arg);
    void *arg;
    int64_t deadline; /* monotonic ms: the whole scan's */
    size_t pages;
};

static int scan_node(struct redis_store *rs, int slot, void *arg)
{
    struct scan *sc = arg;
    char cursor[32] = "0";
    int rc = DLOCK_OK;

    do {
        /* The whole scan is one answer (R10): a server whose cursor never
         * comes back to 0 (the same keys or none, page after page) is cut
         * off at one ?timeout= after the scan began; one that feeds new
         * keys for ever, at DLOCK__LIST_NAMES names (names.h). */
        if (strcmp(cursor, "0") != 0 && dlock__now_ms() > sc->deadline)
            return dlock__seterr(DLOCK_EUNAVAIL,
                                 "Redis's keys matching '%s' were not all "
                                 "scanned within ?timeout= (%lld ms; %zu "
                                 "pages): a server whose SCAN never ends, "
                                 "or raise ?timeout= (%s)",
                                 sc->pattern, (long long)rs->timeout_ms,
                                 sc->pages, rs->url);
        sc->pages++;
        const char *argv[6] = {"SCAN",      cursor,  "MATCH",
                               sc->pattern, "COUNT", "1000"};
        size_t lens[6] = {4, strlen(cursor), 5, strlen(sc->pattern), 5, 4};
        redisReply *r;

        rc = dlock__redis_cmd(rs, slot, 1, &r, 6, argv, lens);
        if (rc != DLOCK_OK)
            break;
        if (r->type == REDIS_REPLY_ERROR) {
            rc = dlock__redis_reply_error(rs, r, "SCAN");
            freeReplyObject(r);
            break;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            rc = dlock__redis_bad_reply(rs, r);
            break;
        }
        dlock__strlcpy(cursor, r->element[0]->str, sizeof(cursor));
        for (size_t i = 0; i < r->element[1]->elements && rc == DLOCK_OK; i++) {
            redisReply *key = r->element[1]->element[i];

            if (key->type == REDIS_REPLY_STRING)
                rc = sc->take(rs, key->str, key->len, sc->arg);
        }
        freeReplyObject(r);
    } while (rc == DLOCK_OK && strcmp(cursor, "0") != 0);
    return rc;
}

int dlock__redis_scan(struct redis_store *rs, const char *pattern,
                      int (*take)(struct redis_store *rs, const char *key,
                                  size_t len, void *arg),
                      void *arg)
{
    struct scan sc = {pattern, take, arg, 0, 0};
    int rc;

    sc.deadline = dlock__now_ms() + dlock__io_bound(rs->timeout_ms);

    /* A cluster's masters are scanned one after the other. */
    pthread_mutex_lock(&rs->mu);
    rc = rs->cluster ? dlock__redis_cluster_each_master(rs, scan_node, &sc)
                     : scan_node(rs, -1, &sc);
    pthread_mutex_unlock(&rs->mu);
    return rc;
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
    rc = int_reply(rs, r, rc, &n);
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
    .extend = redis_extend,
    .extend_many = dlock__redis_extend_many,
    .ttl_left = redis_ttl_left,
    .release = redis_release,
    .forget = dlock__redis_forget,
    .status = redis_status,
    .list = redis_list,
    .force_release = redis_force_release,
    .init = redis_init,
    .ddl = redis_ddl,
    .run_begin = dlock__redis_run_begin,
    .run_end = dlock__redis_run_end,
    .runs = dlock__redis_runs,
    .last_runs = dlock__redis_last_runs,
};
