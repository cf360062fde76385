/*
 * wait.c - waiting for a lock, one slice at a time (the core's wait loop,
 * src/core/lock.c, sizes the slices and keeps the deadline).
 *
 * A dlock holder publishes on the name's release channel when it lets go,
 * and its key expires at its lease end: a waiter sleeps until one of the
 * two, with no polling.  A foreign holder (its value is not "dlock1:" + a
 * token) never publishes: the waiter listens to the key's keyspace
 * channel when the server sends keyspace events, and polls otherwise.
 *
 * What a wait keeps between slices lives in lk->priv (struct wait): its
 * place among the channel's waiters, and when it must look again even if
 * nothing wakes it.  The first slice subscribes and waits for the
 * server's confirmation before its attempt, so a release between the
 * core's first attempt and the subscription is not missed.  Every later
 * slice is one sleep (until a wake-up, the time to look again, or the end
 * of the slice) and then at most one attempt: none when the slice ran out
 * before anything was due, so long leases cost no attempts.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "redis.h"

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
/* How often the wait for a subscription's confirmation looks at the
 * clock and the connection. */
#define CONFIRM_TICK_MS 100

struct wait {
    struct waiter w;
    struct chan *c;
    struct dlock__rkeys k;
    int64_t look_at; /* monotonic ms: attempt by then, woken or not */
    int tick;        /* look_at is a poll tick: the sleep ends there (else
                      * it is the holder's lease end, and the core ends
                      * the slice just after it) */
    int broken;      /* rs->sub_broken when look_at was chosen */
    int ks_wait;     /* look as soon as the keyspace SUBSCRIBE is answered */
    unsigned backoffs, polls;
};

static void cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu,
                            int64_t when_ms)
{
    struct timespec ts = {(time_t)(when_ms / 1000),
                          (long)(when_ms % 1000) * 1000000L};

    pthread_cond_timedwait(cv, mu, &ts);
}

/* Does the server send the keyspace events that show a foreign holder's
 * release: K (keyspace channels) with g (DEL, UNLINK; "A" includes g)?
 * Asked with CONFIG GET, which an ACL or a managed service may refuse:
 * then no, and waiters poll.  Never switched on from here: CONFIG SET is
 * often denied and changes the whole server's behaviour.  The answer is
 * trusted for KS_RECHECK_MS. */
static int ks_usable(struct redis_store *rs)
{
    static const char *const argv[] = {"CONFIG", "GET",
                                       "notify-keyspace-events"};
    static const size_t lens[] = {6, 3, 22};
    int on;

    pthread_mutex_lock(&rs->mu);
    if (!rs->ks_known || dlock__now_ms() - rs->ks_checked >= KS_RECHECK_MS) {
        redisReply *r = NULL;

        rs->ks_on = 0;
        (void)dlock__redis_cmd(rs, 1, &r, 3, (const char **)argv, lens);
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

/* The n-th poll interval on a foreign holder: FOREIGN_POLL_MIN_MS
 * doubling up to FOREIGN_POLL_MAX_MS, less up to a quarter of jitter. */
static int64_t foreign_poll_ms(unsigned n)
{
    int64_t step = FOREIGN_POLL_MAX_MS;

    if (n < 8 && ((int64_t)FOREIGN_POLL_MIN_MS << n) < FOREIGN_POLL_MAX_MS)
        step = (int64_t)FOREIGN_POLL_MIN_MS << n;
    return step - (int64_t)(dlock__rand32() % (uint32_t)(step / 4 + 1));
}

static void wait_free(struct redis_store *rs, struct dlock_lock *lk)
{
    struct wait *wt = lk->priv;

    pthread_mutex_lock(&rs->smu);
    dlock__redis_chan_leave(rs, wt->c, &wt->w);
    pthread_mutex_unlock(&rs->smu);
    pthread_cond_destroy(&wt->w.cv);
    free(wt->k.buf);
    free(wt);
    lk->priv = NULL;
}

/* The first slice: join the name's channel and wait (until `end` at the
 * latest) for the server to confirm the subscription. */
static int wait_start(struct redis_store *rs, struct dlock_lock *lk,
                      int64_t end)
{
    struct wait *wt = calloc(1, sizeof(*wt));
    pthread_condattr_t ca;
    int rc, subscribed_ok;

    if (wt == NULL)
        return dlock__enomem();
    rc = dlock__redis_keys_of(rs, lk->name, lk->name_len, &wt->k);
    if (rc != DLOCK_OK) {
        free(wt);
        return rc;
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wt->w.cv, &ca);
    pthread_condattr_destroy(&ca);

    pthread_mutex_lock(&rs->smu);
    subscribed_ok = dlock__redis_sub_ensure(rs) == DLOCK_OK && !rs->sub_denied;
    wt->c = dlock__redis_chan_join(rs, &wt->k, &wt->w);
    if (wt->c == NULL) {
        pthread_mutex_unlock(&rs->smu);
        pthread_cond_destroy(&wt->w.cv);
        free(wt->k.buf);
        free(wt);
        return dlock__enomem();
    }
    lk->priv = wt;
    /* Try only once the subscription is confirmed: a release between the
     * last attempt and the subscription would otherwise go unheard. */
    while (subscribed_ok && !wt->c->subscribed && !rs->sub_broken &&
           !rs->sub_denied && dlock__now_ms() < end) {
        int64_t until = dlock__now_ms() + CONFIRM_TICK_MS;

        cond_wait_until(&wt->w.cv, &rs->smu, until < end ? until : end);
    }
    pthread_mutex_unlock(&rs->smu);
    return DLOCK_OK;
}

/* Sleep until a wake-up (a release message, a keyspace event, the
 * subscriber connection breaking or a keyspace SUBSCRIBE answered), the
 * time to look again, or `end`.  1: worth an attempt now. */
static int sleep_on(struct redis_store *rs, struct wait *wt, int64_t end)
{
    struct chan *c = wt->c;
    int64_t wake = wt->tick && wt->look_at < end ? wt->look_at : end;
    int woken, changed;

    pthread_mutex_lock(&rs->smu);
    while (
        !wt->w.woken && dlock__now_ms() < wake &&
        rs->sub_broken == wt->broken &&
        !(wt->ks_wait && (c->ks_subscribed || rs->ks_denied || rs->sub_denied)))
        cond_wait_until(&wt->w.cv, &rs->smu, wake);
    woken = wt->w.woken;
    wt->w.woken = 0;
    changed =
        rs->sub_broken != wt->broken ||
        (wt->ks_wait && (c->ks_subscribed || rs->ks_denied || rs->sub_denied));
    pthread_mutex_unlock(&rs->smu);
    return woken || changed || dlock__now_ms() >= wt->look_at;
}

/* After a BUSY attempt: when to look again, and by what (wt->tick).
 * Without a working subscription, back off (and subscribe again); on a
 * dlock holder, its lease end; on a foreign one, its keyspace events or
 * a poll, never past its lease end. */
static void plan(struct redis_store *rs, struct wait *wt, int64_t retry,
                 int foreign)
{
    struct chan *c = wt->c;
    int64_t now, look;
    int ks = 0;

    if (foreign)
        ks = ks_usable(rs);
    else
        wt->polls = 0;
    now = dlock__now_ms();
    wt->ks_wait = 0;
    wt->tick = 1;
    pthread_mutex_lock(&rs->smu);
    if (!c->subscribed || rs->sub_broken || rs->sub_denied) {
        look = now + dlock__backoff_ms(wt->backoffs++, dlock__rand32());
        if (!rs->sub_denied && dlock__redis_sub_ensure(rs) == DLOCK_OK &&
            !c->subscribed)
            (void)dlock__redis_sub_cmd(rs, "SUBSCRIBE", c->name, c->len, P_SUB);
    } else if (!foreign) {
        /* A dlock holder publishes when it lets go, and its key expires
         * at retry: no polling. */
        wt->tick = retry < 0;
        look = now + (retry >= 0 ? retry : SAFETY_POLL_MS);
    } else {
        /* Another client does not publish.  With keyspace events the
         * key's "del" wakes us; until that subscription is confirmed,
         * wait for the confirmation only and look again (a DEL in
         * between would go unheard).  Without them, poll (50..250 ms). */
        if (ks)
            dlock__redis_chan_want_ks(rs, c, &wt->k);
        if (ks && c->ks != NULL && !rs->ks_denied) {
            wt->ks_wait = !c->ks_subscribed;
            look = now + SAFETY_POLL_MS;
        } else {
            look = now + foreign_poll_ms(wt->polls++);
        }
        if (retry >= 0 && look > now + retry) {
            look = now + retry;
            wt->tick = 0;
        }
    }
    /* The subscriber connection breaking (the server going away, often)
     * ends the sleep too: one attempt tells which. */
    wt->broken = rs->sub_broken;
    pthread_mutex_unlock(&rs->smu);
    wt->look_at = look;
}

int dlock__redis_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                            int64_t slice_ms, int64_t *retry_ms)
{
    struct redis_store *rs = (struct redis_store *)s;
    int64_t end = dlock__now_ms() + slice_ms, sent, retry = -1;
    struct wait *wt;
    int rc, foreign = 1;

    if (lk->priv == NULL) {
        rc = wait_start(rs, lk, end);
        if (rc != DLOCK_OK)
            return rc;
    } else if (!sleep_on(rs, lk->priv, end)) {
        int64_t left = ((struct wait *)lk->priv)->look_at - dlock__now_ms();

        *retry_ms = left > 0 ? left : 0;
        return DLOCK_BUSY;
    }
    wt = lk->priv;
    sent = dlock__now_ms();
    rc = dlock__redis_attempt(rs, lk, &retry, &foreign);
    if (rc == DLOCK_OK) {
        /* The lease started when the winning script was sent, at the
         * earliest. */
        if (sent + lk->ttl_ms > lk->lease_end)
            lk->lease_end = sent + lk->ttl_ms;
        wait_free(rs, lk);
        return DLOCK_OK;
    }
    if (rc != DLOCK_BUSY)
        return rc; /* the core forgets the wait */
    plan(rs, wt, retry, foreign);
    *retry_ms = wt->look_at - dlock__now_ms();
    if (*retry_ms < 0)
        *retry_ms = 0;
    return DLOCK_BUSY;
}

/* A wait that ended without the lock: leave the channel. */
void dlock__redis_forget(struct dlock_store *s, struct dlock_lock *lk)
{
    if (lk->priv != NULL)
        wait_free((struct redis_store *)s, lk);
}
