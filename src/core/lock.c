/*
 * lock.c - acquire, the wait loop, renewal, loss, release, atexit and fork.
 *
 * Every held lock of this process is in one registry (a list behind
 * reg_mu).  The registry exists for three reasons: the renew thread walks
 * it to find leases due for renewal, the atexit handler walks it to release
 * what the program forgot, and closing a store detaches the locks taken
 * through it.  A fork child inherits the registry: its parent's locks stay
 * listed there (never renewed or released by the child) until the child
 * frees them with dlock_release(), which hands them to the store's
 * forget_inherited().
 *
 * Locking order: reg_mu may be taken while holding a lock's mu, never the
 * other way round.  A lock's
 * mu serialises store calls on that lock (user thread against renew
 * thread); reg_mu protects the list, the scheduling fields (next_renew,
 * renewable, refs) and the renew thread's state.  Store calls never run
 * under reg_mu, so a slow store cannot stall the registry.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

/* A lease may not be longer than a year: longer ones are surely a unit
 * mistake, and keeping all arithmetic far from overflow is simpler.
 * (Stores rely on this bound: store.h.) */
#define TTL_MAX_MS DLOCK_TTL_MAX_MS

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

/* After a renewal fails for a transient reason, retry this soon (bounded
 * by what is left of the lease). */
#define RENEW_RETRY_MS 250

/* A waiter whose store went away (a restart, a failover, a dropped
 * connection) tries again after this, doubling up to OUTAGE_MAX_MS. */
#define OUTAGE_FIRST_MS 100
#define OUTAGE_MAX_MS 2000

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cv;   /* wakes the renew thread */
static pthread_cond_t unref_cv; /* a lock's refs dropped */
static struct dlock_lock *reg_head;
static pthread_t renew_thr;
static int renew_running;
static int renew_stop;
static int at_exit; /* atexit ran: no new renew thread */
static _Thread_local int on_renew_thread;

static void release_all_at_exit(void);

static void fork_prepare(void)
{
    pthread_mutex_lock(&reg_mu);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&reg_mu);
}

static void init_conds(void)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&reg_cv, &ca);
    pthread_cond_init(&unref_cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* The child has no renew thread, and the locks in the registry are its
 * parent's: it never renews or releases them (lock->pid tells).  The
 * condition variables are made anew: the parent's renew thread was
 * waiting on one, and a waiter that does not exist in the child would
 * make the child's first broadcast wait for it forever. */
static void fork_child(void)
{
    pthread_mutex_init(&reg_mu, NULL);
    init_conds();
    renew_running = 0;
    renew_stop = 0;
}

static void reg_init(void)
{
    init_conds();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(release_all_at_exit);
}

static void cond_wait_until(pthread_cond_t *cv, int64_t when_ms)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(when_ms / 1000);
    ts.tv_nsec = (long)(when_ms % 1000) * 1000000L;
    pthread_cond_timedwait(cv, &reg_mu, &ts);
}

/* --- loss ------------------------------------------------------------ */

/* lease_end is written under lk->mu but read by the renew thread's scan
 * under reg_mu only: relaxed atomics keep those reads whole. */
static int64_t lease_end_of(const struct dlock_lock *lk)
{
    return __atomic_load_n(&lk->lease_end, __ATOMIC_RELAXED);
}

static void set_lease_end(struct dlock_lock *lk, int64_t when)
{
    __atomic_store_n(&lk->lease_end, when, __ATOMIC_RELAXED);
}

/* A held lock whose lease, as this process knows it, has run out without
 * a renewal: it is lost, whatever the store would still say.  Someone may
 * have held it meanwhile (taken and released again) and only the local
 * clock can tell the holder that its exclusion lapsed.  The lease end is
 * set before each successful request is sent, so it is never later than
 * the store's. */
static int lapsed(const struct dlock_lock *lk, int64_t now)
{
    return lk->state == DLOCK_STATE_HELD && now >= lease_end_of(lk);
}

static int lapsed_err(const struct dlock_lock *lk)
{
    return dlock__seterr(DLOCK_LOST,
                         "lock '%s' was lost: its lease ran out before it "
                         "was renewed",
                         lk->name);
}

/* Mark lk lost (caller holds lk->mu).  Returns the callback to run once
 * the caller has dropped its locks, or NULL. */
static dlock_lost_cb mark_lost(struct dlock_lock *lk)
{
    lk->state = DLOCK_STATE_LOST;
    pthread_mutex_lock(&reg_mu);
    lk->renewable = 0;
    pthread_mutex_unlock(&reg_mu);
    if (lk->lost_notified)
        return NULL;
    lk->lost_notified = 1;
    return lk->on_lost;
}

static void schedule(struct dlock_lock *lk, int64_t when)
{
    pthread_mutex_lock(&reg_mu);
    lk->next_renew = when;
    pthread_cond_broadcast(&reg_cv);
    pthread_mutex_unlock(&reg_mu);
}

/* --- the renew thread ------------------------------------------------ */

/* Renew one lock (the renew thread holds a ref on it). */
static void renew_one(struct dlock_lock *lk)
{
    struct dlock_store *s = lk->store;
    dlock_lost_cb cb = NULL;
    int64_t t0, now, next = 0;
    int rc;

    pthread_mutex_lock(&lk->mu);
    if (lk->state != DLOCK_STATE_HELD) {
        pthread_mutex_unlock(&lk->mu);
        return;
    }
    t0 = dlock__now_ms();
    if (lapsed(lk, t0)) {
        /* Renewal fell behind (too many locks, a stalled store): too late
         * to extend, whatever the store would answer. */
        cb = mark_lost(lk);
        pthread_mutex_unlock(&lk->mu);
        if (cb != NULL)
            cb(lk, lk->payload);
        return;
    }
    rc = s->ops->extend(s, lk, lk->ttl_ms);
    now = dlock__now_ms();
    if (rc == DLOCK_OK) {
        /* The lease counts from when the request left, not when the
         * answer came: the store may have started it any time between. */
        set_lease_end(lk, t0 + lk->ttl_ms);
        next = t0 + lk->ttl_ms / 3;
    } else if (rc == DLOCK_LOST || now >= lease_end_of(lk)) {
        cb = mark_lost(lk);
    } else {
        /* Transient (store unreachable): try again soon, while the lease
         * we know of still runs.  When it has run out the lock is lost. */
        int64_t left = lease_end_of(lk) - now;

        next = now + (left / 4 < RENEW_RETRY_MS ? left / 4 : RENEW_RETRY_MS);
        if (next <= now)
            next = now + 1;
    }
    pthread_mutex_unlock(&lk->mu);
    if (next != 0)
        schedule(lk, next);
    if (cb != NULL)
        cb(lk, lk->payload);
}

static void free_lock(struct dlock_lock *lk)
{
    pthread_mutex_destroy(&lk->mu);
    free(lk->name);
    free(lk);
}

static void *renew_main(void *arg)
{
    (void)arg;
    on_renew_thread = 1;
    pthread_mutex_lock(&reg_mu);
    while (!renew_stop) {
        struct dlock_lock *lk, *due = NULL;
        int64_t now = dlock__now_ms(), earliest = INT64_MAX;
        pid_t me = getpid();

        for (lk = reg_head; lk != NULL; lk = lk->next) {
            int64_t when;

            if (lk->renewable <= 0 || !lk->auto_renew || lk->pid != me)
                continue;
            /* Due at its renewal time, and at the latest when its lease
             * ends: a lock whose renewal fell behind is reported LOST
             * then, not whenever the thread gets round to it. */
            when = lk->next_renew < lease_end_of(lk) ? lk->next_renew
                                                     : lease_end_of(lk);
            if (when <= now) {
                due = lk;
                break;
            }
            if (when < earliest)
                earliest = when;
        }
        if (due == NULL) {
            if (earliest == INT64_MAX)
                pthread_cond_wait(&reg_cv, &reg_mu);
            else
                cond_wait_until(&reg_cv, earliest);
            continue;
        }
        /* Not picked again until renew_one() has rescheduled it. */
        due->next_renew = INT64_MAX;
        due->refs++;
        pthread_mutex_unlock(&reg_mu);
        renew_one(due);
        pthread_mutex_lock(&reg_mu);
        due->refs--;
        pthread_cond_broadcast(&unref_cv);
        if (due->refs == 0 && due->free_on_unref)
            free_lock(due);
    }
    pthread_mutex_unlock(&reg_mu);
    return NULL;
}

/* Start the renew thread if it is not running (caller holds reg_mu). */
static int renew_start_locked(void)
{
    int err;

    if (renew_running)
        return DLOCK_OK;
    if (at_exit)
        return dlock__seterr(DLOCK_EINVAL, "the process is exiting");
    renew_stop = 0;
    err = pthread_create(&renew_thr, NULL, renew_main, NULL);
    if (err != 0)
        return dlock__seterr(err == ENOMEM ? DLOCK_ENOMEM : DLOCK_EINVAL,
                             "cannot start the renew thread: %s",
                             strerror(err));
    renew_running = 1;
    return DLOCK_OK;
}

static void reg_add(struct dlock_lock *lk)
{
    pthread_mutex_lock(&reg_mu);
    lk->prev = NULL;
    lk->next = reg_head;
    if (reg_head != NULL)
        reg_head->prev = lk;
    reg_head = lk;
    lk->renewable = 1;
    pthread_cond_broadcast(&reg_cv);
    pthread_mutex_unlock(&reg_mu);
}

/* Unlink lk (caller holds reg_mu). */
static void reg_unlink_locked(struct dlock_lock *lk)
{
    if (lk->prev != NULL)
        lk->prev->next = lk->next;
    else if (reg_head == lk)
        reg_head = lk->next;
    if (lk->next != NULL)
        lk->next->prev = lk->prev;
    lk->prev = lk->next = NULL;
    lk->renewable = 0;
}

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
        return dlock__seterr(DLOCK_EINVAL,
                             "ttl_ms %lld is out of range (%d..%lld)",
                             (long long)o->ttl_ms, DLOCK_TTL_MIN_MS,
                             (long long)TTL_MAX_MS);
    /* Wrong on every store: say so before what this store lacks. */
    if (o->version >= 2 && o->limit > 1 && o->shared)
        return dlock__seterr(DLOCK_EINVAL, "a semaphore (limit %u) "
                             "cannot be shared as well", o->limit);
    if (o->shared && !s->ops->has_shared)
        return dlock__seterr(DLOCK_ENOTSUP,
                             "the %s store has no shared (read) locks",
                             s->ops->name);
    /* limit exists from version 2 on: a version 1 struct ends before it. */
    if (o->version >= 2 && o->limit > 1) {
        if (o->limit > DLOCK_LIMIT_MAX)
            return dlock__seterr(DLOCK_EINVAL,
                                 "limit %u is over %d", o->limit,
                                 DLOCK_LIMIT_MAX);
        if (!s->ops->has_limit)
            return dlock__seterr(DLOCK_ENOTSUP,
                                 "the %s store has no semaphores (limit %u)",
                                 s->ops->name, o->limit);
    }
    return DLOCK_OK;
}

/* One attempt.  *retry_ms: the holder's lease left when the store knows
 * it, else -1. */
static int attempt(struct dlock_store *s, struct dlock_lock *lk,
                   int64_t deadline, int try_once, int64_t *retry_ms)
{
    int64_t now = dlock__now_ms(), budget;

    /* A try-lock (or an endless wait) must not report BUSY just because
     * another client was mid-transaction; a finite wait's answer is due
     * at its deadline, whatever the reason. */
    if (deadline == DLOCK_WAIT_FOREVER || try_once)
        budget = now + ATTEMPT_BUDGET_MS;
    else
        budget = deadline;
    /* If this attempt succeeds, the lease started no earlier than now:
     * the end we assume must not be later than the store's. */
    lk->lease_end = now + lk->ttl_ms;
    *retry_ms = -1;
    return s->ops->try_acquire(s, lk, budget, retry_ms);
}

/* The core's wait loop, for stores without a native wait: one attempt,
 * then jittered exponential backoff (capped by DLOCK_POLL_MAX_MS and by
 * when the holder's lease ends, when the store knows), until deadline. */
static int poll_acquire(struct dlock_store *s, struct dlock_lock *lk,
                        int64_t deadline, int try_once)
{
    unsigned attempts;

    for (attempts = 0;; attempts++) {
        int64_t retry, rem, delay;
        int rc = attempt(s, lk, deadline, try_once, &retry);

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
        dlock__sleep_ms(delay);
    }
}

/* The core's wait loop for a store that can block natively: one attempt
 * (a free lock needs no wait), then bounded slices of the store's own
 * wait.  A slice ends at the deadline, SLICE_MAX_MS at the latest, and
 * SLICE_MARGIN_MS after the holder's lease does: between slices the store
 * looks at the holder again, so one that hangs past its lease is fenced
 * off in time, whenever it started to hang. */
static int slice_acquire(struct dlock_store *s, struct dlock_lock *lk,
                         int64_t deadline)
{
    int64_t retry;
    int rc = attempt(s, lk, deadline, 0, &retry);

    while (rc == DLOCK_BUSY) {
        int64_t slice = dlock__remaining_ms(deadline);

        if (slice == 0)
            break;
        if (slice > SLICE_MAX_MS)
            slice = SLICE_MAX_MS;
        if (retry >= 0 && retry + SLICE_MARGIN_MS < slice)
            slice = retry + SLICE_MARGIN_MS;
        retry = -1;
        /* As in attempt(): the store may move it later, never earlier. */
        lk->lease_end = dlock__now_ms() + lk->ttl_ms;
        rc = s->ops->wait_slice(s, lk, slice, &retry);
    }
    /* What a store kept in priv between slices (its waiting session). */
    if (rc != DLOCK_OK && lk->priv != NULL && s->ops->forget != NULL)
        s->ops->forget(s, lk);
    return rc;
}

dlock_rc dlock_acquire_len(dlock_lock **out, dlock_store *s, const char *name,
                           size_t name_len, const dlock_options *opts)
{
    static const dlock_options defaults = DLOCK_OPTIONS_INIT;
    struct dlock_lock *lk;
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

    pthread_once(&reg_once, reg_init);
    if (opts->auto_renew) {
        /* Before acquiring: failing to start the thread afterwards would
         * leave a lock held that nobody renews. */
        pthread_mutex_lock(&reg_mu);
        rc = renew_start_locked();
        pthread_mutex_unlock(&reg_mu);
        if (rc != DLOCK_OK)
            return rc;
    }

    lk = calloc(1, sizeof(*lk));
    if (lk == NULL)
        return dlock__enomem();
    lk->name = dlock__strndup(name, name_len);
    if (lk->name == NULL) {
        free(lk);
        return dlock__enomem();
    }
    rc = dlock__token(lk->token);
    if (rc != DLOCK_OK) {
        free(lk->name);
        free(lk);
        return rc;
    }
    pthread_mutex_init(&lk->mu, NULL);
    lk->store = s;
    lk->name_len = name_len;
    lk->ttl_ms = opts->ttl_ms;
    lk->shared = opts->shared != 0;
    lk->limit = opts->version >= 2 && opts->limit > 1 ? opts->limit : 1;
    lk->pid = getpid();
    lk->auto_renew = opts->auto_renew != 0;
    lk->on_lost = opts->on_lost;
    lk->payload = opts->payload;

    t0 = dlock__now_ms();
    deadline = opts->wait_ms == DLOCK_WAIT_FOREVER ? DLOCK_WAIT_FOREVER
                                                   : t0 + opts->wait_ms;
    for (int64_t outage = OUTAGE_FIRST_MS;; outage *= 2) {
        int64_t rem;

        if (opts->wait_ms != 0 && s->ops->wait_slice != NULL &&
            !s->poll_wait) {
            rc = slice_acquire(s, lk, deadline);
        } else {
            rc = poll_acquire(s, lk, deadline, opts->wait_ms == 0);
        }
        /* The store went away while we waited: a caller who asked to wait
         * waits for it to come back too, within the same deadline (the
         * stores reconnect on the next call).  A try-lock answers now. */
        if (rc != DLOCK_EUNAVAIL || opts->wait_ms == 0)
            break;
        if (outage > OUTAGE_MAX_MS)
            outage = OUTAGE_MAX_MS;
        rem = dlock__remaining_ms(deadline);
        if (rem <= outage)
            break; /* still unreachable at the deadline: say so */
        dlock__sleep_ms(outage);
    }
    if (rc != DLOCK_OK) {
        if (rc == DLOCK_BUSY && dlock_errmsg()[0] == '\0')
            dlock__seterr(DLOCK_BUSY, "lock '%s' is held by someone else",
                          lk->name);
        free_lock(lk);
        return rc;
    }
    /* lease_end was set before the successful attempt was sent: never
     * later than the store's, so loss is never noticed late. */
    t0 = dlock__now_ms();
    lk->next_renew = lk->lease_end - lk->ttl_ms + lk->ttl_ms / 3;
    if (lk->next_renew < t0)
        lk->next_renew = t0;
    lk->state = DLOCK_STATE_HELD;
    reg_add(lk);
    dlock__clearerr();
    *out = lk;
    return DLOCK_OK;
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

/* --- calls on a held lock -------------------------------------------- */

static int lock_usable(const struct dlock_lock *lk)
{
    if (lk == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock is NULL");
    if (lk->pid != getpid())
        return dlock__seterr(DLOCK_EINVAL,
                             "lock '%s' belongs to process %ld; a forked "
                             "child cannot use it",
                             lk->name, (long)lk->pid);
    return DLOCK_OK;
}

static int not_held(const struct dlock_lock *lk)
{
    if (lk->state == DLOCK_STATE_DETACHED)
        return dlock__seterr(DLOCK_LOST,
                             "lock '%s' is gone: its store was closed",
                             lk->name);
    return dlock__seterr(DLOCK_LOST, "lock '%s' was lost", lk->name);
}

dlock_rc dlock_extend(dlock_lock *lk, int64_t ttl_ms)
{
    struct dlock_store *s;
    dlock_lost_cb cb = NULL;
    int64_t t0, next = 0;
    int rc;

    dlock__clearerr();
    rc = lock_usable(lk);
    if (rc != DLOCK_OK)
        return rc;
    if (ttl_ms <= 0)
        ttl_ms = lk->ttl_ms;
    if (ttl_ms > TTL_MAX_MS || ttl_ms < DLOCK_TTL_MIN_MS)
        return dlock__seterr(DLOCK_EINVAL, "ttl_ms %lld is out of range",
                             (long long)ttl_ms);
    s = lk->store;
    pthread_mutex_lock(&lk->mu);
    if (lk->state != DLOCK_STATE_HELD) {
        rc = not_held(lk);
        pthread_mutex_unlock(&lk->mu);
        return rc;
    }
    t0 = dlock__now_ms();
    if (lapsed(lk, t0)) {
        rc = lapsed_err(lk);
        cb = mark_lost(lk);
        pthread_mutex_unlock(&lk->mu);
        if (cb != NULL)
            cb(lk, lk->payload);
        return rc;
    }
    rc = s->ops->extend(s, lk, ttl_ms);
    if (rc == DLOCK_OK) {
        lk->ttl_ms = ttl_ms;
        set_lease_end(lk, t0 + ttl_ms);
        next = t0 + ttl_ms / 3;
    } else if (rc == DLOCK_LOST) {
        cb = mark_lost(lk);
    }
    pthread_mutex_unlock(&lk->mu);
    if (next != 0)
        schedule(lk, next);
    if (cb != NULL)
        cb(lk, lk->payload);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}

dlock_rc dlock_assert_ttl(dlock_lock *lk, int64_t min_remaining_ms)
{
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
    if (lk->state != DLOCK_STATE_HELD) {
        rc = not_held(lk);
        pthread_mutex_unlock(&lk->mu);
        return rc;
    }
    if (lapsed(lk, dlock__now_ms())) {
        rc = lapsed_err(lk);
        cb = mark_lost(lk);
    } else {
        rc = s->ops->ttl_left(s, lk, &left);
        if (rc == DLOCK_LOST)
            cb = mark_lost(lk);
    }
    pthread_mutex_unlock(&lk->mu);
    if (cb != NULL)
        cb(lk, lk->payload);
    if (rc != DLOCK_OK)
        return rc;
    if (left < min_remaining_ms)
        return dlock__seterr(DLOCK_EXPIRING,
                             "lock '%s' has %lld ms of lease left, less "
                             "than %lld",
                             lk->name, (long long)left,
                             (long long)min_remaining_ms);
    dlock__clearerr();
    return DLOCK_OK;
}

/* Tell the store, whatever the state, so the store frees lk->priv. */
static int store_release(struct dlock_lock *lk)
{
    struct dlock_store *s = lk->store;
    int rc;

    if (lapsed(lk, dlock__now_ms())) {
        /* Tidy the store if it is still ours there (nobody waits for an
         * expired lease anyway), but the holder must hear it lapsed. */
        (void)s->ops->release(s, lk);
        lk->state = DLOCK_STATE_LOST;
        return lapsed_err(lk);
    }
    if (lk->state == DLOCK_STATE_HELD)
        return s->ops->release(s, lk);
    if (lk->state == DLOCK_STATE_LOST) {
        if (lk->priv != NULL) {
            if (s->ops->forget != NULL)
                s->ops->forget(s, lk);
            else
                (void)s->ops->release(s, lk);
        }
        return not_held(lk);
    }
    rc = not_held(lk);
    return rc;
}

dlock_rc dlock_release(dlock_lock *lk)
{
    int rc;

    dlock__clearerr();
    if (lk == NULL)
        return DLOCK_OK;
    if (lk->pid != getpid()) {
        /* A fork child's copy of its parent's lock: free our memory, never
         * touch the store (its connection is the parent's).  The store
         * frees its part the same way, so it needs no list of held locks
         * to keep that reachable. */
        rc = lock_usable(lk);
        pthread_mutex_lock(&reg_mu);
        reg_unlink_locked(lk);
        pthread_mutex_unlock(&reg_mu);
        if (lk->priv != NULL && lk->store->ops->forget_inherited != NULL)
            lk->store->ops->forget_inherited(lk->store, lk);
        free(lk->name);
        free(lk);
        return rc;
    }

    pthread_mutex_lock(&reg_mu);
    reg_unlink_locked(lk);
    /* Called from this lock's own on_lost callback on the renew thread,
     * which holds one ref: the renew thread frees it afterwards. */
    if (on_renew_thread && lk->refs > 0) {
        pthread_mutex_unlock(&reg_mu);
        pthread_mutex_lock(&lk->mu);
        rc = store_release(lk);
        lk->state = DLOCK_STATE_DETACHED;
        pthread_mutex_unlock(&lk->mu);
        pthread_mutex_lock(&reg_mu);
        lk->free_on_unref = 1;
        pthread_mutex_unlock(&reg_mu);
        return rc;
    }
    while (lk->refs > 0)
        pthread_cond_wait(&unref_cv, &reg_mu);
    pthread_mutex_unlock(&reg_mu);

    pthread_mutex_lock(&lk->mu);
    rc = store_release(lk);
    pthread_mutex_unlock(&lk->mu);
    free_lock(lk);
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

int dlock_is_lost(const dlock_lock *lk)
{
    int lost;

    if (lk == NULL)
        return 1;
    /* state is written under lk->mu; reading it under the same mutex keeps
     * the answer coherent with the last store call. */
    pthread_mutex_lock((pthread_mutex_t *)&lk->mu);
    lost = lk->state != DLOCK_STATE_HELD || lapsed(lk, dlock__now_ms());
    pthread_mutex_unlock((pthread_mutex_t *)&lk->mu);
    return lost;
}

/* --- store close, process exit --------------------------------------- */

/* Release (best effort) and detach every lock of this process for which
 * match(lk) holds; they stay allocated for their owners to free. */
static void detach_where(struct dlock_store *only)
{
    pid_t me = getpid();

    pthread_mutex_lock(&reg_mu);
    for (;;) {
        struct dlock_lock *lk;

        for (lk = reg_head; lk != NULL; lk = lk->next)
            if (lk->pid == me && lk->state != DLOCK_STATE_DETACHED &&
                lk->renewable >= 0 && (only == NULL || lk->store == only))
                break;
        if (lk == NULL)
            break;
        /* renewable = -1 marks "being detached" so the loop moves on. */
        lk->renewable = -1;
        while (lk->refs > 0 && !on_renew_thread)
            pthread_cond_wait(&unref_cv, &reg_mu);
        pthread_mutex_unlock(&reg_mu);
        pthread_mutex_lock(&lk->mu);
        (void)store_release(lk);
        lk->priv = NULL;
        lk->state = DLOCK_STATE_DETACHED;
        pthread_mutex_unlock(&lk->mu);
        pthread_mutex_lock(&reg_mu);
    }
    pthread_mutex_unlock(&reg_mu);
}

void dlock__registry_detach_store(struct dlock_store *s)
{
    pthread_once(&reg_once, reg_init);
    detach_where(s);
}

static void release_all_at_exit(void)
{
    int join = 0;

    pthread_mutex_lock(&reg_mu);
    at_exit = 1;
    if (renew_running) {
        renew_stop = 1;
        pthread_cond_broadcast(&reg_cv);
        /* exit() from an on_lost callback runs on the renew thread itself. */
        join = !on_renew_thread;
        renew_running = 0;
    }
    pthread_mutex_unlock(&reg_mu);
    if (join)
        pthread_join(renew_thr, NULL);
    detach_where(NULL);
}
