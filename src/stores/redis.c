/*
 * redis.c - leases in Redis: SET NX PX + Lua, fences by INCR, woken
 * waiters by pub/sub.
 *
 * redis://[user:pass@]host[:port][/db][?prefix=dlock:&connect_timeout=5s
 *                                      &timeout=5s]
 * unix:///path/to/redis.sock[?db=0&password=...&prefix=...]
 *
 * Keys for a lock NAME (P is the prefix, default "dlock:"):
 *   P NAME              the lock: "dlock1:" + the holder's token, with the
 *                       lease as its TTL.  Exactly the key of the plain
 *                       SET NX pattern, which is what makes dlock
 *                       interoperate with other clients of that pattern.
 *   P NAME \xff fence   the fence counter (INCR, never expires)
 *   P NAME \xff readers shared holders: a sorted set token -> lease end
 *   P NAME \xff info    holder host, pid, since, fence (same TTL)
 *   P NAME \xff release the channel a release is published on
 * Names are valid UTF-8, which never contains the byte 0xff, so no lock
 * key can be mistaken for a derived one, whatever the names.
 *
 * Every operation is one Lua script, one round trip (EVALSHA, EVAL when
 * the server has forgotten the script).  Scripts read the server's clock
 * (TIME), never the client's.
 *
 * Threads: one command connection per store handle behind a mutex.  Each
 * command is a sub-millisecond round trip and a lock never pins a
 * connection, so a pool would only add connections to the server.
 * Waiting uses a second connection, subscribed to the channels of the
 * names this handle waits on, read by a listener thread that wakes one
 * waiter per release message (first come, first woken).  A holder that
 * is not dlock (its value lacks "dlock1:") never publishes: waiters on it
 * also subscribe to the lock key's keyspace channel when the server sends
 * keyspace events, and poll every 50..250 ms when it does not.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keys.h"
#include "store.h"

#define DEFAULT_PREFIX "dlock:"
#define DEFAULT_TIMEOUT_MS 5000
/* A waiter whose holder has no lease (someone PERSISTed the key), or
 * whose wake-up may not come (keyspace notifications turned off after we
 * looked), re-checks at least this often. */
#define SAFETY_POLL_MS 1000
/* While a foreign holder (no "dlock1:" value: it deletes the key without
 * publishing) holds the lock and the server sends no keyspace events, a
 * waiter polls: first after FOREIGN_POLL_MIN_MS, doubling up to
 * FOREIGN_POLL_MAX_MS, never past the holder's lease end. */
#define FOREIGN_POLL_MIN_MS 50
#define FOREIGN_POLL_MAX_MS 250
/* How long the answer of CONFIG GET notify-keyspace-events is trusted. */
#define KS_RECHECK_MS 10000

enum {
    S_ACQ,
    S_ACQ_SHARED,
    S_REL,
    S_REL_SHARED,
    S_EXT,
    S_EXT_SHARED,
    S_TTL,
    S_TTL_SHARED,
    S_STATUS,
    S_FORCE,
    S_COUNT
};

/* KEYS: 1 lock, 2 fence, 3 readers, 4 info.  ARGV: 1 token, 2 ttl ms (or
 * the channel), 3 host, 4 pid.  PUBLISH goes through pcall: a user whose
 * ACL has no channel rights still releases (waiters then notice by their
 * timers). */
#define NOW                                                                  \
    "local t = redis.call('TIME') "                                          \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "

/* While readers hold a name, its lock key holds MARK (with the longest
 * reader lease), so clients that only know the plain SET NX pattern are
 * kept out by readers too.  Values are "dlock1:" + hex: none is MARK. */
#define MARK "'\\255shared'"

/* An exclusive holder's value is OWN: "dlock1:" and its owner token (32 hex
 * digits), not the bare token.  Other clients' tokens are often 32 hex
 * digits too (node-redlock: 16 random bytes in hex; PHP:
 * bin2hex(random_bytes(16))), but none starts with "dlock1:", and only
 * dlock publishes when it lets go: DLOCK_VAL(v) tells a waiter whether it
 * will hear the release or has to look for it.  A value written by a dlock
 * older than this format counts as foreign, which only costs polling. */
#define OWN "('dlock1:' .. ARGV[1])"
#define DLOCK_VAL(v) "(#" v " == 39 and string.match(" v ", '^dlock1:%x+$'))"

static const char *const lua[S_COUNT] = {
    [S_ACQ] = NOW
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur == " OWN " then "
    "  return {1, tonumber(redis.call('HGET', KEYS[4], 'fence') or '0')} "
    "end "
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) "
    "if cur and cur ~= " MARK " then "
    "  return {0, redis.call('PTTL', KEYS[1]), "
    "  " DLOCK_VAL("cur") " and 1 or 0} end "
    "local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "if top[2] then return {0, tonumber(top[2]) - now, 1} end "
    "redis.call('SET', KEYS[1], " OWN ", 'PX', ARGV[2]) "
    "if redis.call('EXISTS', KEYS[2]) == 0 then "
    "  redis.call('SET', KEYS[2], string.format('%d', now * 1000)) "
    "end "
    "local f = redis.call('INCR', KEYS[2]) "
    "redis.call('DEL', KEYS[4]) "
    "redis.call('HSET', KEYS[4], 'fence', f, 'host', ARGV[3], 'pid', "
    "  ARGV[4], 'since', now) "
    "redis.call('PEXPIRE', KEYS[4], ARGV[2]) "
    "return {1, f}",

    [S_ACQ_SHARED] = NOW
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur and cur ~= " MARK " then "
    "  return {0, redis.call('PTTL', KEYS[1]), "
    "  " DLOCK_VAL("cur") " and 1 or 0} end "
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) "
    "local mine = redis.call('HGET', KEYS[4], 'f:' .. ARGV[1]) "
    "if mine and redis.call('ZSCORE', KEYS[3], ARGV[1]) then "
    "  return {1, tonumber(mine)} "
    "end "
    "redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1]) "
    "if redis.call('EXISTS', KEYS[2]) == 0 then "
    "  redis.call('SET', KEYS[2], string.format('%d', now * 1000)) "
    "end "
    "local f = redis.call('INCR', KEYS[2]) "
    "local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "redis.call('PEXPIREAT', KEYS[3], tonumber(top[2])) "
    "redis.call('HSET', KEYS[4], 'f:' .. ARGV[1], f, 'host', ARGV[3], "
    "  'pid', ARGV[4], 'since', now) "
    "redis.call('PEXPIREAT', KEYS[4], tonumber(top[2])) "
    "redis.call('SET', KEYS[1], " MARK ", 'PX', "
    "  string.format('%d', math.max(1, tonumber(top[2]) - now))) "
    "return {1, f}",

    [S_REL] =
    "if redis.call('GET', KEYS[1]) == " OWN " then "
    "  redis.call('DEL', KEYS[1], KEYS[4]) "
    "  redis.pcall('PUBLISH', ARGV[2], 'r') "
    "  return 1 "
    "end "
    "return 0",

    [S_REL_SHARED] = NOW
    "local s = redis.call('ZSCORE', KEYS[3], ARGV[1]) "
    "redis.call('ZREM', KEYS[3], ARGV[1]) "
    "redis.call('HDEL', KEYS[4], 'f:' .. ARGV[1]) "
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) "
    "local marked = redis.call('GET', KEYS[1]) == " MARK " "
    "local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "if not top[2] then "
    "  if marked then redis.call('DEL', KEYS[1]) end "
    "  redis.call('DEL', KEYS[4]) "
    "  redis.pcall('PUBLISH', ARGV[2], 'r') "
    "elseif marked then "
    "  redis.call('PEXPIREAT', KEYS[1], tonumber(top[2])) "
    "end "
    "if s and tonumber(s) > now then return 1 end "
    "return 0",

    [S_EXT] =
    "if redis.call('GET', KEYS[1]) == " OWN " then "
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2]) "
    "  redis.call('PEXPIRE', KEYS[4], ARGV[2]) "
    "  return 1 "
    "end "
    "return 0",

    [S_EXT_SHARED] = NOW
    "local s = redis.call('ZSCORE', KEYS[3], ARGV[1]) "
    "if redis.call('GET', KEYS[1]) ~= " MARK " or not s or "
    "   tonumber(s) <= now then "
    "  redis.call('ZREM', KEYS[3], ARGV[1]) "
    "  return 0 "
    "end "
    "redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1]) "
    "local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "redis.call('PEXPIREAT', KEYS[3], tonumber(top[2])) "
    "redis.call('PEXPIREAT', KEYS[4], tonumber(top[2])) "
    "redis.call('PEXPIREAT', KEYS[1], tonumber(top[2])) "
    "return 1",

    [S_TTL] =
    "if redis.call('GET', KEYS[1]) == " OWN " then "
    "  return redis.call('PTTL', KEYS[1]) "
    "end "
    "return -3",

    [S_TTL_SHARED] = NOW
    "local s = redis.call('ZSCORE', KEYS[3], ARGV[1]) "
    "if s and tonumber(s) > now and "
    "   redis.call('GET', KEYS[1]) == " MARK " then "
    "  return tonumber(s) - now "
    "end "
    "return -3",

    [S_STATUS] = NOW
    "local cur = false "
    "if redis.call('TYPE', KEYS[1]).ok == 'string' then "
    "  cur = redis.call('GET', KEYS[1]) "
    "end "
    "if cur == " MARK " then cur = false end "
    "local n = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf') "
    "local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "local left = -1 "
    "if cur then left = redis.call('PTTL', KEYS[1]) "
    "elseif n > 0 then left = tonumber(top[2]) - now end "
    "local h = redis.call('HMGET', KEYS[4], 'host', 'pid', 'since') "
    "return {cur and 1 or 0, n, left, redis.call('GET', KEYS[2]) or '0', "
    "  h[1] or '', h[2] or '0', h[3] or '0'}",

    [S_FORCE] =
    "local n = redis.call('EXISTS', KEYS[1]) "
    "if redis.call('GET', KEYS[1]) == " MARK " then n = 0 end "
    "n = n + redis.call('ZCARD', KEYS[3]) "
    "redis.call('DEL', KEYS[1], KEYS[3], KEYS[4]) "
    "redis.pcall('PUBLISH', ARGV[2], 'r') "
    "return n",
};

/* A waiter parked on a channel. */
struct waiter {
    struct waiter *next;
    pthread_cond_t cv;
    int woken;
};

/* A channel this handle is (or is getting) subscribed to: the release
 * channel of a name, and once a waiter met a foreign holder on a server
 * with keyspace notifications, also the keyspace channel of its lock key
 * (__keyspace@<db>__:<key>), whose del/expired/evicted events wake the
 * waiters as a release message does. */
struct chan {
    struct chan *next;
    char *name;
    size_t len;
    int refs;       /* waiters using it */
    int subscribed; /* confirmed by the server */
    char *ks;       /* keyspace channel, once SUBSCRIBE was sent, or NULL */
    size_t ks_len;
    int ks_subscribed;
    struct waiter *head, *tail;
};

/* What an (UN)SUBSCRIBE sent on the pub/sub connection was for: the
 * server answers each in order, and an error answer (an ACL without the
 * channel) names no channel, so the order tells whose it is. */
enum { P_SUB, P_SUB_KS, P_UNSUB };

struct redis_store {
    struct dlock_store base;

    /* configuration */
    char *host;
    int port;
    char *sock; /* unix socket path, or NULL */
    char *user;
    char *password;
    int db;
    char *prefix;
    size_t prefix_len;
    int64_t connect_timeout_ms;
    int64_t timeout_ms;
    const char *url; /* redacted, for messages */

    /* commands */
    pthread_mutex_t mu;
    redisContext *c;
    char sha[S_COUNT][41];

    /* pub/sub */
    pthread_mutex_t smu;
    redisContext *sc;
    pthread_t listener;
    int listening;   /* listener thread started and not yet joined */
    int sub_broken;  /* the listener lost the connection and exited */
    int sub_denied;  /* the server refused SUBSCRIBE: do not rely on it */
    int ks_denied;   /* ... refused only the keyspace channels: poll */
    int stop;
    struct chan *chans;
    unsigned char *pend; /* P_* of commands sent and not yet answered */
    size_t pend_head, pend_len, pend_cap;

    /* keyspace notifications (under mu) */
    int ks_on;          /* the server sends the events we need */
    int ks_known;       /* ks_on was asked ... */
    int64_t ks_checked; /* ... at this time */
};

/* --- connections ----------------------------------------------------- */

static struct timeval tv_ms(int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    return tv;
}

static int reply_error(struct redis_store *rs, const redisReply *r,
                       const char *what)
{
    return dlock__seterr(DLOCK_ESTORE, "redis %s: %s (%s)", what,
                         r->str ? r->str : "error", rs->url);
}

/* Connect, authenticate, select the database, and check that the peer
 * speaks Redis.  Returns a ready context or NULL with the error set. */
static redisContext *connect_ctx(struct redis_store *rs, int *rc)
{
    redisContext *c;
    redisReply *r;

    c = rs->sock != NULL
            ? redisConnectUnixWithTimeout(rs->sock,
                                          tv_ms(rs->connect_timeout_ms))
            : redisConnectWithTimeout(rs->host, rs->port,
                                      tv_ms(rs->connect_timeout_ms));
    if (c == NULL) {
        *rc = dlock__enomem();
        return NULL;
    }
    if (c->err) {
        *rc = dlock__seterr(DLOCK_EUNAVAIL, "cannot connect to %s: %s",
                            rs->url, c->errstr);
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv_ms(rs->timeout_ms));
    if (rs->sock == NULL)
        redisEnableKeepAlive(c);
    if (rs->password != NULL) {
        r = rs->user != NULL && rs->user[0] != '\0'
                ? redisCommand(c, "AUTH %s %s", rs->user, rs->password)
                : redisCommand(c, "AUTH %s", rs->password);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            *rc = r == NULL ? dlock__seterr(DLOCK_EUNAVAIL,
                                            "%s: no answer to AUTH: %s",
                                            rs->url, c->errstr)
                            : dlock__seterr(DLOCK_ESTORE,
                                            "%s: authentication failed: %s",
                                            rs->url, r->str);
            freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    r = redisCommand(c, "PING");
    if (r == NULL || r->type != REDIS_REPLY_STATUS) {
        if (r != NULL && r->type == REDIS_REPLY_ERROR)
            *rc = dlock__seterr(DLOCK_ESTORE, "%s: %s", rs->url, r->str);
        else
            *rc = dlock__seterr(DLOCK_EUNAVAIL,
                                "%s does not answer like a Redis server "
                                "(%s)",
                                rs->url,
                                c->err ? c->errstr : "unexpected reply");
        freeReplyObject(r);
        redisFree(c);
        return NULL;
    }
    freeReplyObject(r);
    return c;
}

/* The command connection, (re)connected and with its scripts loaded
 * (caller holds mu). */
static int ensure_conn(struct redis_store *rs)
{
    redisReply *r;
    int rc = DLOCK_OK;

    if (rs->c != NULL)
        return DLOCK_OK;
    rs->c = connect_ctx(rs, &rc);
    if (rs->c == NULL)
        return rc;
    if (rs->db != 0) {
        r = redisCommand(rs->c, "SELECT %d", rs->db);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            rc = r ? reply_error(rs, r, "SELECT")
                   : dlock__seterr(DLOCK_EUNAVAIL, "%s: %s", rs->url,
                                   rs->c->errstr);
            freeReplyObject(r);
            redisFree(rs->c);
            rs->c = NULL;
            return rc;
        }
        freeReplyObject(r);
    }
    for (int i = 0; i < S_COUNT; i++) {
        r = redisCommand(rs->c, "SCRIPT LOAD %s", lua[i]);
        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
            rc = r && r->type == REDIS_REPLY_ERROR
                     ? reply_error(rs, r, "SCRIPT LOAD")
                     : dlock__seterr(DLOCK_EUNAVAIL, "%s: %s", rs->url,
                                     rs->c->err ? rs->c->errstr
                                                : "bad SCRIPT LOAD reply");
            freeReplyObject(r);
            redisFree(rs->c);
            rs->c = NULL;
            return rc;
        }
        memcpy(rs->sha[i], r->str, 40);
        rs->sha[i][40] = '\0';
        freeReplyObject(r);
    }
    return DLOCK_OK;
}

static void drop_conn(struct redis_store *rs)
{
    if (rs->c != NULL) {
        redisFree(rs->c);
        rs->c = NULL;
    }
}

/* --- keys ------------------------------------------------------------ */

static int make_keys(struct redis_store *rs, const char *name,
                     size_t name_len, struct dlock__rkeys *k)
{
    return dlock__redis_keys(rs->prefix, rs->prefix_len, name, name_len, k);
}

static redisReply *run(struct redis_store *rs, int s, const struct dlock__rkeys *k,
                       int nargs, const char **args, const size_t *alen,
                       int retry, int *rc)
{
    const char *argv[12];
    size_t lens[12];
    redisReply *r;
    int argc = 0;

    for (int attempt = 0;; attempt++) {
        *rc = ensure_conn(rs);
        if (*rc != DLOCK_OK)
            return NULL;
        argc = 0;
        argv[argc] = "EVALSHA";
        lens[argc++] = 7;
        argv[argc] = rs->sha[s];
        lens[argc++] = 40;
        argv[argc] = "4";
        lens[argc++] = 1;
        for (int i = 0; i < 4; i++) {
            argv[argc] = k->k[i];
            lens[argc++] = k->klen[i];
        }
        for (int i = 0; i < nargs; i++) {
            argv[argc] = args[i];
            lens[argc++] = alen[i];
        }
        r = redisCommandArgv(rs->c, argc, argv, lens);
        if (r != NULL && r->type == REDIS_REPLY_ERROR &&
            strncmp(r->str, "NOSCRIPT", 8) == 0) {
            /* SCRIPT FLUSH or a restarted server: send the text (EVAL also
             * caches it again for the next EVALSHA). */
            freeReplyObject(r);
            argv[0] = "EVAL";
            lens[0] = 4;
            argv[1] = lua[s];
            lens[1] = strlen(lua[s]);
            r = redisCommandArgv(rs->c, argc, argv, lens);
        }
        if (r != NULL) {
            if (r->type == REDIS_REPLY_ERROR) {
                *rc = reply_error(rs, r, "script");
                freeReplyObject(r);
                return NULL;
            }
            *rc = DLOCK_OK;
            return r;
        }
        *rc = dlock__seterr(DLOCK_EUNAVAIL, "lost the connection to %s: %s",
                            rs->url, rs->c->errstr);
        drop_conn(rs);
        if (!retry || attempt > 0)
            return NULL;
    }
}

static int bad_reply(struct redis_store *rs, redisReply *r)
{
    freeReplyObject(r);
    return dlock__seterr(DLOCK_ESTORE, "unexpected reply from %s", rs->url);
}

/* --- open / close ------------------------------------------------------ */

static void stop_listener(struct redis_store *rs);

static void redis_close(struct dlock_store *s)
{
    struct redis_store *rs = (struct redis_store *)s;

    stop_listener(rs);
    drop_conn(rs);
    while (rs->chans != NULL) {
        struct chan *c = rs->chans;

        rs->chans = c->next;
        free(c->name);
        free(c->ks);
        free(c);
    }
    free(rs->pend);
    pthread_mutex_destroy(&rs->mu);
    pthread_mutex_destroy(&rs->smu);
    free(rs->host);
    free(rs->sock);
    free(rs->user);
    free(rs->password);
    free(rs->prefix);
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

static int redis_open(struct dlock_store **out, const struct dlock_url *u)
{
    static const char *const known[] = {"prefix", "connect_timeout",
                                        "timeout", "db", "password", NULL};
    struct redis_store *rs;
    const char *v;
    int rc, is_unix = strcmp(u->scheme, "unix") == 0;

    rc = dlock__url_check_params(u, known);
    if (rc != DLOCK_OK)
        return rc;
    rs = calloc(1, sizeof(*rs));
    if (rs == NULL)
        return dlock__enomem();
    pthread_mutex_init(&rs->mu, NULL);
    pthread_mutex_init(&rs->smu, NULL);
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
            rc = dlock__seterr(DLOCK_EINVAL, "expected unix:///path/to/"
                               "redis.sock, got %s", u->redacted);
            goto fail;
        }
        rs->sock = dlock__strdup(u->path);
        v = dlock__url_param(u, "db");
        if (v != NULL && parse_int(v, 0, 100000, &rs->db) != 0) {
            rc = dlock__seterr(DLOCK_EINVAL, "bad db=%s in %s", v,
                               u->redacted);
            goto fail;
        }
    } else {
        rs->host = dlock__strdup(u->host != NULL && u->host[0] != '\0'
                                     ? u->host
                                     : "127.0.0.1");
        rs->port = u->port != 0 ? u->port : 6379;
        if (u->path != NULL && strcmp(u->path, "/") != 0 &&
            parse_int(u->path + 1, 0, 100000, &rs->db) != 0) {
            rc = dlock__seterr(DLOCK_EINVAL, "the path of a redis URL is "
                               "the database number: %s", u->redacted);
            goto fail;
        }
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
    /* Connect now: a wrong address or password is reported by open, not
     * by the first acquire. */
    pthread_mutex_lock(&rs->mu);
    rc = ensure_conn(rs);
    pthread_mutex_unlock(&rs->mu);
    if (rc != DLOCK_OK)
        goto fail;
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
    snprintf(ttlbuf, 24, "%lld", (long long)ttl);
    snprintf(pidbuf, 24, "%ld", (long)getpid());
    a[0] = lk->token;
    al[0] = strlen(lk->token);
    a[1] = ttlbuf;
    al[1] = strlen(ttlbuf);
    a[2] = dlock__hostname();
    al[2] = strlen(a[2]);
    a[3] = pidbuf;
    al[3] = strlen(pidbuf);
}

/* One attempt.  BUSY: *retry_ms is the holder's lease left (-1 unknown)
 * and *foreign is set if the holder is not a dlock client (its value is
 * not "dlock1:" + a token), which will not publish when it lets go. */
static int acquire_once(struct dlock_store *s, struct dlock_lock *lk,
                        int64_t *retry_ms, int *foreign)
{
    struct redis_store *rs = (struct redis_store *)s;
    char ttlbuf[24], pidbuf[24];
    const char *a[4];
    size_t al[4];
    struct dlock__rkeys k;
    redisReply *r;
    int rc;

    rc = make_keys(rs, lk->name, lk->name_len, &k);
    if (rc != DLOCK_OK)
        return rc;
    lock_args(lk, lk->ttl_ms, ttlbuf, pidbuf, a, al);
    pthread_mutex_lock(&rs->mu);
    r = run(rs, lk->shared ? S_ACQ_SHARED : S_ACQ, &k, 4, a, al, 1, &rc);
    pthread_mutex_unlock(&rs->mu);
    free(k.buf);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        r->element[1]->type != REDIS_REPLY_INTEGER)
        return bad_reply(rs, r);
    if (r->element[0]->integer == 1) {
        lk->fence = (uint64_t)r->element[1]->integer;
        rc = DLOCK_OK;
    } else {
        *retry_ms = r->element[1]->integer >= 0 ? r->element[1]->integer : -1;
        *foreign = r->elements < 3 ||
                   r->element[2]->type != REDIS_REPLY_INTEGER ||
                   r->element[2]->integer == 0;
        rc = DLOCK_BUSY;
    }
    freeReplyObject(r);
    return rc;
}

static int redis_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                             int64_t deadline, int64_t *retry_ms)
{
    int foreign = 0;

    (void)deadline; /* one round trip, bounded by the timeout */
    return acquire_once(s, lk, retry_ms, &foreign);
}

static int lost(const struct dlock_lock *lk)
{
    return dlock__lost(lk, "its lease ran out, it was broken, or the "
                           "server lost it");
}

/* Run a per-lock script returning an integer (caller frees nothing). */
static int int_script(struct redis_store *rs, int s, struct dlock_lock *lk,
                      int64_t ttl_or_0, int retry, long long *out)
{
    char ttlbuf[24], pidbuf[24];
    const char *a[4];
    size_t al[4];
    struct dlock__rkeys k;
    redisReply *r;
    int rc;

    rc = make_keys(rs, lk->name, lk->name_len, &k);
    if (rc != DLOCK_OK)
        return rc;
    lock_args(lk, ttl_or_0, ttlbuf, pidbuf, a, al);
    if (s == S_REL || s == S_REL_SHARED) {
        a[1] = k.chan; /* ARGV[2]: the channel to publish on */
        al[1] = k.chan_len;
    }
    pthread_mutex_lock(&rs->mu);
    r = run(rs, s, &k, 2, a, al, retry, &rc);
    pthread_mutex_unlock(&rs->mu);
    free(k.buf);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        return bad_reply(rs, r);
    *out = r->integer;
    freeReplyObject(r);
    return DLOCK_OK;
}

static int redis_extend(struct dlock_store *s, struct dlock_lock *lk,
                        int64_t ttl_ms)
{
    long long v = 0;
    int rc = int_script((struct redis_store *)s,
                        lk->shared ? S_EXT_SHARED : S_EXT, lk, ttl_ms, 1, &v);

    if (rc != DLOCK_OK)
        return rc;
    return v == 1 ? DLOCK_OK : lost(lk);
}

static int redis_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                          int64_t *left_ms)
{
    long long v = 0;
    int rc = int_script((struct redis_store *)s,
                        lk->shared ? S_TTL_SHARED : S_TTL, lk, 0, 1, &v);

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
    int rc = int_script((struct redis_store *)s,
                        lk->shared ? S_REL_SHARED : S_REL, lk, 0, 0, &v);

    if (rc != DLOCK_OK)
        return rc;
    return v == 1 ? DLOCK_OK : lost(lk);
}

/* --- waiting: pub/sub -------------------------------------------------- */

/* Caller holds smu. */
static void wake_all(struct redis_store *rs)
{
    for (struct chan *c = rs->chans; c != NULL; c = c->next)
        for (struct waiter *w = c->head; w != NULL; w = w->next)
            pthread_cond_signal(&w->cv);
}

static struct chan *find_chan(struct redis_store *rs, const char *name,
                              size_t len)
{
    for (struct chan *c = rs->chans; c != NULL; c = c->next)
        if (c->len == len && memcmp(c->name, name, len) == 0)
            return c;
    return NULL;
}

/* The channel (release or keyspace, *ks tells) a message came on. */
static struct chan *chan_of(struct redis_store *rs, const char *name,
                            size_t len, int *ks)
{
    for (struct chan *c = rs->chans; c != NULL; c = c->next) {
        if (c->len == len && memcmp(c->name, name, len) == 0) {
            *ks = 0;
            return c;
        }
        if (c->ks != NULL && c->ks_len == len &&
            memcmp(c->ks, name, len) == 0) {
            *ks = 1;
            return c;
        }
    }
    return NULL;
}

/* Remember what an (UN)SUBSCRIBE about to be sent is for (caller holds
 * smu).  -1: out of memory, do not send it. */
static int pend_push(struct redis_store *rs, unsigned char kind)
{
    if (rs->pend_head > 0) {
        memmove(rs->pend, rs->pend + rs->pend_head, rs->pend_len);
        rs->pend_head = 0;
    }
    if (rs->pend_len == rs->pend_cap) {
        size_t cap = rs->pend_cap ? 2 * rs->pend_cap : 16;
        unsigned char *p = realloc(rs->pend, cap);

        if (p == NULL)
            return -1;
        rs->pend = p;
        rs->pend_cap = cap;
    }
    rs->pend[rs->pend_len++] = kind;
    return 0;
}

/* What the oldest unanswered (UN)SUBSCRIBE was for. */
static int pend_pop(struct redis_store *rs)
{
    int kind;

    if (rs->pend_len == 0)
        return P_SUB;
    kind = rs->pend[rs->pend_head++];
    if (--rs->pend_len == 0)
        rs->pend_head = 0;
    return kind;
}

/* The keyspace events that mean the key is gone. */
static int ks_gone(const redisReply *ev)
{
    static const char *const gone[] = {"del", "expired", "evicted",
                                       "rename_from", "move_from"};

    if (ev->type != REDIS_REPLY_STRING)
        return 0;
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        if (strcmp(ev->str, gone[i]) == 0)
            return 1;
    return 0;
}

/* One pub/sub reply from the listener (caller holds smu). */
static void on_push(struct redis_store *rs, redisReply *r)
{
    struct chan *c;
    const char *kind;
    int ks = 0;

    if (r->type == REDIS_REPLY_ERROR) {
        /* SUBSCRIBE refused (an ACL without channel rights, say): waiters
         * fall back to backoff, as with a broken connection; if only the
         * keyspace channels are refused, waiters on foreign holders
         * poll. */
        if (pend_pop(rs) == P_SUB_KS)
            rs->ks_denied = 1;
        else
            rs->sub_denied = 1;
        wake_all(rs);
        return;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return;
    kind = r->element[0]->str;
    if (strcmp(kind, "subscribe") == 0 || strcmp(kind, "unsubscribe") == 0)
        (void)pend_pop(rs);
    c = chan_of(rs, r->element[1]->str, r->element[1]->len, &ks);
    if (c == NULL)
        return;
    if (strcmp(kind, "subscribe") == 0) {
        if (ks)
            c->ks_subscribed = 1;
        else
            c->subscribed = 1;
        for (struct waiter *w = c->head; w != NULL; w = w->next)
            pthread_cond_signal(&w->cv);
    } else if (strcmp(kind, "message") == 0 &&
               (!ks || ks_gone(r->element[2]))) {
        /* Wake one waiter, the longest waiting: only one of them can win,
         * and waking all would have them all retry at once. */
        for (struct waiter *w = c->head; w != NULL; w = w->next)
            if (!w->woken) {
                w->woken = 1;
                pthread_cond_signal(&w->cv);
                break;
            }
    } else if (strcmp(kind, "unsubscribe") == 0 && c->refs > 0) {
        if (ks)
            c->ks_subscribed = 0;
        else
            c->subscribed = 0;
    }
}

static void *listener_main(void *arg)
{
    struct redis_store *rs = arg;

    pthread_mutex_lock(&rs->smu);
    while (!rs->stop) {
        struct pollfd p = {rs->sc->fd, POLLIN, 0};
        void *reply;
        int n;

        pthread_mutex_unlock(&rs->smu);
        n = poll(&p, 1, 100);
        pthread_mutex_lock(&rs->smu);
        if (n <= 0 || rs->stop)
            continue;
        if (redisBufferRead(rs->sc) != REDIS_OK)
            goto broken;
        for (;;) {
            reply = NULL;
            if (redisGetReplyFromReader(rs->sc, &reply) != REDIS_OK)
                goto broken;
            if (reply == NULL)
                break;
            on_push(rs, reply);
            freeReplyObject(reply);
        }
    }
    pthread_mutex_unlock(&rs->smu);
    return NULL;
broken:
    /* Waiters fall back to their timers and re-subscribe on a new
     * connection. */
    redisFree(rs->sc);
    rs->sc = NULL;
    rs->sub_broken = 1;
    rs->pend_head = rs->pend_len = 0;
    for (struct chan *c = rs->chans; c != NULL; c = c->next)
        c->subscribed = c->ks_subscribed = 0;
    wake_all(rs);
    pthread_mutex_unlock(&rs->smu);
    return NULL;
}

static void stop_listener(struct redis_store *rs)
{
    pthread_mutex_lock(&rs->smu);
    rs->stop = 1;
    pthread_mutex_unlock(&rs->smu);
    if (rs->listening)
        pthread_join(rs->listener, NULL);
    rs->listening = 0;
    if (rs->sc != NULL)
        redisFree(rs->sc);
    rs->sc = NULL;
}

/* Send (UN)SUBSCRIBE for one channel on the pub/sub connection; kind is
 * what it is for, P_* (caller holds smu). */
static int sub_cmd(struct redis_store *rs, const char *verb,
                   const char *chan, size_t len, unsigned char kind)
{
    const char *argv[2] = {verb, chan};
    size_t lens[2] = {strlen(verb), len};
    int done = 0;

    if (rs->sc == NULL || pend_push(rs, kind) != 0)
        return -1;
    if (redisAppendCommandArgv(rs->sc, 2, argv, lens) != REDIS_OK) {
        rs->pend_len--; /* not sent: no answer will come */
        return -1;
    }
    while (!done)
        if (redisBufferWrite(rs->sc, &done) != REDIS_OK)
            return -1;
    return 0;
}

/* The pub/sub connection and its listener, started on first use or after
 * a failure (caller holds smu; may drop and retake it). */
static int ensure_sub(struct redis_store *rs)
{
    redisContext *c;
    int rc = DLOCK_OK;

    if (rs->sc != NULL && rs->listening && !rs->sub_broken)
        return DLOCK_OK;
    if (rs->listening) {
        /* The old listener has exited (sub_broken): reap it. */
        pthread_t t = rs->listener;

        rs->listening = 0;
        pthread_mutex_unlock(&rs->smu);
        pthread_join(t, NULL);
        pthread_mutex_lock(&rs->smu);
        if (rs->listening)
            return DLOCK_OK; /* another waiter restarted it meanwhile */
    }
    pthread_mutex_unlock(&rs->smu);
    c = connect_ctx(rs, &rc);
    pthread_mutex_lock(&rs->smu);
    if (c == NULL)
        return rc;
    if (rs->listening) {
        redisFree(c);
        return DLOCK_OK;
    }
    rs->sc = c;
    rs->sub_broken = 0;
    rs->pend_head = rs->pend_len = 0; /* the old connection's are void */
    rs->stop = 0;
    if (pthread_create(&rs->listener, NULL, listener_main, rs) != 0) {
        redisFree(rs->sc);
        rs->sc = NULL;
        return dlock__seterr(DLOCK_ENOMEM, "cannot start the redis "
                             "listener thread");
    }
    rs->listening = 1;
    /* Subscribe again to what waiters still wait on. */
    for (struct chan *ch = rs->chans; ch != NULL; ch = ch->next) {
        if (ch->refs == 0)
            continue;
        (void)sub_cmd(rs, "SUBSCRIBE", ch->name, ch->len, P_SUB);
        if (ch->ks != NULL && !rs->ks_denied)
            (void)sub_cmd(rs, "SUBSCRIBE", ch->ks, ch->ks_len, P_SUB_KS);
    }
    return DLOCK_OK;
}

static void cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                            int64_t when_ms)
{
    struct timespec ts = {(time_t)(when_ms / 1000),
                          (long)(when_ms % 1000) * 1000000L};

    pthread_cond_timedwait(cv, mu, &ts);
}

/* Join the waiters of lk's channel (caller holds smu). */
static struct chan *join_chan(struct redis_store *rs, const struct dlock__rkeys *k,
                              struct waiter *w)
{
    struct chan *c = find_chan(rs, k->chan, k->chan_len);

    if (c == NULL) {
        c = calloc(1, sizeof(*c));
        if (c == NULL || (c->name = dlock__strndup(k->chan, k->chan_len)) ==
                             NULL) {
            free(c);
            return NULL;
        }
        c->len = k->chan_len;
        c->next = rs->chans;
        rs->chans = c;
    }
    if (c->refs++ == 0 && !c->subscribed)
        (void)sub_cmd(rs, "SUBSCRIBE", c->name, c->len, P_SUB);
    w->next = NULL;
    if (c->tail != NULL)
        c->tail->next = w;
    else
        c->head = w;
    c->tail = w;
    return c;
}

static void leave_chan(struct redis_store *rs, struct chan *c,
                       struct waiter *w)
{
    struct waiter **pp = &c->head, *prev = NULL;

    while (*pp != NULL && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == w) {
        *pp = w->next;
        if (c->tail == w)
            c->tail = prev;
    }
    /* A wake-up this waiter got but did not use passes on. */
    if (w->woken && c->head != NULL) {
        for (struct waiter *o = c->head; o != NULL; o = o->next)
            if (!o->woken) {
                o->woken = 1;
                pthread_cond_signal(&o->cv);
                break;
            }
    }
    if (--c->refs == 0) {
        struct chan **cp = &rs->chans;

        if (c->subscribed)
            (void)sub_cmd(rs, "UNSUBSCRIBE", c->name, c->len, P_UNSUB);
        if (c->ks != NULL)
            (void)sub_cmd(rs, "UNSUBSCRIBE", c->ks, c->ks_len, P_UNSUB);
        while (*cp != c)
            cp = &(*cp)->next;
        *cp = c->next;
        free(c->name);
        free(c->ks);
        free(c);
    }
}

/* Does the server send the keyspace events that show a foreign holder's
 * release: K (keyspace channels) with g (DEL, UNLINK; "A" includes g)?
 * Asked with CONFIG GET, which an ACL or a managed service may refuse:
 * then no, and waiters poll.  Never switched on from here: CONFIG SET is
 * often denied and changes the whole server's behaviour.  The answer is
 * trusted for KS_RECHECK_MS. */
static int ks_usable(struct redis_store *rs)
{
    int on;

    pthread_mutex_lock(&rs->mu);
    if (!rs->ks_known || dlock__now_ms() - rs->ks_checked >= KS_RECHECK_MS) {
        redisReply *r = NULL;

        rs->ks_on = 0;
        if (ensure_conn(rs) == DLOCK_OK) {
            r = redisCommand(rs->c, "CONFIG GET notify-keyspace-events");
            if (r == NULL)
                drop_conn(rs); /* the next attempt reconnects */
        }
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_STRING) {
            const char *f = r->element[1]->str;

            rs->ks_on = strchr(f, 'K') != NULL &&
                        (strchr(f, 'g') != NULL || strchr(f, 'A') != NULL);
        }
        freeReplyObject(r);
        rs->ks_known = 1;
        rs->ks_checked = dlock__now_ms();
    }
    on = rs->ks_on;
    pthread_mutex_unlock(&rs->mu);
    return on;
}

/* Subscribe c to the keyspace channel of the lock key, if not yet (caller
 * holds smu).  Out of memory leaves c->ks NULL: the waiter polls. */
static void want_ks(struct redis_store *rs, struct chan *c,
                    const struct dlock__rkeys *k)
{
    char head[48];
    int n;

    if (c->ks != NULL || rs->ks_denied)
        return;
    n = snprintf(head, sizeof(head), "__keyspace@%d__:", rs->db);
    c->ks = malloc((size_t)n + k->klen[0] + 1);
    if (c->ks == NULL)
        return;
    memcpy(c->ks, head, (size_t)n);
    memcpy(c->ks + n, k->k[0], k->klen[0]);
    c->ks_len = (size_t)n + k->klen[0];
    c->ks[c->ks_len] = '\0';
    /* Not sent (connection broken): ensure_sub sends it with the rest. */
    (void)sub_cmd(rs, "SUBSCRIBE", c->ks, c->ks_len, P_SUB_KS);
}

/* The n-th poll interval on a foreign holder: FOREIGN_POLL_MIN_MS
 * doubling up to FOREIGN_POLL_MAX_MS, less up to a quarter of jitter. */
static int64_t foreign_poll_ms(unsigned n)
{
    int64_t step = FOREIGN_POLL_MAX_MS;

    if (n < 8 && ((int64_t)FOREIGN_POLL_MIN_MS << n) < FOREIGN_POLL_MAX_MS)
        step = (int64_t)FOREIGN_POLL_MIN_MS << n;
    return step - (int64_t)(dlock__rand32() % (uint32_t)(step / 4 + 1));
}

static int redis_wait_acquire(struct dlock_store *s, struct dlock_lock *lk,
                              int64_t deadline)
{
    struct redis_store *rs = (struct redis_store *)s;
    struct waiter w = {NULL, PTHREAD_COND_INITIALIZER, 0};
    pthread_condattr_t ca;
    struct dlock__rkeys k;
    struct chan *c;
    unsigned attempt = 0, polls = 0;
    int64_t retry0 = -1;
    int rc, subscribed_ok;

    rc = make_keys(rs, lk->name, lk->name_len, &k);
    if (rc != DLOCK_OK)
        return rc;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w.cv, &ca);
    pthread_condattr_destroy(&ca);

    /* A free lock needs no subscription: try first. */
    lk->lease_end = dlock__now_ms() + lk->ttl_ms;
    rc = redis_try_acquire(s, lk, deadline, &retry0);
    if (rc != DLOCK_BUSY || dlock__remaining_ms(deadline) == 0) {
        pthread_cond_destroy(&w.cv);
        free(k.buf);
        return rc;
    }
    pthread_mutex_lock(&rs->smu);
    subscribed_ok = ensure_sub(rs) == DLOCK_OK && !rs->sub_denied;
    c = join_chan(rs, &k, &w);
    if (c == NULL) {
        pthread_mutex_unlock(&rs->smu);
        pthread_cond_destroy(&w.cv);
        free(k.buf);
        return dlock__enomem();
    }
    /* Try only once the subscription is confirmed: a release between our
     * attempt and the subscription would otherwise go unheard. */
    while (subscribed_ok && !c->subscribed && !rs->sub_broken &&
           !rs->sub_denied && dlock__remaining_ms(deadline) > 0) {
        int64_t until = dlock__now_ms() + 100;

        if (deadline != DLOCK_WAIT_FOREVER && deadline < until)
            until = deadline;
        cond_wait_until(&w.cv, &rs->smu, until);
    }
    pthread_mutex_unlock(&rs->smu);

    for (;;) {
        int64_t retry = -1, now, wake, rem;
        int woken, broken, foreign = 1, ks = 0, ks_wait = 0;

        /* The lease starts no earlier than this attempt. */
        lk->lease_end = dlock__now_ms() + lk->ttl_ms;
        rc = acquire_once(s, lk, &retry, &foreign);
        if (rc != DLOCK_BUSY)
            break;
        now = dlock__now_ms();
        rem = dlock__remaining_ms(deadline);
        if (rem == 0)
            break;
        if (foreign)
            ks = ks_usable(rs);
        else
            polls = 0;
        /* Sleep until a release message, the holder's lease end, or the
         * deadline.  Without a working subscription, back off. */
        pthread_mutex_lock(&rs->smu);
        if (!c->subscribed || rs->sub_broken || rs->sub_denied) {
            wake = now + dlock__backoff_ms(attempt++, dlock__rand32());
            if (!rs->sub_denied && ensure_sub(rs) == DLOCK_OK &&
                !c->subscribed)
                (void)sub_cmd(rs, "SUBSCRIBE", c->name, c->len, P_SUB);
        } else if (!foreign) {
            /* A dlock holder publishes when it lets go, and its key
             * expires at retry: no polling. */
            wake = now + (retry >= 0 ? retry + 1 : SAFETY_POLL_MS);
        } else {
            /* Another client does not publish.  With keyspace events
             * the key's "del" wakes us; until that subscription is
             * confirmed, wait for the confirmation only and look again
             * (a DEL in between would go unheard).  Without them, poll
             * (50..250 ms).  Never past the holder's lease end. */
            if (ks)
                want_ks(rs, c, &k);
            if (ks && c->ks != NULL && !rs->ks_denied) {
                ks_wait = !c->ks_subscribed;
                wake = now + SAFETY_POLL_MS;
            } else {
                wake = now + foreign_poll_ms(polls++);
            }
            if (retry >= 0 && wake > now + retry + 1)
                wake = now + retry + 1;
        }
        if (deadline != DLOCK_WAIT_FOREVER && wake > deadline)
            wake = deadline;
        /* The subscriber connection breaking (the server going away,
         * often) ends the sleep too: one attempt tells which. */
        broken = rs->sub_broken;
        while (!w.woken && dlock__now_ms() < wake &&
               rs->sub_broken == broken &&
               !(ks_wait &&
                 (c->ks_subscribed || rs->ks_denied || rs->sub_denied)))
            cond_wait_until(&w.cv, &rs->smu, wake);
        woken = w.woken;
        w.woken = 0;
        pthread_mutex_unlock(&rs->smu);
        /* At the deadline only a woken waiter tries once more. */
        if (dlock__remaining_ms(deadline) == 0 && !woken)
            break;
    }
    pthread_mutex_lock(&rs->smu);
    leave_chan(rs, c, &w);
    pthread_mutex_unlock(&rs->smu);
    pthread_cond_destroy(&w.cv);
    free(k.buf);
    return rc;
}

/* --- status, list, force_release ------------------------------------ */

static int describe(struct redis_store *rs, const char *name,
                    dlock_info *out)
{
    struct dlock__rkeys k;
    redisReply *r;
    const char *a[2] = {"", ""};
    size_t al[2] = {0, 0};
    int rc;

    rc = make_keys(rs, name, strlen(name), &k);
    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&rs->mu);
    r = run(rs, S_STATUS, &k, 0, a, al, 1, &rc);
    pthread_mutex_unlock(&rs->mu);
    free(k.buf);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 7)
        return bad_reply(rs, r);
    {
        redisReply **e = r->element;
        long long held = e[0]->integer, readers = e[1]->integer;

        out->held = held == 1 || readers > 0;
        out->shared = held != 1 && readers > 0;
        out->holders = held == 1 ? 1 : (unsigned)readers;
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

static int redis_list(struct dlock_store *s, const char *prefix,
                      int (*cb)(const dlock_info *info, void *payload),
                      void *payload)
{
    struct redis_store *rs = (struct redis_store *)s;
    size_t plen = strlen(prefix);
    char *lit = malloc(rs->prefix_len + plen + 1), *pattern, cursor[32] = "0";
    struct dlock__names names = {NULL, 0, 0};
    int rc = DLOCK_OK;

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
    pthread_mutex_lock(&rs->mu);
    do {
        redisReply *r;

        rc = ensure_conn(rs);
        if (rc != DLOCK_OK)
            break;
        r = redisCommand(rs->c, "SCAN %s MATCH %s COUNT 1000", cursor,
                         pattern);
        if (r == NULL) {
            rc = dlock__seterr(DLOCK_EUNAVAIL, "lost the connection to %s",
                               rs->url);
            drop_conn(rs);
            break;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            rc = r->type == REDIS_REPLY_ERROR ? reply_error(rs, r, "SCAN")
                                              : bad_reply(rs, r);
            if (r->type == REDIS_REPLY_ERROR)
                freeReplyObject(r);
            break;
        }
        dlock__strlcpy(cursor, r->element[0]->str, sizeof(cursor));
        for (size_t i = 0; i < r->element[1]->elements && rc == DLOCK_OK;
             i++) {
            redisReply *key = r->element[1]->element[i];
            size_t cut;

            if (key->type != REDIS_REPLY_STRING ||
                !dlock__redis_key_name(key->str, key->len, rs->prefix,
                                       rs->prefix_len, &cut))
                continue;
            rc = dlock__names_add(&names, key->str + rs->prefix_len, cut);
        }
        freeReplyObject(r);
    } while (rc == DLOCK_OK && strcmp(cursor, "0") != 0);
    pthread_mutex_unlock(&rs->mu);
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
    int rc;

    rc = make_keys(rs, name, strlen(name), &k);
    if (rc != DLOCK_OK)
        return rc;
    a[0] = "";
    al[0] = 0;
    a[1] = k.chan;
    al[1] = k.chan_len;
    pthread_mutex_lock(&rs->mu);
    r = run(rs, S_FORCE, &k, 2, a, al, 1, &rc);
    pthread_mutex_unlock(&rs->mu);
    free(k.buf);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        return bad_reply(rs, r);
    *removed = (unsigned)r->integer;
    freeReplyObject(r);
    return DLOCK_OK;
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
    .open = redis_open,
    .close = redis_close,
    .try_acquire = redis_try_acquire,
    .wait_acquire = redis_wait_acquire,
    .extend = redis_extend,
    .ttl_left = redis_ttl_left,
    .release = redis_release,
    .forget = NULL,
    .status = redis_status,
    .list = redis_list,
    .force_release = redis_force_release,
    .init = redis_init,
    .ddl = redis_ddl,
};
