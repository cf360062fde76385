/*
 * wait.c - waiting for a lock, one slice at a time (the core's wait loop,
 * src/core/lock.c, sizes the slices and keeps the deadline).
 *
 * A dlock holder publishes on the name's release channel when it lets go,
 * and its key expires at its lease end: a waiter sleeps until one of the
 * two, with no polling.  A hand-off to another waiter publishes the new
 * holder's lease there too, which brings the lease end a waiter sleeps
 * until forward when it is sooner (sleep_on).  A foreign holder (its
 * value is not "dlock1:" + a token) never publishes: the waiter listens
 * to the key's keyspace channel when the server sends keyspace events,
 * and polls otherwise.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "locks.h"

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
    pthread_cond_t cv;
    struct waiter w;  /* on the name's release channel */
    struct waiter ow; /* on its own channel: hand-offs to it */
    struct chan *c, *oc;
    struct dlock__rkeys k;
    long long place; /* in the queue, per the last attempt (0: none) */
    int queued;      /* an attempt asked to queue: leave it at the end */
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

/* The acquire's cancel fired (cancel.c's thread): wake the waiter, whose
 * sleep ends on dlock__cancelled(); the core then ends the wait and
 * forget() leaves the queue. */
struct wake_arg {
    struct redis_store *rs;
    pthread_cond_t *cv;
};

static void wake_cancelled(void *arg)
{
    struct wake_arg *a = arg;

    pthread_mutex_lock(&a->rs->smu);
    pthread_cond_signal(a->cv);
    pthread_mutex_unlock(&a->rs->smu);
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

    /* A cluster node sends keyspace events only for its own keys, to its
     * own subscribers: the one subscriber connection would miss most. */
    if (rs->cluster)
        return 0;

    pthread_mutex_lock(&rs->mu);
    if (!rs->ks_known || dlock__now_ms() - rs->ks_checked >= KS_RECHECK_MS) {
        redisReply *r = NULL;

        rs->ks_on = 0;
        (void)dlock__redis_cmd(rs, -1, 1, &r, 3, (const char **)argv, lens);
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
    if (wt->c != NULL)
        dlock__redis_chan_leave(rs, wt->c, &wt->w);
    if (wt->oc != NULL)
        dlock__redis_chan_leave(rs, wt->oc, &wt->ow);
    pthread_mutex_unlock(&rs->smu);
    pthread_cond_destroy(&wt->cv);
    free(wt->k.buf);
    free(wt);
    lk->priv = NULL;
}

/* The handle's own channel for the name: the lock key, 0xff, "w" and the
 * handle's id (the scripts' hand-off publishes "g" + the waiter's token
 * there).  NULL: out of memory. */
static char *own_channel(const struct redis_store *rs, const struct wait *wt,
                         size_t *len)
{
    size_t hl = strlen(rs->hid);
    char *ch = malloc(wt->k.klen[0] + 2 + hl + 1);

    if (ch == NULL)
        return NULL;
    memcpy(ch, wt->k.k[0], wt->k.klen[0]);
    memcpy(ch + wt->k.klen[0],
           "\xff"
           "w",
           2);
    memcpy(ch + wt->k.klen[0] + 2, rs->hid, hl + 1);
    *len = wt->k.klen[0] + 2 + hl;
    return ch;
}

/* The first slice: join the name's channel and the waiter's own (with
 * ?fair=0 only the first), and wait (until `end` at the latest) for the
 * server to confirm the subscriptions. */
static int wait_start(struct redis_store *rs, struct dlock_lock *lk,
                      int64_t end)
{
    struct wait *wt = calloc(1, sizeof(*wt));
    pthread_condattr_t ca;
    char *own = NULL;
    size_t own_len = 0;
    int rc, subscribed_ok;

    if (wt == NULL)
        return dlock__enomem();
    rc = dlock__redis_keys_of(rs, lk->name, lk->name_len, &wt->k);
    if (rc != DLOCK_OK) {
        free(wt);
        return rc;
    }
    if (rs->fair && !lk->shared &&
        (own = own_channel(rs, wt, &own_len)) == NULL) {
        free(wt->k.buf);
        free(wt);
        return dlock__enomem();
    }
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wt->cv, &ca);
    pthread_condattr_destroy(&ca);
    wt->w.cv = wt->ow.cv = &wt->cv;
    wt->ow.token = lk->token;
    lk->priv = wt;

    struct wake_arg wa = {rs, &wt->cv};
    uint64_t watch = dlock__cancel_watch(wake_cancelled, &wa);

    pthread_mutex_lock(&rs->smu);
    subscribed_ok = dlock__redis_sub_ensure(rs) == DLOCK_OK && !rs->sub_denied;
    wt->c = dlock__redis_chan_join(rs, wt->k.chan, wt->k.chan_len, 0, &wt->w);
    if (wt->c != NULL && own != NULL)
        wt->oc = dlock__redis_chan_join(rs, own, own_len, 1, &wt->ow);
    free(own);
    if (wt->c == NULL || (own != NULL && wt->oc == NULL)) {
        pthread_mutex_unlock(&rs->smu);
        dlock__cancel_unwatch(watch);
        wait_free(rs, lk);
        return dlock__enomem();
    }
    /* Try only once the subscriptions are confirmed: a release between
     * the last attempt and the subscription would otherwise go unheard. */
    while (subscribed_ok &&
           (!wt->c->subscribed || (wt->oc != NULL && !wt->oc->subscribed)) &&
           !rs->sub_broken && !rs->sub_denied && dlock__now_ms() < end &&
           !dlock__cancelled()) {
        int64_t until = dlock__now_ms() + CONFIRM_TICK_MS;

        cond_wait_until(&wt->cv, &rs->smu, until < end ? until : end);
    }
    pthread_mutex_unlock(&rs->smu);
    dlock__cancel_unwatch(watch);
    return DLOCK_OK;
}

/* Sleep until a wake-up (a release message, a keyspace event, the
 * subscriber connection breaking or a keyspace SUBSCRIBE answered), the
 * time to look again, or `end`.  1: worth an attempt now.
 *
 * A hand-off to another waiter (w.lease_at) moves the time to look again
 * to the new holder's lease end when that is sooner, and ends the slice
 * without an attempt: the core sizes the next one from it. */
static int sleep_on(struct redis_store *rs, struct wait *wt, int64_t end)
{
    struct chan *c = wt->c;
    int64_t wake = wt->tick && wt->look_at < end ? wt->look_at : end;
    int woken, changed;
    struct wake_arg wa = {rs, &wt->cv};
    uint64_t watch = dlock__cancel_watch(wake_cancelled, &wa);

    pthread_mutex_lock(&rs->smu);
    for (;;) {
        int64_t at;

        while (!wt->w.woken && !wt->ow.woken && wt->w.lease_at == 0 &&
               !dlock__cancelled() && dlock__now_ms() < wake &&
               rs->sub_broken == wt->broken &&
               !(wt->ks_wait &&
                 (c->ks_subscribed || rs->ks_denied || rs->sub_denied)))
            cond_wait_until(&wt->cv, &rs->smu, wake);
        at = wt->w.lease_at;
        wt->w.lease_at = 0;
        if (at == 0)
            break;
        if (at < wt->look_at) {
            wt->look_at = at;
            wt->tick = 0; /* a lease end: the core adds its margin */
            break;
        }
    }
    woken = wt->w.woken || wt->ow.woken;
    wt->w.woken = wt->ow.woken = 0;
    changed =
        rs->sub_broken != wt->broken ||
        (wt->ks_wait && (c->ks_subscribed || rs->ks_denied || rs->sub_denied));
    pthread_mutex_unlock(&rs->smu);
    dlock__cancel_unwatch(watch);
    if (dlock__cancelled())
        return 0; /* no attempt: the core ends the wait */
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
    if (!c->subscribed || (wt->oc != NULL && !wt->oc->subscribed) ||
        rs->sub_broken || rs->sub_denied) {
        look = now + dlock__backoff_ms(wt->backoffs++, dlock__rand32());
        if (!rs->sub_denied && dlock__redis_sub_ensure(rs) == DLOCK_OK &&
            !c->subscribed)
            (void)dlock__redis_sub_cmd(rs, "SUBSCRIBE", c->name, c->len, P_SUB);
        if (!rs->sub_denied && rs->sc != NULL && wt->oc != NULL &&
            !wt->oc->subscribed)
            (void)dlock__redis_sub_cmd(rs, "SUBSCRIBE", wt->oc->name,
                                       wt->oc->len, P_SUB);
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
        } else if (wt->place > 1) {
            /* Queued behind another: the head polls, and hands the lock
             * on; this one only looks now and then, in case the head is
             * gone (its entry runs out). */
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

/* Queue (Q_WAIT + the handle's id, into buf) only where a hand-off can
 * reach us: our own channel is subscribed.  Else the name's channel and
 * the timers do, as without ?fair. */
static const char *queue_mode(struct redis_store *rs, struct wait *wt,
                              char buf[24])
{
    int ok;

    if (wt->oc == NULL)
        return Q_TRY;
    pthread_mutex_lock(&rs->smu);
    ok = wt->oc->subscribed && !rs->sub_broken && !rs->sub_denied;
    pthread_mutex_unlock(&rs->smu);
    if (!ok)
        return Q_TRY;
    snprintf(buf, 24, "%s%s", Q_WAIT, rs->hid);
    return buf;
}

int dlock__redis_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                            int64_t slice_ms, int64_t *retry_ms)
{
    struct redis_store *rs = (struct redis_store *)s;
    int64_t end = dlock__now_ms() + slice_ms, sent, retry = -1;
    struct wait *wt;
    const char *q;
    char qbuf[24];
    uint64_t epoch = 0;
    int rc, foreign = 1;

    if (lk->priv == NULL) {
        rc = wait_start(rs, lk, end);
        if (rc != DLOCK_OK)
            return rc;
        if (dlock__cancelled())
            return DLOCK_BUSY; /* no attempt: the core ends the wait */
    } else if (!sleep_on(rs, lk->priv, end)) {
        int64_t left = ((struct wait *)lk->priv)->look_at - dlock__now_ms();

        *retry_ms = left > 0 ? left : 0;
        return DLOCK_BUSY;
    }
    wt = lk->priv;
    /* Woken by a hand-off message or not, the attempt tells: a message
     * proves nothing (sub.c), and a lock handed to us is ours in this one
     * script (it sees our token, restarts the lease and answers the
     * fence the hand-off drew). */
    q = queue_mode(rs, wt, qbuf);
    sent = dlock__now_ms();
    rc = dlock__redis_attempt(rs, lk, q, &retry, &foreign, &wt->place, &epoch);
    if (rc == DLOCK_OK) {
        /* The lease started when the winning script was sent, at the
         * earliest. */
        if (sent + lk->ttl_ms > lk->lease_end)
            lk->lease_end = sent + lk->ttl_ms;
        wait_free(rs, lk);
        dlock__redis_held(lk, epoch);
        return DLOCK_OK;
    }
    if (rc != DLOCK_BUSY)
        return rc; /* the core forgets the wait */
    wt->queued |= q[0] == Q_WAIT[0];
    plan(rs, wt, retry, foreign);
    *retry_ms = wt->look_at - dlock__now_ms();
    if (*retry_ms < 0)
        *retry_ms = 0;
    return DLOCK_BUSY;
}

/* A wait that ended without the lock: leave the queue (and pass on a
 * hand-off that crossed the end of the wait), then the channels. */
int dlock__redis_forget(struct dlock_store *s, struct dlock_lock *lk)
{
    struct redis_store *rs = (struct redis_store *)s;
    struct wait *wt = lk->priv;
    int rc = DLOCK_OK;

    if (wt == NULL || dlock__redis_is_held_tag(wt)) {
        lk->priv = NULL; /* a held lock's epoch: nothing to free */
        return DLOCK_OK;
    }
    if (wt->queued)
        rc = dlock__redis_leave(rs, lk);
    if (rc != DLOCK_OK && wt->oc != NULL) {
        /* Still queued, maybe: a hand-off must not find our channel
         * listening once we are gone (the entry then runs out). */
        pthread_mutex_lock(&rs->smu);
        wt->oc->keep = 0;
        pthread_mutex_unlock(&rs->smu);
    }
    wait_free(rs, lk);
    return rc;
}
