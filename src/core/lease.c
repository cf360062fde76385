/*
 * lease.c - loss: when a held lock's lease has run out on this process's
 * clock (the clock-rate margin, clock.c, taken), declaring it LOST once,
 * and the lease thread that does so at the lease end without waiting for
 * any store.
 */
#include <pthread.h>
#include <stdint.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "clock.h"
#include "errors.h"
#include "regstate.h"

/* A lease of ttl_ms the store started no earlier than t0 (the request
 * left then) ends, for this process, at t0 + ttl_ms less the margin. */
void dlock__set_lease_end(struct dlock__held *lk, int64_t t0, int64_t ttl_ms)
{
    __atomic_store_n(&lk->view.lease_end,
                     t0 + ttl_ms - dlock__drift_margin(ttl_ms),
                     __ATOMIC_RELAXED);
}

/* A held lock whose lease, as this process knows it, has run out without
 * a renewal: it is lost, whatever the store would still say.  Someone may
 * have held it meanwhile (taken and released again) and only the local
 * clock can tell the holder that its exclusion lapsed.  The lease end is
 * set before each successful request is sent, so it is never later than
 * the store's.  Once the lease thread has declared it lost, a renewal
 * answered late cannot bring it back. */
int dlock__lapsed(const struct dlock__held *lk, int64_t now)
{
    return DLOCK_STATE_GET(lk) == DLOCK_STATE_HELD &&
           (now >= dlock__lease_end_of(lk) || dlock__declared_lost(lk));
}

int dlock__lapsed_err(const struct dlock__held *lk)
{
    return dlock__seterr(DLOCK_LOST,
                         "lock '%s' was lost: its lease ran out before it "
                         "was renewed",
                         lk->view.name);
}

/* Declare lk lost, once: the callback to run, or NULL when it had been
 * declared before (or has none).  Either thread, mu held or not. */
dlock_lost_cb dlock__declare_lost(struct dlock__held *lk)
{
    if (__atomic_exchange_n(&lk->lost_notified, 1, __ATOMIC_ACQ_REL))
        return NULL;
    return lk->on_lost;
}

/* Mark lk lost (caller holds lk->mu).  Returns the callback to run once
 * the caller has dropped its locks, or NULL. */
dlock_lost_cb dlock__mark_lost(struct dlock__held *lk)
{
    DLOCK_STATE_SET(lk, DLOCK_STATE_LOST);
    pthread_mutex_lock(&dlock__reg_mu);
    lk->renewable = 0;
    dlock__heaps_remove(lk);
    pthread_mutex_unlock(&dlock__reg_mu);
    return dlock__declare_lost(lk);
}

/* The lease thread: declares a held lock LOST at its lease end (this
 * process's, the margin taken) unless a renewal confirmed a later one by
 * then.  It never calls a store, and takes no lock's mu, so a renewal
 * stuck in a store that stopped answering (a cut network) cannot delay
 * it: the holder hears of the loss when its lease ends, not when the
 * store's timeout fires. */
void *dlock__lease_main(void *arg)
{
    struct dlock__heap *h = &dlock__heaps[H_LEASE];

    (void)arg;
#ifdef __linux__
    (void)prctl(PR_SET_NAME, "dlock-lease", 0, 0, 0);
#endif
    dlock__thread_begin(H_LEASE);
    while (!dlock__thr_stop) {
        int64_t now = dlock__now_ms(), end;
        struct dlock__held *lk;
        dlock_lost_cb cb;

        if (h->len == 0) {
            dlock__heap_sleep(h, INT64_MAX);
            continue;
        }
        lk = h->v[0];
        if (lk->due[H_LEASE] > now) {
            dlock__heap_sleep(h, lk->due[H_LEASE]);
            continue;
        }
        end = dlock__lease_end_of(lk);
        if (end > now) {
            dlock__heap_put(h, lk, end); /* renewed since it was put here */
            continue;
        }
        dlock__heap_remove(h, lk);
        cb = dlock__declare_lost(lk);
        if (cb == NULL)
            continue;
        lk->refs++;
        pthread_mutex_unlock(&dlock__reg_mu);
        cb(&lk->view, lk->payload);
        pthread_mutex_lock(&dlock__reg_mu);
        dlock__unref_locked(lk);
        pthread_cond_broadcast(&dlock__unref_cv);
    }
    pthread_mutex_unlock(&dlock__reg_mu);
    return NULL;
}
