/*
 * scripts.c - the Lua scripts, one per operation, and running them.
 *
 * Every operation on a lock is one script, one round trip.  Scripts are
 * loaded on each new command connection (SCRIPT LOAD) and run with
 * EVALSHA; when the server answers NOSCRIPT (SCRIPT FLUSH, a restart, a
 * failover) the text goes with EVAL, which also caches it again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis.h"

/* KEYS: 1 lock, 2 fence, 3 readers, 4 info, 5 queue, 6 waiters, 7 sem.
 * ARGV: 1 token, 2 ttl ms, 3 host, 4 pid, 5 (an acquire) how it treats
 * the queue: Q_WAIT, Q_TRY or Q_UNFAIR (redis.h), 6 (a semaphore's
 * acquire) its limit.  Channels are not keys: the name's release channel
 * is KEYS[1] .. 0xff "release", a waiter's own channel KEYS[1] .. 0xff
 * "w" .. its token.  PUBLISH goes through pcall: a user whose ACL has no
 * channel rights still releases (waiters then notice by their timers). */
#define NOW                                                                  \
    "local t = redis.call('TIME') "                                          \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "

/* While readers hold a name, its lock key holds MARK (with the longest
 * reader lease), so clients that only know the plain SET NX pattern are
 * kept out by readers too; while a semaphore's holders do, SEM.  Values
 * are "dlock1:" + hex: none is a marker. */
#define MARK "'\\255shared'"
#define SEM "'\\255sem'"

/* An exclusive holder's value is OWN: "dlock1:" and its owner token (32 hex
 * digits), not the bare token.  Other clients' tokens are often 32 hex
 * digits too (node-redlock: 16 random bytes in hex; PHP:
 * bin2hex(random_bytes(16))), but none starts with "dlock1:", and only
 * dlock publishes when it lets go: DLOCK_VAL(v) tells a waiter whether it
 * will hear the release or has to look for it.  A value written by a dlock
 * older than this format counts as foreign, which only costs polling. */
#define OWN "('dlock1:' .. ARGV[1])"
#define DLOCK_VAL(v) "(#" v " == 39 and string.match(" v ", '^dlock1:%x+$'))"

/* The next fence, at TIME t (now: t in ms): the counter, but never less
 * than the server's clock in us (to the microsecond: two masters of a
 * split brain both on the floor in one millisecond would otherwise hand
 * out the same fence).  A server
 * that lost the counter (a restart without persistence) or
 * has an old value of it (a replica promoted before it saw the last INCRs,
 * an AOF that lost its last second) still hands out more than before, as
 * long as it was away longer than the servers' clocks differ. */
#define FN_FENCE                                                             \
    "local function fence(now, t) "                                         \
    "  local f = redis.call('INCR', KEYS[2]) "                               \
    "  local us = now * 1000 + tonumber(t[2]) % 1000 "                       \
    "  if f < us then "                                                      \
    "    f = us "                                                            \
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

/* Add tok, with fence f, to the holders in sorted set z (readers: KEYS[3]
 * and MARK; a semaphore's: KEYS[7], SEM and its limit lim), scored by
 * lease end; z, the info and the lock key's marker live as long as the
 * last lease.  The first holder starts a fresh info hash. */
#define FN_JOIN                                                              \
    "local function join(z, mark, tok, ttl, host, pid, f, now, lim) "        \
    "  if redis.call('EXISTS', z) == 0 then redis.call('DEL', KEYS[4]) end " \
    "  redis.call('ZADD', z, now + tonumber(ttl), tok) "                     \
    "  local top = tonumber(redis.call('ZRANGE', z, -1, -1, 'WITHSCORES')[2]) " \
    "  redis.call('PEXPIREAT', z, top) "                                     \
    "  redis.call('HSET', KEYS[4], 'f:' .. tok, f, 'host', host, 'pid', pid, " \
    "    'since', now) "                                                     \
    "  if lim then redis.call('HSET', KEYS[4], 'limit', lim) end "          \
    "  redis.call('PEXPIREAT', KEYS[4], top) "                               \
    "  redis.call('SET', KEYS[1], mark, 'PX', "                              \
    "    string.format('%d', math.max(1, top - now))) "                      \
    "end "

/* Who holds the name now (expired shared and semaphore holders dropped):
 * how many, the limit they hold it with (want when a semaphore's limit
 * is unknown: its info was deleted), and whether the holder is foreign
 * (a value that is neither dlock's nor a marker). */
#define FN_HOLDERS                                                           \
    "local function holders(now, want) "                                     \
    "  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now) "                \
    "  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', now) "                \
    "  local n = redis.call('ZCARD', KEYS[3]) "                              \
    "  if n > 0 then return n, 1, false end "                                \
    "  n = redis.call('ZCARD', KEYS[7]) "                                    \
    "  if n > 0 then "                                                       \
    "    return n, tonumber(redis.call('HGET', KEYS[4], 'limit') or want), " \
    "      false "                                                           \
    "  end "                                                                 \
    "  local cur = redis.call('GET', KEYS[1]) "                              \
    "  if cur and cur ~= " MARK " and cur ~= " SEM " then "                  \
    "    return 1, 1, not " DLOCK_VAL("cur") " "                             \
    "  end "                                                                 \
    "  return 0, 0, false "                                                  \
    "end "

/* The name is free, or a slot of it is: hand it to the longest waiting
 * live waiters, the caller `me` included, while they fit (a lock waiter
 * needs the name free, a semaphore waiter of limit L one of L slots; the
 * first that does not fit stops the hand-off: first come, first served).
 * An entry past its deadline is dropped unasked; the others are told on
 * their own channel, and PUBLISH counts who listens: none means the
 * waiter died or gave up (its process closed the connection, or it
 * unsubscribed), and it is dropped too.  Each loop drops one entry or
 * stops, so it ends.  Returns whether anyone got it, and the fence of
 * `me` if it did.
 *
 * The other waiters sleep until the lease end of the holder they last
 * saw, and an expiring lease publishes nothing: a waiter handed the lock
 * that dies or hangs at once (a short lease after a long one) would keep
 * them asleep until the old holder's lease end, not its own.  So a
 * hand-off to others than `me` also publishes "h" + the shortest lease
 * it handed on the name's channel: every waiter there moves its next
 * look to that lease end at the latest (sub.c), at no cost of attempts.
 * Only a contended release pays this PUBLISH. */
#define HEARD "(type(n) ~= 'number' or n > 0)"
/* Redis Cluster: PUBLISH counts the subscribers of the node it runs on
 * only, while the message reaches every node's.  A count of 0 there does
 * not mean nobody heard (the waiter may have, on another node, and would
 * take the lock as handed over): the hand-off is made to every live
 * entry, and a waiter that died holds what it was handed until its lease
 * runs out, as any dead holder does. */
#define HEARD_CLUSTER "true"
#define FN_HANDOFF_BODY                                                      \
    FN_HOLD FN_JOIN FN_HOLDERS                                               \
    "local function room(now, lim) "                                         \
    "  local n, l = holders(now, lim) "                                      \
    "  return n == 0 or (lim > 1 and l == lim and n < lim) "                 \
    "end "                                                                   \
    "local function told(gave, mine, short) "                                \
    "  if short then "                                                       \
    "    redis.pcall('PUBLISH', KEYS[1] .. '\\255release', "                 \
    "      'h' .. string.format('%d', short)) "                              \
    "  end "                                                                 \
    "  return gave, mine "                                                   \
    "end "                                                                   \
    "local function handoff(now, me) "                                       \
    "  local gave, mine, short = false, nil, nil "                           \
    "  while true do "                                                       \
    "    local w = redis.call('ZRANGE', KEYS[5], 0, 0)[1] "                  \
    "    if not w then "                                                     \
    "      redis.call('DEL', KEYS[5], KEYS[6]) "                             \
    "      return told(gave, mine, short) "                                  \
    "    end "                                                               \
    "    local v = redis.call('HGET', KEYS[6], w) "                          \
    "    local lim = tonumber(redis.call('HGET', KEYS[6], 'l:' .. w) or '1') " \
    "    local ttl, dl, pid, host = "                                        \
    "      string.match(v or '', '^(%d+) (%d+) (%d+) (.*)$') "               \
    "    local live = ttl and tonumber(dl) > now "                           \
    "    if live and not room(now, lim) then "                               \
    "      return told(gave, mine, short) "                                  \
    "    end "                                                               \
    "    redis.call('ZREM', KEYS[5], w) "                                    \
    "    redis.call('HDEL', KEYS[6], w, 'l:' .. w) "                         \
    "    if live then "                                                      \
    "      local f = fence(now, t) "                                         \
    "      local ok = w == me "                                              \
    "      if not ok then "                                                  \
    "        local n = redis.pcall('PUBLISH', KEYS[1] .. '\\255w' .. w, "    \
    "          'g' .. string.format('%d', f)) "                              \
    "        ok = " HEARD " "                                                \
    "      end "                                                             \
    "      if ok then "                                                      \
    "        gave = true "                                                   \
    "        if w == me then "                                               \
    "          mine = f "                                                    \
    "        elseif not short or tonumber(ttl) < short then "                \
    "          short = tonumber(ttl) "                                       \
    "        end "                                                           \
    "        if lim > 1 then "                                               \
    "          join(KEYS[7], " SEM ", w, ttl, host, pid, f, now, lim) "      \
    "        else "                                                          \
    "          hold(w, ttl, host, pid, f, now) "                             \
    "        end "                                                           \
    "      end "                                                             \
    "    end "                                                               \
    "  end "                                                                 \
    "end "                                                                   \
    /* The lock (or a slot: slots) is gone from its holder: the next       \
     * waiters have it; else, or when slots may be left over with nobody   \
     * queued, the name's channel hears of it (waiters not in the queue). */ \
    "local function pass_on(now, slots) "                                    \
    "  local gave = handoff(now, '') "                                       \
    "  if not gave or (slots and redis.call('EXISTS', KEYS[5]) == 0) then "  \
    "    redis.pcall('PUBLISH', KEYS[1] .. '\\255release', 'r') "            \
    "  end "                                                                 \
    "end "
/* fence() and the hand-off (S_ACQ defines fence() before its fast path
 * and takes FN_HANDOFF_BODY alone). */
#define FN_HANDOFF FN_FENCE FN_HANDOFF_BODY

/* Let go of an exclusive lock if it is still ours: 1, else 0. */
#define RELEASE_OWN                                                          \
    "if redis.call('GET', KEYS[1]) == " OWN " then "                         \
    "  redis.call('DEL', KEYS[1], KEYS[4]) "                                 \
    "  pass_on(now, false) "                                                 \
    "  return 1 "                                                            \
    "end "                                                                   \
    "return 0"

/* Take tok off the holders in z (marked by mark on the lock key): the
 * marker goes with the last of them.  Returns whether tok held a live
 * place, and whether z is now empty. */
#define FN_UNJOIN                                                            \
    "local function unjoin(z, mark, tok, now) "                              \
    "  local s = redis.call('ZSCORE', z, tok) "                              \
    "  redis.call('ZREM', z, tok) "                                          \
    "  redis.call('HDEL', KEYS[4], 'f:' .. tok) "                            \
    "  redis.call('ZREMRANGEBYSCORE', z, '-inf', now) "                      \
    "  local marked = redis.call('GET', KEYS[1]) == mark "                   \
    "  local top = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES') "           \
    "  if not top[2] then "                                                  \
    "    if marked then redis.call('DEL', KEYS[1]) end "                     \
    "    if redis.call('EXISTS', KEYS[1]) == 0 then "                        \
    "      redis.call('DEL', KEYS[4]) "                                      \
    "    end "                                                               \
    "  elseif marked then "                                                  \
    "    redis.call('PEXPIREAT', KEYS[1], tonumber(top[2])) "                \
    "  end "                                                                 \
    "  return s and tonumber(s) > now, not top[2] "                          \
    "end "

/* Renew tok's place among the holders in z: 1, or 0 when it has none. */
#define FN_EXT                                                               \
    "local function ext(z, mark, tok, ttl, now) "                            \
    "  local s = redis.call('ZSCORE', z, tok) "                              \
    "  if redis.call('GET', KEYS[1]) ~= mark or not s or "                   \
    "     tonumber(s) <= now then "                                          \
    "    redis.call('ZREM', z, tok) "                                        \
    "    return 0 "                                                          \
    "  end "                                                                 \
    "  redis.call('ZADD', z, now + tonumber(ttl), tok) "                     \
    "  local top = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES') "           \
    "  redis.call('PEXPIREAT', z, tonumber(top[2])) "                        \
    "  redis.call('PEXPIREAT', KEYS[4], tonumber(top[2])) "                  \
    "  redis.call('PEXPIREAT', KEYS[1], tonumber(top[2])) "                  \
    "  return 1 "                                                            \
    "end "

/* The lease left of tok's place in z, or -3 when it has none. */
#define TTL_IN(z, mark)                                                      \
    NOW                                                                      \
    "local s = redis.call('ZSCORE', " z ", ARGV[1]) "                        \
    "if s and tonumber(s) > now and "                                        \
    "   redis.call('GET', KEYS[1]) == " mark " then "                        \
    "  return tonumber(s) - now "                                            \
    "end "                                                                   \
    "return -3"

/* A busy attempt that waits joins the queue (or keeps its place) with a
 * deadline past the holder's lease by QUEUE_GRACE_MS: a waiter looks
 * again at that lease end at the latest, which renews its entry, so only
 * an entry whose waiter is gone (or hangs) runs out.  A semaphore's
 * waiter notes its limit ("l:" token).  Returns the place in the queue
 * (1: next), 0 when not queued. */
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
    "  if ARGV[6] then redis.call('HSET', KEYS[6], 'l:' .. ARGV[1], ARGV[6]) end " \
    "  if redis.call('PTTL', KEYS[5]) < dl - now then "                      \
    "    redis.call('PEXPIREAT', KEYS[5], dl) "                              \
    "    redis.call('PEXPIREAT', KEYS[6], dl) "                              \
    "  end "                                                                 \
    "  return redis.call('ZRANK', KEYS[5], ARGV[1]) + 1 "                    \
    "end "

/* An acquire's answer when the name is taken: {0, lease left (when to
 * look again; -1 unknown), 1 if a dlock holder (it publishes when it lets
 * go), place in the queue}; held with another limit: {-1, that limit,
 * holders}.  soonest and last: the first and the last lease end in z. */
#define FN_BUSY                                                              \
    "local function busy(now, left, dlock) "                                 \
    "  return {0, left, dlock and 1 or 0, enqueue(now, left)} "              \
    "end "                                                                   \
    "local function edge(z, i, now) "                                        \
    "  local e = redis.call('ZRANGE', z, i, i, 'WITHSCORES')[2] "             \
    "  return e and tonumber(e) - now or -1 "                                \
    "end "                                                                   \
    "local function soonest(z, now) return edge(z, 0, now) end "             \
    "local function last(z, now) return edge(z, -1, now) end "

/* The uncontended acquire, first in its script, before the functions
 * of the other paths are made: none of the lock, readers, info, queue,
 * waiters and semaphore keys (one EXISTS) is a name nobody holds, waits
 * for or left anything on: what the full path would find (no holders,
 * an empty queue: nothing to clean up or hand off) and do (fence() and
 * hold(), less the DEL of an info hash that does not exist), in 7
 * commands (EXISTS, TIME, INCR, the clock floor's SET, SET, HSET,
 * PEXPIRE).  Anything else, a foreign holder
 * or a stale key included, takes the full path. */
#define ACQ_FREE                                                             \
    "if redis.call('EXISTS', KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6], " \
    "    KEYS[7]) == 0 then "                                                \
    NOW                                                                      \
    "  local f = fence(now, t) "                                             \
    "  redis.call('SET', KEYS[1], " OWN ", 'PX', ARGV[2]) "                  \
    "  redis.call('HSET', KEYS[4], 'fence', f, 'host', ARGV[3], "            \
    "    'pid', ARGV[4], 'since', now) "                                     \
    "  redis.call('PEXPIRE', KEYS[4], ARGV[2]) "                             \
    "  return {1, f} "                                                       \
    "end "

/* The uncontended release: ours, and no queue or waiters keys (one
 * EXISTS): handoff() would find nobody, so the name's channel hears of
 * it, as pass_on() does, without TIME or the functions of a hand-off. */
#define REL_FREE                                                             \
    "if redis.call('GET', KEYS[1]) ~= " OWN " then return 0 end "            \
    "redis.call('DEL', KEYS[1], KEYS[4]) "                                   \
    "if redis.call('EXISTS', KEYS[5], KEYS[6]) == 0 then "                   \
    "  redis.pcall('PUBLISH', KEYS[1] .. '\\255release', 'r') "              \
    "  return 1 "                                                            \
    "end "

static const char *const lua[S_COUNT] = {
    /* Ours already (handed to us: the attempt of the waiter its "g"
     * message woke, or a later one if the message was lost): the lease
     * restarts now, so the caller can count it from this call, and the
     * fence is the one the hand-off drew.  The message itself is never
     * taken as the grant (sub.c): anyone may publish it. */
    [S_ACQ] = FN_FENCE ACQ_FREE NOW FN_HANDOFF_BODY FN_ENQUEUE FN_BUSY
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur == " OWN " then "
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2]) "
    "  redis.call('PEXPIRE', KEYS[4], ARGV[2]) "
    "  return {1, tonumber(redis.call('HGET', KEYS[4], 'fence') or '0')} "
    "end "
    "local function look() "
    "  local n, lim, foreign = holders(now, 1) "
    "  if n > 0 and lim ~= 1 then return {-1, lim, n} end "
    "  cur = redis.call('GET', KEYS[1]) "
    "  if cur and cur ~= " MARK " and cur ~= " SEM " then "
    "    return busy(now, redis.call('PTTL', KEYS[1]), not foreign) "
    "  end "
    "  if n > 0 then return busy(now, last(KEYS[3], now), true) end "
    "  return nil "
    "end "
    "local r = look() "
    "if r then return r end "
    /* Free: those who queued come first, unless the caller opted out. */
    "if ARGV[5] ~= 'u' then "
    "  local gave, mine = handoff(now, ARGV[1]) "
    "  if mine then return {1, mine} end "
    "  r = gave and look() "
    "  if r then return r end "
    "end "
    "local f = fence(now, t) "
    "hold(ARGV[1], ARGV[2], ARGV[3], ARGV[4], f, now) "
    "return {1, f}",

    /* Readers do not queue, and do not pass queued waiters: a writer
     * that waits is not starved by readers that keep coming. */
    [S_ACQ_SHARED] = NOW FN_HANDOFF
    "local n, lim = holders(now, 1) "
    "if n > 0 and lim ~= 1 then return {-1, lim, n} end "
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur and cur ~= " MARK " and cur ~= " SEM " then "
    "  return {0, redis.call('PTTL', KEYS[1]), "
    "  " DLOCK_VAL("cur") " and 1 or 0} end "
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
    "local f = fence(now, t) "
    "join(KEYS[3], " MARK ", ARGV[1], ARGV[2], ARGV[3], ARGV[4], f, now) "
    "return {1, f}",

    /* A semaphore of L = ARGV[6]: admitted while fewer than L hold it,
     * all with limit L; queued waiters first, in order.  Ours already (a
     * hand-off): the lease restarts now. */
    [S_ACQ_SEM] = NOW FN_HANDOFF FN_ENQUEUE FN_BUSY FN_EXT
    "local L = tonumber(ARGV[6]) "
    "if ext(KEYS[7], " SEM ", ARGV[1], ARGV[2], now) == 1 then "
    "  return {1, tonumber(redis.call('HGET', KEYS[4], 'f:' .. ARGV[1]) "
    "    or '0')} "
    "end "
    "local function look() "
    "  local n, lim, foreign = holders(now, L) "
    "  if foreign then return busy(now, redis.call('PTTL', KEYS[1]), false) end "
    "  if n > 0 and lim ~= L then return {-1, lim, n} end "
    "  if n >= L then return busy(now, soonest(KEYS[7], now), true) end "
    "  return nil "
    "end "
    "local r = look() "
    "if r then return r end "
    "if ARGV[5] ~= 'u' then "
    "  local gave, mine = handoff(now, ARGV[1]) "
    "  if mine then return {1, mine} end "
    "  r = look() "
    "  if r then return r end "
    /* Queued waiters that do not fit yet (a lock waiter behind the
     * holders) are not passed. */
    "  if redis.call('EXISTS', KEYS[5]) == 1 then "
    "    return busy(now, soonest(KEYS[7], now), true) "
    "  end "
    "end "
    "local f = fence(now, t) "
    "join(KEYS[7], " SEM ", ARGV[1], ARGV[2], ARGV[3], ARGV[4], f, now, L) "
    "return {1, f}",

    /* Ours, with a queue: the lock is let go and handed on. */
    [S_REL] = REL_FREE NOW FN_HANDOFF
    "pass_on(now, false) "
    "return 1",

    [S_REL_SHARED] = NOW FN_HANDOFF FN_UNJOIN
    "local held, empty = unjoin(KEYS[3], " MARK ", ARGV[1], now) "
    "if empty and redis.call('EXISTS', KEYS[1]) == 0 then "
    "  pass_on(now, false) "
    "end "
    "return held and 1 or 0",

    /* A slot freed: the queue's head may fit now. */
    [S_REL_SEM] = NOW FN_HANDOFF FN_UNJOIN
    "local held = unjoin(KEYS[7], " SEM ", ARGV[1], now) "
    "pass_on(now, true) "
    "return held and 1 or 0",

    /* A lock found gone (not taken over: gone, as after a FLUSHALL or a
     * restart without persistence) wakes its waiters at once: they were
     * sleeping until the lease they last saw, and nothing else will tell
     * them the name is free. */
    [S_EXT] =
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur == " OWN " then "
    "  redis.call('PEXPIRE', KEYS[1], ARGV[2]) "
    "  redis.call('PEXPIRE', KEYS[4], ARGV[2]) "
    "  return 1 "
    "end "
    "if not cur then "
    "  redis.pcall('PUBLISH', KEYS[1] .. '\\255release', 'r') "
    "end "
    "return 0",

    [S_EXT_SHARED] = NOW FN_EXT
    "return ext(KEYS[3], " MARK ", ARGV[1], ARGV[2], now)",

    [S_EXT_SEM] = NOW FN_EXT
    "return ext(KEYS[7], " SEM ", ARGV[1], ARGV[2], now)",

    [S_TTL] =
    "if redis.call('GET', KEYS[1]) == " OWN " then "
    "  return redis.call('PTTL', KEYS[1]) "
    "end "
    "return -3",

    [S_TTL_SHARED] = TTL_IN("KEYS[3]", MARK),

    [S_TTL_SEM] = TTL_IN("KEYS[7]", SEM),

    /* {exclusive holder, readers, lease left (the longest), last fence,
     *  host, pid, since, semaphore holders, their limit} */
    [S_STATUS] = NOW
    "local cur = false "
    "if redis.call('TYPE', KEYS[1]).ok == 'string' then "
    "  cur = redis.call('GET', KEYS[1]) "
    "end "
    "if cur == " MARK " or cur == " SEM " then cur = false end "
    "local n = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf') "
    "local z = KEYS[3] "
    "local m = redis.call('ZCOUNT', KEYS[7], '(' .. now, '+inf') "
    "if m > 0 then z = KEYS[7] end "
    "local top = redis.call('ZRANGE', z, -1, -1, 'WITHSCORES') "
    "local left = -1 "
    "if cur then left = redis.call('PTTL', KEYS[1]) "
    "elseif n + m > 0 then left = tonumber(top[2]) - now end "
    "local h = redis.call('HMGET', KEYS[4], 'host', 'pid', 'since', 'limit') "
    "return {cur and 1 or 0, n, left, redis.call('GET', KEYS[2]) or '0', "
    "  h[1] or '', h[2] or '0', h[3] or '0', m, tonumber(h[4] or '0')}",

    [S_FORCE] = NOW FN_HANDOFF
    "local n = redis.call('EXISTS', KEYS[1]) "
    "local cur = redis.call('GET', KEYS[1]) "
    "if cur == " MARK " or cur == " SEM " then n = 0 end "
    "n = n + redis.call('ZCARD', KEYS[3]) + redis.call('ZCARD', KEYS[7]) "
    "redis.call('DEL', KEYS[1], KEYS[3], KEYS[4], KEYS[7]) "
    "pass_on(now, true) "
    "return n",

    /* A wait that ends without the lock leaves the queue; a hand-off that
     * crossed its end (the lock or a slot is ours) is passed on at once. */
    [S_LEAVE] = NOW FN_HANDOFF FN_UNJOIN
    "redis.call('ZREM', KEYS[5], ARGV[1]) "
    "redis.call('HDEL', KEYS[6], ARGV[1], 'l:' .. ARGV[1]) "
    "if redis.call('ZCARD', KEYS[5]) == 0 then redis.call('DEL', KEYS[6]) end "
    "if redis.call('ZSCORE', KEYS[7], ARGV[1]) then "
    "  unjoin(KEYS[7], " SEM ", ARGV[1], now) "
    "  pass_on(now, true) "
    "  return 1 "
    "end "
    RELEASE_OWN,
};

int dlock__redis_scripts_init(struct redis_store *rs)
{
    static const char heard[] = HEARD;

    for (int i = 0; i < S_COUNT; i++) {
        const char *src = i < S_LOADED ? lua[i] : dlock__redis_run_lua(i);
        const char *at = strstr(src, heard);
        size_t len = strlen(src), hl = strlen(HEARD_CLUSTER);
        char *v;

        rs->lua[i] = src;
        if (rs->cluster && at != NULL) {
            v = malloc(len - (sizeof(heard) - 1) + hl + 1);
            if (v == NULL)
                return dlock__enomem();
            memcpy(v, src, (size_t)(at - src));
            memcpy(v + (at - src), HEARD_CLUSTER, hl);
            strcpy(v + (at - src) + hl, at + sizeof(heard) - 1);
            rs->lua[i] = rs->lua_buf[i] = v;
        }
        /* Redis names a script by the SHA1 of its text: those not
         * loaded on connect are EVALSHA'd by it all the same. */
        if (i >= S_LOADED)
            dlock__sha1_hex(rs->lua[i], strlen(rs->lua[i]), rs->sha[i]);
    }
    return DLOCK_OK;
}

void dlock__redis_scripts_free(struct redis_store *rs)
{
    for (int i = 0; i < S_COUNT; i++)
        free(rs->lua_buf[i]);
}

/* SCRIPT LOAD answered error r.  A server that does not know SCRIPT
 * echoes its arguments, dlock's Lua source, which says nothing to a
 * user: a Sentinel is the likely one, and is named (a cluster node gets
 * its hint from conn.c); another gets the error without the echo. */
static int load_error(struct redis_store *rs, struct rconn *c,
                      const redisReply *r)
{
    static const char unknown[] = "ERR unknown command 'SCRIPT'";

    if (strncmp(r->str, unknown, sizeof(unknown) - 1) != 0)
        return dlock__redis_reply_error(rs, r, "SCRIPT LOAD");
    if (dlock__redis_role_is(c, "sentinel"))
        return dlock__seterr(DLOCK_ESTORE,
                             "%s is a Redis Sentinel, not a "
                             "data node: use redis-sentinel://HOST:PORT/"
                             "MASTERNAME",
                             rs->url);
    return dlock__seterr(DLOCK_ESTORE,
                         "%s does not know SCRIPT (%s): "
                         "dlock needs Redis >= 6 with Lua scripting",
                         rs->url, unknown + 4);
}

int dlock__redis_load_scripts(struct redis_store *rs, struct rconn *c)
{
    for (int i = 0; i < S_LOADED; i++) {
        redisReply *r = dlock__rconn_command(c, "SCRIPT LOAD %s", rs->lua[i]);
        int rc;

        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
            rc = r && r->type == REDIS_REPLY_ERROR
                     ? load_error(rs, c, r)
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

/* Scripts whose success must reach the replicas (?replicas=). */
static int wants_acks(int s)
{
    return s == S_ACQ || s == S_ACQ_SHARED || s == S_ACQ_SEM || s == S_EXT ||
           s == S_EXT_SHARED || s == S_EXT_SEM;
}

/* An acquire's {1, fence, ...} or an extend's 1. */
static int worked(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer == 1;
    return r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
           r->element[0]->type == REDIS_REPLY_INTEGER &&
           r->element[0]->integer == 1;
}

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
        e->argv[1] = e->rs->lua[e->s];
        e->lens[1] = strlen(e->rs->lua[e->s]);
        rc = dlock__redis_send(e->rs, conn, e->argc, e->argv, e->lens,
                               &e->reply, dead);
    }
    /* ?replicas=: an acquire or a renewal that worked is asked about on
     * the connection that wrote it (WAIT counts that client's writes:
     * on another connection it would say nothing about this one). */
    e->rs->acks = -1;
    if (rc == DLOCK_OK && e->rs->replicas > 0 && wants_acks(e->s) &&
        worked(e->reply))
        e->rs->acks = dlock__redis_wait_acks(e->rs, conn, dead);
    return rc;
}

redisReply *dlock__redis_run_keys(struct redis_store *rs, int s, int nkeys,
                                  const char *const *keys,
                                  const size_t *klen, int nargs,
                                  const char **args, const size_t *alen,
                                  int retry, int *rc)
{
    const char *argv[3 + RUN_KEYS_MAX + RUN_ARGS_MAX];
    size_t lens[3 + RUN_KEYS_MAX + RUN_ARGS_MAX];
    char nk[16];
    struct eval e = {rs, s, 0, argv, lens, NULL};

    if (nkeys > RUN_KEYS_MAX)
        nkeys = RUN_KEYS_MAX;
    if (nargs > RUN_ARGS_MAX)
        nargs = RUN_ARGS_MAX;
    if (nkeys == DLOCK__RKEYS)
        strcpy(nk, RKEYS_STR);
    else
        snprintf(nk, sizeof(nk), "%d", nkeys);
    argv[2] = nk;
    lens[2] = strlen(nk);
    for (int i = 0; i < nkeys; i++) {
        argv[3 + i] = keys[i];
        lens[3 + i] = klen[i];
    }
    for (int i = 0; i < nargs; i++) {
        argv[3 + nkeys + i] = args[i];
        lens[3 + nkeys + i] = alen[i];
    }
    e.argc = 3 + nkeys + nargs;
    *rc = dlock__redis_exec(rs,
                            rs->cluster
                                ? (int)dlock__redis_slot(keys[0], klen[0])
                                : -1,
                            eval_fn, &e, retry);
    if (*rc != DLOCK_OK)
        return NULL;
    if (e.reply->type == REDIS_REPLY_ERROR) {
        *rc = dlock__redis_reply_error(rs, e.reply, "script");
        freeReplyObject(e.reply);
        return NULL;
    }
    return e.reply;
}

redisReply *dlock__redis_run(struct redis_store *rs, int s,
                             const struct dlock__rkeys *k, int nargs,
                             const char **args, const size_t *alen, int retry,
                             int *rc)
{
    _Static_assert(DLOCK__RKEYS <= RUN_KEYS_MAX, "RUN_KEYS_MAX too small");
    return dlock__redis_run_keys(rs, s, DLOCK__RKEYS, k->k, k->klen,
                                 nargs < 6 ? nargs : 6, args, alen, retry,
                                 rc);
}
