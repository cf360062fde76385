/*
 * acquire.c - dlock_acquire(): option checks, one attempt, and the core's
 * wait loop (polling with jittered backoff, or bounded slices of a store's
 * native wait), which also waits out a store that went away.  What happens
 * to a lock once held (renewal, loss, release, the registry): registry.c,
 * renew.c, lease.c, held.c.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "held.h"
#include "iobound.h"
#include "names.h"
#include "process.h"
#include "random.h"
#include "registry.h"
#include "strutil.h"

#define TTL_MAX_MS DLOCK_TTL_MAX_MS
/* A lease and any other duration from outside share one bound. */
_Static_assert(DLOCK_TTL_MAX_MS == DLOCK_DURATION_MAX_MS,
               "store.h and clock.h disagree on the longest duration");

/* How long one attempt may wait for the store's own short-lived internal
 * contention (SQLite's write lock, say) when the caller asked not to wait
 * or is waiting forever.  Not the lock being busy: that is answered at
 * once. */
#define ATTEMPT_BUDGET_MS 2000

/* The native wait's slices: at most this long, so a holder is looked at
 * again now and then even when its lease is not known, and this long past
 * the end of the holder's lease when it is (the store's clock may round
 * it down). */
#define SLICE_MAX_MS 5000
#define SLICE_MARGIN_MS 20

/* A waiter whose store went away (a restart, a failover, a dropped
 * connection) tries again after this, doubling up to OUTAGE_MAX_MS. */
#define OUTAGE_FIRST_MS 100
#define OUTAGE_MAX_MS 2000

/* A finite wait's store calls give up this long after its deadline at the
 * latest (its answer is due at the deadline; a store cut off must not
 * keep the caller for the URL's whole timeout), leaving room for the
 * answer of a native wait that ends at the deadline itself. */
#define WAIT_IO_SLACK_MS 1000

/* --- acquire --------------------------------------------------------- */

static int check_options(const dlock_options *o, const dlock_store *s)
{
    /* Every version up to ours: fields are only ever added at the end, and
     * version 1 is all there is so far. */
    if (o->version < 1 || o->version > DLOCK_OPTIONS_VERSION)
        return dlock__seterr(DLOCK_EINVAL,
                             "dlock_options version %u is not one of "
                             "1..%u; initialise with DLOCK_OPTIONS_INIT",
                             o->version, (unsigned)DLOCK_OPTIONS_VERSION);
    if (o->wait_ms < DLOCK_WAIT_FOREVER)
        return dlock__seterr(DLOCK_EINVAL,
                             "wait_ms %lld is negative (use "
                             "DLOCK_WAIT_FOREVER to wait forever)",
                             (long long)o->wait_ms);
    /* A lease shorter than DLOCK_TTL_MIN_MS would be lost before the
     * first renewal could keep it. */
    if (o->ttl_ms < DLOCK_TTL_MIN_MS || o->ttl_ms > TTL_MAX_MS)
        return dlock__seterr(
            DLOCK_EINVAL, "ttl_ms %lld is out of range (%d..%lld)",
            (long long)o->ttl_ms, DLOCK_TTL_MIN_MS, (long long)TTL_MAX_MS);
    /* limit exists from version 2 on: a version 1 struct ends before it.
     * Bad arguments first (EINVAL on every store), then what this store
     * cannot do (ENOTSUP). */
    if (o->version >= 2 && o->limit > 1) {
        if (o->limit > DLOCK_LIMIT_MAX)
            return dlock__seterr(DLOCK_EINVAL, "limit %u is over %d", o->limit,
                                 DLOCK_LIMIT_MAX);
        if (o->shared)
            return dlock__seterr(DLOCK_EINVAL,
                                 "a semaphore (limit %u) "
                                 "cannot be shared as well",
                                 o->limit);
    }
    if (o->shared && !s->ops->has_shared)
        return dlock__seterr(DLOCK_ENOTSUP,
                             "the %s store has no shared (read) locks",
                             s->ops->name);
    if (o->version >= 2 && o->limit > 1) {
        if (!s->ops->has_limit)
            return dlock__seterr(DLOCK_ENOTSUP,
                                 "the %s store has no semaphores (limit %u)",
                                 s->ops->name, o->limit);
    }
    return DLOCK_OK;
}

/* One attempt.  *retry_ms: the holder's lease left when the store knows
 * it, else -1. */
static int attempt(struct dlock_store *s, struct dlock__held *lk,
                   int64_t deadline, int try_once, int64_t *retry_ms)
{
    int64_t now = dlock__now_ms(), budget;
    int rc;

    /* A try-lock (or an endless wait) must not report BUSY just because
     * another client was mid-transaction; a finite wait's answer is due
     * at its deadline, whatever the reason. */
    if (deadline == DLOCK_WAIT_FOREVER || try_once)
        budget = now + ATTEMPT_BUDGET_MS;
    else
        budget = deadline;
    /* If this attempt succeeds, the lease started no earlier than now:
     * the end we assume must not be later than the store's. */
    lk->view.lease_end = now + lk->view.ttl_ms;
    lk->view.fence = 0; /* set by a grant only: see no_fence() */
    *retry_ms = -1;
    rc = s->ops->try_acquire(s, &lk->view, budget, retry_ms);
    /* The store's word on the holder's lease (a server's answer, maybe a
     * hostile one's): in range, so the wait loop's sums cannot overflow. */
    *retry_ms = dlock__clamp_ms(*retry_ms);
    return rc;
}

/* The core's wait loop, for stores without a native wait: one attempt,
 * then jittered exponential backoff (capped by DLOCK_POLL_MAX_MS and by
 * when the holder's lease ends, when the store knows), until deadline. */
static int poll_acquire(struct dlock_store *s, struct dlock__held *lk,
                        int64_t deadline, int try_once)
{
    unsigned attempts;

    for (attempts = 0;; attempts++) {
        int64_t retry, rem, delay;
        int rc;

        if (dlock__cancelled())
            return dlock__ecanceled();
        rc = attempt(s, lk, deadline, try_once, &retry);
        if (rc != DLOCK_BUSY)
            return rc;
        rem = dlock__remaining_ms(deadline);
        if (rem == 0 || try_once)
            return DLOCK_BUSY;
        delay = dlock__backoff_ms(attempts, dlock__rand32());
        if (retry >= 0 && retry + 1 < delay)
            delay = retry + 1;
        if (delay > rem)
            delay = rem;
        (void)dlock__cancel_sleep_ms(delay);
    }
}

/* The core's wait loop for a store that can block natively: one attempt
 * (a free lock needs no wait), then bounded slices of the store's own
 * wait.  A slice ends at the deadline, SLICE_MAX_MS at the latest, and
 * SLICE_MARGIN_MS after the holder's lease does: between slices the store
 * looks at the holder again, so one that hangs past its lease is fenced
 * off in time, whenever it started to hang. */
static int slice_acquire(struct dlock_store *s, struct dlock__held *lk,
                         int64_t deadline)
{
    int64_t retry;
    int rc = attempt(s, lk, deadline, 0, &retry);

    while (rc == DLOCK_BUSY) {
        int64_t slice = dlock__remaining_ms(deadline);

        if (dlock__cancelled())
            return dlock__ecanceled();
        if (slice == 0)
            break;
        if (slice > SLICE_MAX_MS)
            slice = SLICE_MAX_MS;
        if (retry >= 0 && retry + SLICE_MARGIN_MS < slice)
            slice = retry + SLICE_MARGIN_MS;
        retry = -1;
        /* As in attempt(): the store may move it later, never earlier. */
        lk->view.lease_end = dlock__now_ms() + lk->view.ttl_ms;
        lk->view.fence = 0;
        rc = s->ops->wait_slice(s, &lk->view, slice, &retry);
        retry = dlock__clamp_ms(retry); /* as in attempt() */
    }
    return rc;
}

/* An attempt the store granted after the lease it started had already
 * ended on this process's count (a store that answered that late: a cut
 * network, a frozen server): holding it would be holding a lock that is
 * lost from its first moment, and someone may hold it already.  It is
 * let go again (best effort, briefly), and the attempt counts as a store
 * that did not answer in time, which a wait retries within its deadline. */
static int too_late(struct dlock_store *s, struct dlock__held *lk)
{
    int64_t now = dlock__now_ms(), saved = dlock__io_deadline;

    if (now < lk->view.lease_end - dlock__drift_margin(lk->view.ttl_ms))
        return DLOCK_OK;
    dlock__io_deadline = now + lk->view.ttl_ms / 3;
    (void)s->ops->release(s, &lk->view);
    dlock__io_deadline = saved;
    return dlock__seterr(
        DLOCK_EUNAVAIL,
        "%s granted lock '%s' only after the lease it "
        "started had run out (%lld ms after the request "
        "was sent, lease %lld ms): not taken",
        s->url, lk->view.name,
        (long long)(now - (lk->view.lease_end - lk->view.ttl_ms)),
        (long long)lk->view.ttl_ms);
}

/* A grant without a fence: every store's grant sets one, at least 1
 * (docs/internals.md), so this is a store's bug or a server's keys
 * edited or evicted under it (a Redis lock key whose info hash went).
 * An OK with fence 0 once let a MariaDB semaphore acquire answer OK
 * with no slot (692170c): holding it would be a holder nobody can fence.
 * It is let go again, as too_late() does, and the acquire fails. */
static int no_fence(struct dlock_store *s, struct dlock__held *lk)
{
    int64_t saved = dlock__io_deadline;

    if (lk->view.fence != 0)
        return DLOCK_OK;
    dlock__io_deadline = dlock__now_ms() + lk->view.ttl_ms / 3;
    (void)s->ops->release(s, &lk->view);
    dlock__io_deadline = saved;
    return dlock__seterr(DLOCK_ESTORE,
                         "%s granted lock '%s' without a fencing token (a "
                         "store's bug, or its keys changed under it): not "
                         "taken",
                         s->url, lk->view.name);
}

/* The acquire's cancel fired before it returned: whatever its wait ended
 * with, the answer is DLOCK_ECANCELED, and a grant that raced the cancel
 * is let go again (as too_late() does), so nothing is held. */
static int cancelled(struct dlock_store *s, struct dlock__held *lk, int rc)
{
    if (rc == DLOCK_OK) {
        int64_t saved = dlock__io_deadline;

        dlock__io_deadline = dlock__now_ms() + lk->view.ttl_ms / 3;
        (void)s->ops->release(s, &lk->view);
        dlock__io_deadline = saved;
    }
    return dlock__ecanceled();
}

/* What a store kept in priv for an acquire that did not get the lock (a
 * session it waited on, what its try saw of the holder). */
static int forget_attempts(struct dlock_store *s, struct dlock__held *lk)
{
    if (lk->view.priv != NULL && s->ops->forget != NULL)
        return s->ops->forget(s, &lk->view);
    return DLOCK_OK;
}

int dlock__acquire(dlock_lock **out, dlock_store *s, const char *name,
                   size_t name_len, const dlock_options *opts,
                   const char *value, size_t value_len, int candidate)
{
    static const dlock_options defaults = DLOCK_OPTIONS_INIT;
    struct dlock_cancel *cancel, *outer_cancel;
    struct dlock__held *lk;
    int64_t t0, deadline;
    int rc;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    rc = dlock__store_usable(s);
    if (rc != DLOCK_OK)
        return rc;
    if (opts == NULL)
        opts = &defaults;
    rc = check_options(opts, s);
    if (rc != DLOCK_OK)
        return rc;
    if (name != NULL && memchr(name, '\0', name_len) != NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name contains a NUL byte");
    rc = dlock__check_name(name, name_len);
    if (rc != DLOCK_OK)
        return rc;
    /* cancel exists from version 3 on.  Fired already: nothing is sent. */
    cancel = opts->version >= 3 ? opts->cancel : NULL;
    if (dlock_cancel_fired(cancel))
        return dlock__ecanceled();

    /* Before acquiring: failing to start the renew thread afterwards
     * would leave a lock held that nobody renews. */
    rc = dlock__registry_start(opts->auto_renew);
    if (rc != DLOCK_OK)
        return rc;

    lk = calloc(1, sizeof(*lk));
    if (lk == NULL)
        return dlock__enomem();
    lk->view.name = dlock__strndup(name, name_len);
    if (lk->view.name == NULL) {
        free(lk);
        return dlock__enomem();
    }
    rc = dlock__token(lk->view.token);
    if (rc != DLOCK_OK) {
        free(lk->view.name);
        free(lk);
        return rc;
    }
    pthread_mutex_init(&lk->mu, NULL);
    lk->heap_idx[0] = lk->heap_idx[1] = SIZE_MAX;
    /* Its place in the lease thread's heap (and the renew thread's, when
     * auto-renewed), so that registering it once acquired cannot fail. */
    rc = dlock__registry_reserve(lk, opts->auto_renew);
    if (rc != DLOCK_OK) {
        dlock__lock_free(lk);
        return rc;
    }
    if (candidate) {
        lk->value = dlock__strndup(value != NULL ? value : "", value_len);
        if (lk->value == NULL) {
            dlock__registry_unreserve(lk);
            dlock__lock_free(lk);
            return dlock__enomem();
        }
        lk->view.value = value_len > 0 ? lk->value : NULL;
        lk->view.value_len = value_len;
        lk->view.is_candidate = 1;
    }
    lk->store = s;
    lk->view.name_len = name_len;
    lk->view.ttl_ms = opts->ttl_ms;
    lk->view.shared = opts->shared != 0;
    lk->view.limit = opts->version >= 2 && opts->limit > 1 ? opts->limit : 1;
    lk->pid = dlock__pid();
    lk->gen = dlock__generation();
    lk->view.auto_renew = opts->auto_renew != 0;
    lk->view.waits = opts->wait_ms != 0;
    lk->on_lost = opts->on_lost;
    lk->payload = opts->payload;

    /* A wait longer than the longest lease is waited forever: INT64_MAX
     * is a common way to say forever, and t0 + wait_ms would overflow;
     * nobody sees a deadline over a year away either way (dlock.h). */
    t0 = dlock__now_ms();
    deadline = opts->wait_ms == DLOCK_WAIT_FOREVER || opts->wait_ms > TTL_MAX_MS
                   ? DLOCK_WAIT_FOREVER
                   : t0 + opts->wait_ms;
    if (opts->wait_ms != 0 && deadline != DLOCK_WAIT_FOREVER)
        dlock__io_deadline = deadline + WAIT_IO_SLACK_MS;
    /* An acquire from an on_lost callback runs inside another's: keep
     * that one's cancel for when this returns. */
    outer_cancel = dlock__cancel_cur;
    dlock__cancel_cur = cancel;
    for (int64_t outage = OUTAGE_FIRST_MS;; outage *= 2) {
        int64_t rem;

        if (opts->wait_ms != 0 && s->ops->wait_slice != NULL && !s->poll_wait) {
            rc = slice_acquire(s, lk, deadline);
        } else {
            rc = poll_acquire(s, lk, deadline, opts->wait_ms == 0);
        }
        if (rc == DLOCK_OK)
            rc = no_fence(s, lk);
        if (rc == DLOCK_OK)
            rc = too_late(s, lk);
        /* The store went away while we waited: a caller who asked to wait
         * waits for it to come back too, within the same deadline (the
         * stores reconnect on the next call).  A try-lock answers now. */
        if (rc != DLOCK_EUNAVAIL || opts->wait_ms == 0)
            break;
        /* Waiting out an outage starts afresh: the store's sessions of
         * this acquire went with the server. */
        (void)forget_attempts(s, lk);
        if (outage > OUTAGE_MAX_MS)
            outage = OUTAGE_MAX_MS;
        rem = dlock__remaining_ms(deadline);
        if (rem <= outage)
            break; /* still unreachable at the deadline: say so */
        if (dlock__cancel_sleep_ms(outage))
            break;
    }
    /* What follows lets go of what the wait left: never cancelled. */
    dlock__cancel_cur = outer_cancel;
    if (dlock_cancel_fired(cancel))
        rc = cancelled(s, lk, rc);
    /* Letting go of what the wait left on the store (a place in a
     * queue) is one of its calls too: 1 s after the deadline at most,
     * not the URL's whole timeout when the store is cut off. */
    if (rc != DLOCK_OK) {
        /* A wait that slept on a holder's lease (Redis: until its release
         * is published) asks the store nothing until this call: a store
         * that no longer answers it is what the wait ended on, as on the
         * stores whose wait statements found it (69 in dlock(1)), not a
         * lock seen held by someone else. */
        if (forget_attempts(s, lk) == DLOCK_EUNAVAIL && rc == DLOCK_BUSY)
            rc = DLOCK_EUNAVAIL;
    }
    dlock__io_deadline = 0;
    if (rc != DLOCK_OK) {
        if (rc == DLOCK_BUSY && dlock_errmsg()[0] == '\0')
            dlock__seterr(DLOCK_BUSY, "lock '%s' is held by someone else",
                          lk->view.name);
        dlock__registry_unreserve(lk);
        dlock__lock_free(lk);
        return rc;
    }
    /* lease_end was set before the successful attempt was sent: never
     * later than the store's, so loss is never noticed late. */
    t0 = dlock__now_ms();
    lk->next_renew = lk->view.lease_end - lk->view.ttl_ms + lk->view.ttl_ms / 3;
    if (lk->next_renew < t0)
        lk->next_renew = t0;
    DLOCK_STATE_SET(lk, DLOCK_STATE_HELD);
    dlock__registry_add(lk);
    dlock__clearerr();
    *out = &lk->view;
    return DLOCK_OK;
}

dlock_rc dlock_acquire_len(dlock_lock **out, dlock_store *s, const char *name,
                           size_t name_len, const dlock_options *opts)
{
    return dlock__acquire(out, s, name, name_len, opts, NULL, 0, 0);
}

dlock_rc dlock_acquire(dlock_lock **out, dlock_store *s, const char *name,
                       const dlock_options *opts)
{
    if (name == NULL) {
        if (out != NULL)
            *out = NULL;
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    }
    return dlock_acquire_len(out, s, name, strlen(name), opts);
}
