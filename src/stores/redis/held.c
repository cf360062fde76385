/*
 * held.c - a lock on the Redis store, below the ops table: its keys, the
 * per-lock scripts run with their arguments, the epoch a lock was taken
 * in (a failover since makes it LOST), one acquire attempt, leaving the
 * queue, and extend, ttl_left and release (store.c's ops; renew.c,
 * wait.c and runs.c call the parts they need).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locks.h"

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
    if (r->element[0]->integer == 1 && r->element[1]->integer <= 0) {
        /* Ours, by the lock key or the zset, but no fence: the info hash
         * (or its f:<token> field) is gone, which the scripts never do
         * (maxmemory evicting it alone, or a hand's edit).  A holder
         * without a fence cannot be fenced: let go, and say so. */
        freeReplyObject(r);
        freeReplyObject(lock_script(rs, dlock__redis_script(lk, S_REL), lk, 0,
                                    2, NULL, 0, &rc, NULL));
        return dlock__seterr(DLOCK_ESTORE,
                             "%s granted '%s' without a fencing token (its "
                             "info hash is gone: evicted under maxmemory?)",
                             rs->url, lk->name);
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

static int lost(const struct dlock_lock *lk)
{
    return dlock__lost(lk, "its lease ran out, it was broken, or the "
                           "server lost it");
}

/* A script's integer answer in *out (frees r); r NULL: its failure rc. */
int dlock__redis_int_reply(struct redis_store *rs, redisReply *r, int rc,
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

    rc = dlock__redis_int_reply(rs, r, rc, out);
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

int dlock__redis_extend(struct dlock_store *s, struct dlock_lock *lk,
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

int dlock__redis_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
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

int dlock__redis_release(struct dlock_store *s, struct dlock_lock *lk)
{
    long long v = 0;
    int rc = int_script((struct redis_store *)s, dlock__redis_script(lk, S_REL),
                        lk, 0, 0, &v);

    lk->priv = NULL;
    if (rc != DLOCK_OK)
        return rc;
    return v == 1 ? DLOCK_OK : lost(lk);
}
