/*
 * renew.c - the renew thread: renews the auto-renewed leases of this
 * process when they are due, in batches.
 *
 * The locks due now (and those due soon after, which join early) are
 * grouped by store, and each group is one extend_many() call, one round
 * trip, while the thread holds the mu of every lock in it.  It takes
 * those with pthread_mutex_trylock() only: a user thread may hold one
 * lock's mu and wait for another's (a callback, a program's own order),
 * and the renew thread must never be the other half of that.  A lock
 * whose mu is busy is simply looked at again a few milliseconds later.
 * on_lost callbacks run after every mu is dropped.
 */
#include <pthread.h>
#include <stdint.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "clock.h"
#include "iobound.h"
#include "regstate.h"

/* After a renewal fails for a transient reason, retry this soon (bounded
 * by what is left of the lease). */
#define RENEW_RETRY_MS 250

/* A lock due for renewal whose mu a user thread holds is looked at again
 * after this (at the latest at its lease end). */
#define RENEW_BUSY_MS 5

/* The renew thread takes at most this many due locks per pass (it loops
 * at once for the rest). */
#define RENEW_PASS_MAX 1024

/* A lock joins a batch up to a tenth of its lease before its renewal time
 * (renewing at ttl/3 - ttl/10 instead of ttl/3 leaves more lease, never
 * less).  Renewed together, locks stay together: after a few rounds the
 * locks of a busy process renew in a few large batches, not many small. */
#define RENEW_EARLY_DIV 10

/* Leases renewed by the renew thread so far (for dlock-bench). */
static uint64_t renewals;

/* One due lock of a pass: what became of it. */
struct due {
    struct dlock__held *lk;
    int64_t next;     /* renew again then; 0: not at all */
    dlock_lost_cb cb; /* to run once every mu is dropped */
    int busy;         /* a user thread had its mu: due at next, exactly */
    int done;
};

/* The outcome of a renewal sent at t0 that answered rc at now (caller
 * holds lk->mu), as one lock's extend has always been handled. */
static void renewed(struct due *d, int rc, int64_t t0, int64_t now)
{
    struct dlock__held *lk = d->lk;

    if (rc == DLOCK_OK && !dlock__lapsed(lk, now)) {
        /* The lease counts from when the request left, not when the
         * answer came: the store may have started it any time between. */
        dlock__set_lease_end(lk, t0, lk->view.ttl_ms);
        d->next = t0 + lk->view.ttl_ms / 3;
        __atomic_add_fetch(&renewals, 1, __ATOMIC_RELAXED);
    } else if (rc == DLOCK_OK || rc == DLOCK_LOST || dlock__lapsed(lk, now)) {
        /* An answer that came after the lease ended here is too late:
         * the holder has been told (or is being told) it lost the lock. */
        d->cb = dlock__mark_lost(lk);
    } else {
        /* Transient (store unreachable): try again soon, while the lease
         * we know of still runs.  When it has run out the lock is lost. */
        int64_t left = dlock__lease_end_of(lk) - now;

        d->next = now + (left / 4 < RENEW_RETRY_MS ? left / 4 : RENEW_RETRY_MS);
        if (d->next <= now)
            d->next = now + 1;
    }
}

/* Renew d[0..n), all of one store, in one extend_many() call (or one
 * extend() when n is 1 and the store has no extend_many). */
static void renew_batch(struct due **d, size_t n)
{
    struct dlock_store *s = d[0]->lk->store;
    struct dlock_lock *locks[DLOCK_RENEW_BATCH];
    struct due *mine[DLOCK_RENEW_BATCH];
    int rcs[DLOCK_RENEW_BATCH];
    size_t k = 0;
    int64_t t0 = dlock__now_ms(), now;
    int rc;

    for (size_t i = 0; i < n; i++) {
        struct dlock__held *lk = d[i]->lk;

        if (pthread_mutex_trylock(&lk->mu) != 0) {
            /* A user thread is in a call on it: look again shortly (not
             * at once, even if its lease has ended meanwhile: the thread
             * would only spin on the same mu). */
            d[i]->next = t0 + RENEW_BUSY_MS;
            d[i]->busy = 1;
            continue;
        }
        if (DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD) {
            pthread_mutex_unlock(&lk->mu);
            continue;
        }
        if (dlock__lapsed(lk, t0)) {
            /* Renewal fell behind (a stalled store): too late to extend,
             * whatever the store would answer. */
            d[i]->cb = dlock__mark_lost(lk);
            pthread_mutex_unlock(&lk->mu);
            continue;
        }
        locks[k] = &lk->view;
        mine[k++] = d[i];
    }
    if (k == 0)
        return;
    /* Past the last of their leases, renewing them is of no use. */
    for (size_t i = 0; i < k; i++)
        if (dlock__lease_end_of(mine[i]->lk) > dlock__io_deadline)
            dlock__io_deadline = dlock__lease_end_of(mine[i]->lk);
    if (s->ops->extend_many != NULL) {
        rc = s->ops->extend_many(s, locks, k, rcs);
        if (rc != DLOCK_OK)
            for (size_t i = 0; i < k; i++)
                rcs[i] = rc;
    } else {
        for (size_t i = 0; i < k; i++)
            rcs[i] = s->ops->extend(s, locks[i], locks[i]->ttl_ms);
    }
    dlock__io_deadline = 0;
    now = dlock__now_ms();
    for (size_t i = 0; i < k; i++) {
        renewed(mine[i], rcs[i], t0, now);
        pthread_mutex_unlock(&mine[i]->lk->mu);
    }
}

/* Renew the n due locks of a pass (the thread holds a ref on each),
 * store by store, in batches of at most DLOCK_RENEW_BATCH (one lock at a
 * time for a store without extend_many, so no mu is held for longer than
 * one round trip). */
static void renew_pass(struct due *d, size_t n)
{
    struct due *batch[DLOCK_RENEW_BATCH];

    for (size_t i = 0; i < n; i++) {
        struct dlock_store *s = d[i].lk->store;
        size_t max = s->ops->extend_many != NULL ? DLOCK_RENEW_BATCH : 1;
        size_t m = 0;

        if (d[i].done)
            continue;
        for (size_t j = i; j < n && m < max; j++) {
            if (d[j].done || d[j].lk->store != s)
                continue;
            d[j].done = 1;
            batch[m++] = &d[j];
        }
        renew_batch(batch, m);
    }
}

void *dlock__renew_main(void *arg)
{
    /* On the stack (32 KiB), not allocated: a failure would have nobody
     * to tell. */
    struct due d[RENEW_PASS_MAX];
    struct dlock__heap *h = &dlock__heaps[H_RENEW];

    (void)arg;
#ifdef __linux__
    /* Named, so a profiler or dlock-bench can find its CPU time. */
    (void)prctl(PR_SET_NAME, "dlock-renew", 0, 0, 0);
#endif
    dlock__thread_begin(H_RENEW);
    while (!dlock__thr_stop) {
        int64_t now = dlock__now_ms();
        size_t n = 0;

        if (h->len == 0) {
            dlock__heap_sleep(h, INT64_MAX);
            continue;
        }
        if (h->v[0]->due[H_RENEW] > now) {
            dlock__heap_sleep(h, h->v[0]->due[H_RENEW]);
            continue;
        }
        /* Due at its renewal time, and at the latest when its lease ends.
         * Those due a little later come along. */
        while (h->len > 0 && n < RENEW_PASS_MAX) {
            struct dlock__held *lk = h->v[0];

            /* ttl_ms: dlock_extend() writes it under mu only. */
            if (lk->due[H_RENEW] >
                now + __atomic_load_n(&lk->view.ttl_ms, __ATOMIC_RELAXED) /
                          RENEW_EARLY_DIV)
                break;
            /* Out of the heap (not picked again) until renewed. */
            dlock__heap_remove(h, lk);
            lk->refs++;
            d[n].lk = lk;
            d[n].next = 0;
            d[n].cb = NULL;
            d[n].busy = 0;
            d[n++].done = 0;
        }
        pthread_mutex_unlock(&dlock__reg_mu);
        renew_pass(d, n);
        pthread_mutex_lock(&dlock__reg_mu);
        for (size_t i = 0; i < n; i++) {
            if (d[i].next == 0)
                continue;
            if (d[i].busy) {
                dlock__heap_put(h, d[i].lk, d[i].next);
                continue;
            }
            d[i].lk->next_renew = d[i].next;
            dlock__heap_set(d[i].lk);
        }
        for (size_t i = 0; i < n; i++) {
            /* An earlier callback may have released this lock: its owner
             * no longer wants to hear of it. */
            if (d[i].cb == NULL || d[i].lk->free_on_unref)
                continue;
            pthread_mutex_unlock(&dlock__reg_mu);
            d[i].cb(&d[i].lk->view, d[i].lk->payload);
            pthread_mutex_lock(&dlock__reg_mu);
        }
        for (size_t i = 0; i < n; i++)
            dlock__unref_locked(d[i].lk);
        pthread_cond_broadcast(&dlock__unref_cv);
    }
    pthread_mutex_unlock(&dlock__reg_mu);
    return NULL;
}

uint64_t dlock__renewals(void)
{
    return __atomic_load_n(&renewals, __ATOMIC_RELAXED);
}
