/*
 * scripts.c - the Lua scripts, one per operation, and running them.
 *
 * Every operation on a lock is one script, one round trip.  Scripts are
 * loaded on each new command connection (SCRIPT LOAD) and run with
 * EVALSHA; when the server answers NOSCRIPT (SCRIPT FLUSH, a restart, a
 * failover) the text goes with EVAL, which also caches it again.
 */
#include <string.h>

#include "redis.h"

/* KEYS: 1 lock, 2 fence, 3 readers, 4 info, 5 queue, 6 waiters.  ARGV: 1
 * token, 2 ttl ms, 3 host, 4 pid, 5 (an acquire) how it treats the queue:
 * Q_WAIT, Q_TRY or Q_UNFAIR (redis.h).  Channels are not keys: the name's
 * release channel is KEYS[1] .. 0xff "release", a waiter's own channel
 * KEYS[1] .. 0xff "w" .. its token.  PUBLISH goes through pcall: a user
 * whose ACL has no channel rights still releases (waiters then notice by
 * their timers). */
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

/* The next fence: the counter, but never less than the server's clock in
 * us.  A server that lost the counter (a restart without persistence) or
 * has an old value of it (a replica promoted before it saw the last INCRs,
 * an AOF that lost its last second) still hands out more than before, as
 * long as it was away longer than the servers' clocks differ. */
#define FN_FENCE                                                             \
    "local function fence(now) "                                            \
    "  local f = redis.call('INCR', KEYS[2]) "                               \
    "  if f < now * 1000 then "                                              \
    "    f = now * 1000 "                                                    \
    "    redis.call('SET', KEYS[2], string.format('%d', f)) "               \
    "  end "                                                                 \
    "  return f "                                                            \
    "end "

/* Make tok the exclusive holder, with fence f. */
#define FN_HOLD                                                              \
    "local function hold(tok, ttl, host, pid, f, now) "                      \
    "  redis.call('SET', KEYS[1], 'dlock1:' .. tok, 'PX', ttl) "             \
    "  redis.call('DEL', KEYS[4]) "                                          \
    "  redis.call('HSET', KEYS[4], 'fence', f, 'host', host, 'pid', pid, "   \
    "    'since', now) "                                                     \
    "  redis.call('PEXPIRE', KEYS[4], ttl) "                                 \
    "end "

/* The lock is free: hand it to the longest waiting live waiter, the
 * caller `me` included.  An entry past its deadline is dropped unasked;
 * the others are told on their own channel, and PUBLISH counts who
 * listens: none means the waiter died or gave up (its process closed the
 * connection, or it unsubscribed), and it is dropped too.  Each loop
 * drops one entry, so it ends.  Returns the new holder and its fence, or
 * false when nobody waits. */
#define FN_HANDOFF                                                           \
    FN_FENCE FN_HOLD                                                         \
    "local function handoff(now, me) "                                       \
    "  while true do "                                                       \
    "    local w = redis.call('ZRANGE', KEYS[5], 0, 0)[1] "                  \
    "    if not w then "                                                     \
    "      redis.call('DEL', KEYS[5], KEYS[6]) "                             \
    "      return false "                                                    \
    "    end "                                                               \
    "    local v = redis.call('HGET', KEYS[6], w) "                          \
    "    redis.call('ZREM', KEYS[5], w) "                                    \
    "    redis.call('HDEL', KEYS[6], w) "                                    \
    "    local ttl, dl, pid, host = "                                        \
    "      string.match(v or '', '^(%d+) (%d+) (%d+) (.*)$') "               \
    "    if ttl and tonumber(dl) > now then "                                \
    "      local f = fence(now) "                                            \
    "      local ok = w == me "                                              \
    "      if not ok then "                                                  \
    "        local n = redis.pcall('PUBLISH', KEYS[1] .. '\\255w' .. w, "    \
    "          'g' .. string.format('%d', f)) "                              \
    "        ok = type(n) ~= 'number' or n > 0 "                             \
    "      end "                                                             \
    "      if ok then "                                                      \
    "        hold(w, ttl, host, pid, f, now) "                               \
    "        return w, f "                                                   \
    "      end "                                                             \
    "    end "                                                               \
    "  end "                                                                 \
    "end "

/* The lock is gone from its holder: the next waiter has it, else the
 * name's channel hears of it (waiters not in the queue). */
#define PASS_ON                                                              \
    "if not handoff(now, '') then "                                          \
    "  redis.pcall('PUBLISH', KEYS[1] .. '\\255release', 'r') "              \
    "end "

/* Let go of an exclusive lock if it is still ours: 1, else 0. */
#define RELEASE_OWN                                                          \
    "if redis.call('GET', KEYS[1]) == " OWN " then "                         \
    "  redis.call('DEL', KEYS[1], KEYS[4]) "                                 \
    PASS_ON                                                                  \
    "  return 1 "                                                            \
    "end "                                                                   \
    "return 0"

/* A busy attempt that waits joins the queue (or keeps its place) with a
 * deadline past the holder's lease by QUEUE_GRACE_MS: a waiter looks
 * again at that lease end at the latest, which renews its entry, so only
 * an entry whose waiter is gone (or hangs) runs out.  Returns the place
 * in the queue (1: next), 0 when not queued. */
#define QUEUE_GRACE "10000"
#define FN_ENQUEUE                                                           \
    "local function enqueue(now, left) "                                     \
    "  if ARGV[5] ~= 'q' then return 0 end "                                 \
    "  local dl = now + math.max(left, 1000) + " QUEUE_GRACE " "             \
    "  if not redis.call('ZSCORE', KEYS[5], ARGV[1]) then "                  \
    "    redis.call('ZADD', KEYS[5], redis.call('HINCRBY', KEYS[6], '#', 1), " \
    "      ARGV[1]) "                                                        \
    "  end "                                                                 \
    "  redis.call('HSET', KEYS[6], ARGV[1], ARGV[2] .. ' ' .. "              \
    "    string.format('%d', dl) .. ' ' .. ARGV[4] .. ' ' .. ARGV[3]) "      \
    "  if redis.call('PTTL', KEYS[5]) < dl - now then "                      \
    "    redis.call('PEXPIREAT', KEYS[5], dl) "                              \
    "    redis.call('PEXPIREAT', KEYS[6], dl) "                              \
    "  end "                                                                 \
    "  return redis.call('ZRANK', KEYS[5], ARGV[1]) + 1 "                    \
    "end "

static const char *const lua[S_COUNT] = {
    /* Ours already (a hand-off whose message we did not wait for): the
     * lease restarts now, so the caller can count it from this call. */
    [S_ACQ] = NOW FN_HANDOFF FN_ENQUEUE
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur == " OWN " then "
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2]) "
    "  redis.call('PEXPIRE', KEYS[4], ARGV[2]) "
    "  return {1, tonumber(redis.call('HGET', KEYS[4], 'fence') or '0')} "
    "end "
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) "
    "if cur and cur ~= " MARK " then "
    "  local left = redis.call('PTTL', KEYS[1]) "
    "  return {0, left, " DLOCK_VAL("cur") " and 1 or 0, enqueue(now, left)} "
    "end "
    "local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "if top[2] then "
    "  local left = tonumber(top[2]) - now "
    "  return {0, left, 1, enqueue(now, left)} "
    "end "
    /* Free: those who queued come first, unless the caller opted out. */
    "if ARGV[5] ~= 'u' then "
    "  local g, f = handoff(now, ARGV[1]) "
    "  if g == ARGV[1] then return {1, f} end "
    "  if g then "
    "    local left = redis.call('PTTL', KEYS[1]) "
    "    return {0, left, 1, enqueue(now, left)} "
    "  end "
    "end "
    "local f = fence(now) "
    "hold(ARGV[1], ARGV[2], ARGV[3], ARGV[4], f, now) "
    "return {1, f}",

    /* Readers do not queue, and do not pass queued writers: a writer
     * that waits is not starved by readers that keep coming. */
    [S_ACQ_SHARED] = NOW FN_HANDOFF
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur and cur ~= " MARK " then "
    "  return {0, redis.call('PTTL', KEYS[1]), "
    "  " DLOCK_VAL("cur") " and 1 or 0} end "
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) "
    "local mine = redis.call('HGET', KEYS[4], 'f:' .. ARGV[1]) "
    "if mine and redis.call('ZSCORE', KEYS[3], ARGV[1]) then "
    "  return {1, tonumber(mine)} "
    "end "
    "if ARGV[5] ~= 'u' and redis.call('EXISTS', KEYS[5]) == 1 then "
    "  local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "  if top[2] then return {0, tonumber(top[2]) - now, 1} end "
    "  if handoff(now, '') then "
    "    return {0, redis.call('PTTL', KEYS[1]), 1} "
    "  end "
    "end "
    "redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1]) "
    "local f = fence(now) "
    "local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "redis.call('PEXPIREAT', KEYS[3], tonumber(top[2])) "
    "redis.call('HSET', KEYS[4], 'f:' .. ARGV[1], f, 'host', ARGV[3], "
    "  'pid', ARGV[4], 'since', now) "
    "redis.call('PEXPIREAT', KEYS[4], tonumber(top[2])) "
    "redis.call('SET', KEYS[1], " MARK ", 'PX', "
    "  string.format('%d', math.max(1, tonumber(top[2]) - now))) "
    "return {1, f}",

    [S_REL] = NOW FN_HANDOFF
    RELEASE_OWN,

    [S_REL_SHARED] = NOW FN_HANDOFF
    "local s = redis.call('ZSCORE', KEYS[3], ARGV[1]) "
    "redis.call('ZREM', KEYS[3], ARGV[1]) "
    "redis.call('HDEL', KEYS[4], 'f:' .. ARGV[1]) "
    "redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) "
    "local marked = redis.call('GET', KEYS[1]) == " MARK " "
    "local top = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES') "
    "if not top[2] then "
    "  if marked then redis.call('DEL', KEYS[1]) end "
    "  if redis.call('EXISTS', KEYS[1]) == 0 then "
    "    redis.call('DEL', KEYS[4]) "
    PASS_ON
    "  end "
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

    [S_FORCE] = NOW FN_HANDOFF
    "local n = redis.call('EXISTS', KEYS[1]) "
    "if redis.call('GET', KEYS[1]) == " MARK " then n = 0 end "
    "n = n + redis.call('ZCARD', KEYS[3]) "
    "redis.call('DEL', KEYS[1], KEYS[3], KEYS[4]) "
    PASS_ON
    "return n",

    /* A wait that ends without the lock leaves the queue; a hand-off that
     * crossed its end (the lock is ours) is passed on at once. */
    [S_LEAVE] = NOW FN_HANDOFF
    "redis.call('ZREM', KEYS[5], ARGV[1]) "
    "redis.call('HDEL', KEYS[6], ARGV[1]) "
    "if redis.call('ZCARD', KEYS[5]) == 0 then redis.call('DEL', KEYS[6]) end "
    RELEASE_OWN,
};

int dlock__redis_load_scripts(struct redis_store *rs, redisContext *c)
{
    for (int i = 0; i < S_COUNT; i++) {
        redisReply *r = redisCommand(c, "SCRIPT LOAD %s", lua[i]);
        int rc;

        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
            rc = r && r->type == REDIS_REPLY_ERROR
                     ? dlock__redis_reply_error(rs, r, "SCRIPT LOAD")
                     : dlock__seterr(DLOCK_EUNAVAIL, "%s: %s", rs->url,
                                     c->err ? c->errstr
                                            : "bad SCRIPT LOAD reply");
            freeReplyObject(r);
            return rc;
        }
        memcpy(rs->sha[i], r->str, 40);
        rs->sha[i][40] = '\0';
        freeReplyObject(r);
    }
    return DLOCK_OK;
}

/* EVALSHA script s (argv[1] its sha), else its text on NOSCRIPT. */
struct eval {
    struct redis_store *rs;
    int s, argc;
    const char **argv;
    size_t *lens;
    redisReply *reply;
};

static int eval_fn(void *conn, void *arg, int *dead)
{
    struct eval *e = arg;
    int rc;

    e->argv[0] = "EVALSHA";
    e->lens[0] = 7;
    e->argv[1] = e->rs->sha[e->s];
    e->lens[1] = 40;
    rc = dlock__redis_send(e->rs, conn, e->argc, e->argv, e->lens, &e->reply,
                           dead);
    if (rc == DLOCK_OK && e->reply->type == REDIS_REPLY_ERROR &&
        strncmp(e->reply->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(e->reply);
        e->argv[0] = "EVAL";
        e->lens[0] = 4;
        e->argv[1] = lua[e->s];
        e->lens[1] = strlen(lua[e->s]);
        rc = dlock__redis_send(e->rs, conn, e->argc, e->argv, e->lens,
                               &e->reply, dead);
    }
    return rc;
}

redisReply *dlock__redis_run(struct redis_store *rs, int s,
                             const struct dlock__rkeys *k, int nargs,
                             const char **args, const size_t *alen, int retry,
                             int *rc)
{
    const char *argv[3 + DLOCK__RKEYS + 6];
    size_t lens[3 + DLOCK__RKEYS + 6];
    struct eval e = {rs, s, 0, argv, lens, NULL};

    argv[2] = "6";
    lens[2] = 1;
    for (int i = 0; i < DLOCK__RKEYS; i++) {
        argv[3 + i] = k->k[i];
        lens[3 + i] = k->klen[i];
    }
    for (int i = 0; i < nargs && i < 6; i++) {
        argv[3 + DLOCK__RKEYS + i] = args[i];
        lens[3 + DLOCK__RKEYS + i] = alen[i];
    }
    e.argc = 3 + DLOCK__RKEYS + (nargs < 6 ? nargs : 6);
    *rc = dlock__redis_exec(rs, eval_fn, &e, retry);
    if (*rc != DLOCK_OK)
        return NULL;
    if (e.reply->type == REDIS_REPLY_ERROR) {
        *rc = dlock__redis_reply_error(rs, e.reply, "script");
        freeReplyObject(e.reply);
        return NULL;
    }
    return e.reply;
}
