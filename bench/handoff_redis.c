/*
 * handoff_redis.c - Redis's hand-off floor (handoff.h), with bare
 * hiredis.  Each contender has two connections, opened outside the clock:
 * one for commands (both scripts loaded there) and one SUBSCRIBEd to a
 * channel of its own.
 *
 * The take is one script: SET NX PX of a fresh owner token and, when that
 * worked, INCR of the fence counter; when it did not, the contender joins
 * the name's queue (RPUSH of its id).  The releaser's one request is a
 * script too: compare-and-delete of its owner token, LPOP of the next
 * waiter and a PUBLISH on that waiter's channel (the next one if nobody
 * listens there: a waiter that died).  The woken waiter takes the lock
 * with its own take, never on the message's word (R1); losing it (another
 * came in between) queues it again.  A lease the holder let run out
 * publishes nothing, so a waiter gives up reading after the lease and
 * tries again.  FIFO, one waiter woken per release, three requests per
 * contended cycle: the release, the woken waiter's take, and the take
 * that found the lock held and queued.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "bench.h"
#include "handoff.h"

#define FLOOR_TTL_MS 30000

/* KEYS: lock, fence, queue; ARGV: token, ttl ms, the waiter's id. */
static const char take_lua[] =
    "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
    "return redis.call('INCR', KEYS[2]) end "
    "redis.call('RPUSH', KEYS[3], ARGV[3]) return 0";
/* KEYS: lock, queue; ARGV: token. */
static const char give_lua[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
    "redis.call('DEL', KEYS[1]) "
    "local w = redis.call('LPOP', KEYS[2]) "
    "while w do "
    "if redis.call('PUBLISH', KEYS[1] .. '\\255w' .. w, 'g') > 0 then "
    "break end "
    "w = redis.call('LPOP', KEYS[2]) end "
    "return 1";

struct redis_floor {
    struct bench_noop *cmd, *sub;
    redisContext *c, *s;
    char key[160], fence[170], queue[170], id[24], take[41], give[41], tok[40];
    unsigned long long n;
    long long fenced;
};

static int load(redisContext *c, const char *lua, char *sha)
{
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", lua);
    int ok = r != NULL && r->type == REDIS_REPLY_STRING && r->len == 40;

    if (ok) {
        memcpy(sha, r->str, 40);
        sha[40] = '\0';
    } else {
        fprintf(stderr, "dlock-bench: hand-off floor: SCRIPT LOAD: %s\n",
                r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
    }
    freeReplyObject(r);
    return ok ? 0 : -1;
}

static void rf_close(void *p)
{
    struct redis_floor *f = p;

    bench_noop_close(f->cmd);
    bench_noop_close(f->sub);
    free(f);
}

static void *rf_open(const char *url, const char *name)
{
    struct redis_floor *f = calloc(1, sizeof(*f));
    redisReply *r;
    char chan[200];

    if (f == NULL)
        return NULL;
    if (bench_noop_open(&f->cmd, url) != 0 ||
        bench_noop_open(&f->sub, url) != 0 || bench_noop_kind(f->cmd) != 'r') {
        rf_close(f);
        return NULL;
    }
    f->c = bench_noop_conn(f->cmd);
    f->s = bench_noop_conn(f->sub);
    snprintf(f->key, sizeof(f->key), "{%s}/floor", name);
    snprintf(f->fence, sizeof(f->fence), "%s/fence", f->key);
    snprintf(f->queue, sizeof(f->queue), "%s/queue", f->key);
    snprintf(f->id, sizeof(f->id), "%d", (int)getpid() & 0x3fffffff);
    snprintf(chan, sizeof(chan), "%s\xffw%s", f->key, f->id);
    if (load(f->c, take_lua, f->take) != 0 ||
        load(f->c, give_lua, f->give) != 0) {
        rf_close(f);
        return NULL;
    }
    /* Subscribed, and confirmed, before the clock starts. */
    r = redisCommand(f->s, "SUBSCRIBE %s", chan);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
        fprintf(stderr, "dlock-bench: hand-off floor: SUBSCRIBE failed\n");
        freeReplyObject(r);
        rf_close(f);
        return NULL;
    }
    freeReplyObject(r);
    return f;
}

/* One take: 1 held, 0 busy, -1 an error. */
static int take(struct redis_floor *f)
{
    redisReply *r;
    int rc;

    snprintf(f->tok, sizeof(f->tok), "%08x%08llx%016llx", (unsigned)getpid(),
             f->n++, (unsigned long long)random());
    r = redisCommand(f->c, "EVALSHA %s 3 %s %s %s %s %d %s", f->take, f->key,
                     f->fence, f->queue, f->tok, FLOOR_TTL_MS, f->id);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) {
        fprintf(stderr, "dlock-bench: hand-off floor: take: %s\n",
                r && r->type == REDIS_REPLY_ERROR ? r->str : f->c->errstr);
        freeReplyObject(r);
        return -1;
    }
    rc = r->integer > 0;
    if (rc)
        f->fenced = r->integer;
    freeReplyObject(r);
    return rc;
}

/* Wait for one message on the subscribed connection, up to the lease
 * (a holder that let its lease run out publishes nothing): 0 woken or
 * timed out, -1 an error. */
static int heard(struct redis_floor *f)
{
    void *r = NULL;

    if (redisGetReplyFromReader(f->s, &r) != REDIS_OK)
        return -1;
    if (r == NULL) {
        struct pollfd p = {f->s->fd, POLLIN, 0};
        int n = poll(&p, 1, FLOOR_TTL_MS);

        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        if (redisBufferRead(f->s) != REDIS_OK ||
            redisGetReplyFromReader(f->s, &r) != REDIS_OK)
            return -1;
    }
    freeReplyObject(r); /* what it says is never the grant */
    return 0;
}

static int rf_acquire(void *p)
{
    struct redis_floor *f = p;

    for (;;) {
        int rc = take(f);

        if (rc != 0)
            return rc > 0 ? 0 : -1;
        if (heard(f) != 0) {
            fprintf(stderr, "dlock-bench: hand-off floor: subscriber lost\n");
            return -1;
        }
    }
}

static int rf_release(void *p)
{
    struct redis_floor *f = p;
    redisReply *r = redisCommand(f->c, "EVALSHA %s 2 %s %s %s", f->give, f->key,
                                 f->queue, f->tok);
    int ok = r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 1;

    if (!ok)
        fprintf(stderr, "dlock-bench: hand-off floor: release: %s\n",
                r == NULL                      ? f->c->errstr
                : r->type == REDIS_REPLY_ERROR ? r->str
                                               : "not the holder");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

const struct handoff_ops handoff_floor_redis = {
    "compare-and-delete + LPOP + PUBLISH to the next waiter in one script; "
    "the woken waiter takes with SET NX PX + INCR (else RPUSH) in one",
    NULL,
    rf_open,
    rf_acquire,
    rf_release,
    rf_close,
    NULL}; /* the keys are the run's own */
