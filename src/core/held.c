/*
 * held.c - the calls on a held lock: dlock_extend(), dlock_assert_ttl(),
 * the run records' calls (dlock__lock_call), dlock_release() (also of a
 * fork child's inherited copy), and the read-only accessors.
 *
 * Each call takes the lock's mu for its store call (the renew thread
 * takes it with trylock only, so a user call never waits on a renewal's
 * mu for long), counts a lease that ran out on this process's clock as
 * lost whatever the store says (lease.c), and runs on_lost on the
 * caller's thread after every mutex is dropped.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "errors.h"
#include "iobound.h"
#include "process.h"
#include "regstate.h"

/* A lease may not be longer than a year: longer ones are surely a unit
 * mistake, and keeping all arithmetic far from overflow is simpler.
 * (Stores rely on this bound: store.h.) */
#define TTL_MAX_MS DLOCK_TTL_MAX_MS

static void schedule(struct dlock__held *lk, int64_t when)
{
    pthread_mutex_lock(&dlock__reg_mu);
    lk->next_renew = when;
    dlock__heap_set(lk);
    pthread_mutex_unlock(&dlock__reg_mu);
}

static int lock_usable(const struct dlock__held *lk)
{
    if (lk == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock is NULL");
    if (lk->gen != dlock__generation())
        return dlock__seterr(DLOCK_EINVAL,
                             "lock '%s' belongs to process %ld; a forked "
                             "child cannot use it",
                             lk->view.name, (long)lk->pid);
    return DLOCK_OK;
}

static int not_held(const struct dlock__held *lk)
{
    if (DLOCK_STATE_GET(lk) == DLOCK_STATE_DETACHED)
        return dlock__seterr(DLOCK_LOST,
                             "lock '%s' is gone: its store was closed",
                             lk->view.name);
    return dlock__seterr(DLOCK_LOST, "lock '%s' was lost", lk->view.name);
}

/* on_lost, called on the caller's thread from inside an API call: the
 * callback may call the library, which sets this thread's error message;
 * the call it interrupted still returns with its own. */
static void tell_lost(struct dlock__held *lk, dlock_lost_cb cb)
{
    char saved[512];

    snprintf(saved, sizeof(saved), "%s", dlock_errmsg());
    cb(&lk->view, lk->payload);
    (void)dlock__seterr(DLOCK_OK, "%s", saved);
}

dlock_rc dlock_extend(dlock_lock *lock, int64_t ttl_ms)
{
    struct dlock__held *lk = dlock__held_of(lock);
    struct dlock_store *s;
    dlock_lost_cb cb = NULL;
    int64_t t0, next = 0;
    int rc;

    dlock__clearerr();
    rc = lock_usable(lk);
    if (rc != DLOCK_OK)
        return rc;
    if (ttl_ms <= 0)
        ttl_ms = lk->view.ttl_ms;
    if (ttl_ms > TTL_MAX_MS || ttl_ms < DLOCK_TTL_MIN_MS)
        return dlock__seterr(DLOCK_EINVAL, "ttl_ms %lld is out of range",
                             (long long)ttl_ms);
    s = lk->store;
    pthread_mutex_lock(&lk->mu);
    if (DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD) {
        rc = not_held(lk);
        pthread_mutex_unlock(&lk->mu);
        return rc;
    }
    t0 = dlock__now_ms();
    if (dlock__lapsed(lk, t0)) {
        rc = dlock__lapsed_err(lk);
        cb = dlock__mark_lost(lk);
        pthread_mutex_unlock(&lk->mu);
        if (cb != NULL)
            tell_lost(lk, cb);
        return rc;
    }
    dlock__io_deadline = dlock__lease_end_of(lk);
    rc = s->ops->extend(s, &lk->view, ttl_ms);
    dlock__io_deadline = 0;
    if (rc != DLOCK_LOST && dlock__lapsed(lk, dlock__now_ms())) {
        /* Answered (or failed) after the lease ended here: too late. */
        rc = dlock__lapsed_err(lk);
        cb = dlock__mark_lost(lk);
    } else if (rc == DLOCK_OK) {
        __atomic_store_n(&lk->view.ttl_ms, ttl_ms, __ATOMIC_RELAXED);
        dlock__set_lease_end(lk, t0, ttl_ms);
        next = t0 + ttl_ms / 3;
    } else if (rc == DLOCK_LOST) {
        cb = dlock__mark_lost(lk);
    }
    pthread_mutex_unlock(&lk->mu);
    if (next != 0)
        schedule(lk, next);
    if (cb != NULL)
        tell_lost(lk, cb);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

/* A store call on lk under its mu (src/core/run.c): on a held lock as
 * dlock_assert_ttl() makes its call (a lapsed lease or a LOST answer
 * marks it lost), or with held_only = 0 on a lost one too (a store that
 * was closed under it still refuses).  With held_only = 0 the I/O gets a
 * third of the TTL, and no more than the lease left while the lock is
 * held (a lapsed one still gets its third: its LOST end is worth
 * recording), so that a caller trying again (dlock run's end record)
 * never outlives the lease by a try. */
int dlock__lock_call(struct dlock__held *lk, int held_only,
                     int (*fn)(struct dlock_store *s, struct dlock_lock *lk,
                               void *arg),
                     void *arg)
{
    dlock_lost_cb cb = NULL;
    int rc = lock_usable(lk);

    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&lk->mu);
    if (DLOCK_STATE_GET(lk) == DLOCK_STATE_DETACHED ||
        (held_only && DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD)) {
        rc = not_held(lk);
        pthread_mutex_unlock(&lk->mu);
        return rc;
    }
    if (held_only && dlock__lapsed(lk, dlock__now_ms())) {
        rc = dlock__lapsed_err(lk);
        cb = dlock__mark_lost(lk);
    } else {
        int64_t now = dlock__now_ms(), until = now + lk->view.ttl_ms / 3;

        if (held_only || (!dlock__lapsed(lk, now) &&
                          DLOCK_STATE_GET(lk) == DLOCK_STATE_HELD &&
                          dlock__lease_end_of(lk) < until))
            until = dlock__lease_end_of(lk);
        dlock__io_deadline = until;
        rc = fn(lk->store, &lk->view, arg);
        dlock__io_deadline = 0;
        if (rc == DLOCK_LOST && held_only)
            cb = dlock__mark_lost(lk);
    }
    pthread_mutex_unlock(&lk->mu);
    if (cb != NULL)
        tell_lost(lk, cb);
    return rc;
}

dlock_rc dlock_assert_ttl(dlock_lock *lock, int64_t min_remaining_ms)
{
    struct dlock__held *lk = dlock__held_of(lock);
    struct dlock_store *s;
    dlock_lost_cb cb = NULL;
    int64_t left = 0;
    int rc;

    dlock__clearerr();
    rc = lock_usable(lk);
    if (rc != DLOCK_OK)
        return rc;
    s = lk->store;
    pthread_mutex_lock(&lk->mu);
    if (DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD) {
        rc = not_held(lk);
        pthread_mutex_unlock(&lk->mu);
        return rc;
    }
    if (dlock__lapsed(lk, dlock__now_ms())) {
        rc = dlock__lapsed_err(lk);
        cb = dlock__mark_lost(lk);
    } else {
        dlock__io_deadline = dlock__lease_end_of(lk);
        rc = s->ops->ttl_left(s, &lk->view, &left);
        dlock__io_deadline = 0;
        if (rc == DLOCK_LOST)
            cb = dlock__mark_lost(lk);
    }
    pthread_mutex_unlock(&lk->mu);
    if (cb != NULL)
        tell_lost(lk, cb);
    if (rc != DLOCK_OK)
        return rc;
    if (left < min_remaining_ms)
        return dlock__seterr(DLOCK_EXPIRING,
                             "lock '%s' has %lld ms of lease left, less "
                             "than %lld",
                             lk->view.name, (long long)left,
                             (long long)min_remaining_ms);
    dlock__clearerr();
    return DLOCK_OK;
}

/* A release-like store call (release, forget) whose I/O ends at
 * `deadline` (dlock__io_bound) whatever the URL's timeout says. */
static int call_until(struct dlock__held *lk, int64_t deadline,
                      int (*op)(struct dlock_store *, struct dlock_lock *))
{
    int rc;

    dlock__io_deadline = deadline;
    rc = op(lk->store, &lk->view);
    dlock__io_deadline = 0;
    return rc;
}

/* A lock that is no longer held: the store frees what it keeps for it
 * (and lets go of it where it may still be ours). */
static int forget_or_release(struct dlock_store *s, struct dlock_lock *lk)
{
    if (s->ops->forget == NULL)
        return s->ops->release(s, lk);
    (void)s->ops->forget(s, lk);
    return DLOCK_OK;
}

/* Tell the store, whatever the state, so the store frees lk->view.priv. */
int dlock__store_release(struct dlock__held *lk)
{
    struct dlock_store *s = lk->store;
    int rc;

    if (dlock__lapsed(lk, dlock__now_ms())) {
        /* Tidy the store if it is still ours there (nobody waits for an
         * expired lease anyway), but the holder must hear it lapsed.
         * Best effort, so briefly: a store cut off must not keep the
         * holder (dlock run, say) for the URL's whole timeout. */
        (void)call_until(lk, dlock__now_ms() + lk->view.ttl_ms / 3,
                         s->ops->release);
        DLOCK_STATE_SET(lk, DLOCK_STATE_LOST);
        return dlock__lapsed_err(lk);
    }
    if (DLOCK_STATE_GET(lk) == DLOCK_STATE_HELD) {
        /* Past the lease the store lets go by itself. */
        return call_until(lk, dlock__lease_end_of(lk), s->ops->release);
    }
    if (DLOCK_STATE_GET(lk) == DLOCK_STATE_LOST) {
        if (lk->view.priv != NULL) {
            /* Tidying, as for a lapsed lease above: briefly. */
            (void)call_until(lk, dlock__now_ms() + lk->view.ttl_ms / 3,
                             forget_or_release);
        }
        return not_held(lk);
    }
    rc = not_held(lk);
    return rc;
}

dlock_rc dlock_release(dlock_lock *lock)
{
    struct dlock__held *lk = dlock__held_of(lock);
    int rc;

    dlock__clearerr();
    if (lk == NULL)
        return DLOCK_OK;
    if (lk->gen != dlock__generation()) {
        /* A fork child's copy of its parent's lock: free our memory, never
         * touch the store (its connection is the parent's).  The store
         * frees its part the same way, so it needs no list of held locks
         * to keep that reachable. */
        rc = lock_usable(lk);
        pthread_mutex_lock(&dlock__reg_mu);
        dlock__reg_unlink_locked(lk);
        pthread_mutex_unlock(&dlock__reg_mu);
        if (lk->view.priv != NULL && lk->store->ops->forget_inherited != NULL)
            lk->store->ops->forget_inherited(lk->store, &lk->view);
        free(lk->view.name);
        free(lk);
        return rc;
    }

    pthread_mutex_lock(&dlock__reg_mu);
    dlock__reg_unlink_locked(lk);
    /* Called from this lock's own on_lost callback on a library thread,
     * which holds one ref: that thread frees it afterwards. */
    if (dlock__on_lib_thread && lk->refs > 0) {
        pthread_mutex_unlock(&dlock__reg_mu);
        pthread_mutex_lock(&lk->mu);
        rc = dlock__store_release(lk);
        DLOCK_STATE_SET(lk, DLOCK_STATE_DETACHED);
        pthread_mutex_unlock(&lk->mu);
        pthread_mutex_lock(&dlock__reg_mu);
        lk->free_on_unref = 1;
        pthread_mutex_unlock(&dlock__reg_mu);
        return rc;
    }
    while (lk->refs > 0)
        pthread_cond_wait(&dlock__unref_cv, &dlock__reg_mu);
    pthread_mutex_unlock(&dlock__reg_mu);

    pthread_mutex_lock(&lk->mu);
    rc = dlock__store_release(lk);
    pthread_mutex_unlock(&lk->mu);
    dlock__lock_free(lk);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

uint64_t dlock_fence(const dlock_lock *lk)
{
    return lk != NULL ? lk->fence : 0;
}

const char *dlock_lock_name(const dlock_lock *lk)
{
    return lk != NULL ? lk->name : "";
}

/* What is left of lk's lease as this process knows it, 0 when lost.
 * Without lk->mu (a renewal may hold it, stuck in a store that stopped
 * answering): state is read whole, and a lock is never HELD again once it
 * was not. */
static int64_t lease_left(const struct dlock__held *lk)
{
    int64_t left;

    if (DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD || dlock__declared_lost(lk))
        return 0;
    left = dlock__lease_end_of(lk) - dlock__now_ms();
    return left > 0 ? left : 0;
}

int dlock_is_lost(const dlock_lock *lk)
{
    return lk == NULL || lease_left(dlock__held_of_const(lk)) == 0;
}

int64_t dlock_lease_left(const dlock_lock *lk)
{
    return lk == NULL ? 0 : lease_left(dlock__held_of_const(lk));
}
