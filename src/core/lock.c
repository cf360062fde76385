/*
 * lock.c - what happens to a held lock: the registry, renewal, loss,
 * release, atexit and fork (acquiring and waiting: acquire.c).
 *
 * Every held lock of this process is in one registry (a list behind
 * reg_mu).  The registry exists for three reasons: the renew thread finds
 * the leases due for renewal in it, the atexit handler walks it to release
 * what the program forgot, and closing a store detaches the locks taken
 * through it.  The auto-renewed locks are also in a min-heap keyed by when
 * each is due (its renewal time, and at the latest its lease end), so the
 * renew thread looks at the due ones only, never at all of them.  A fork
 * child inherits the registry: its parent's locks stay listed there (never renewed or released by the child) until the child
 * frees them with dlock_release(), which hands them to the store's
 * forget_inherited().
 *
 * Locking order: reg_mu may be taken while holding a lock's mu, never the
 * other way round.  A lock's
 * mu serialises store calls on that lock (user thread against renew
 * thread); reg_mu protects the list, the heap, the scheduling fields
 * (next_renew, due, heap_idx, renewable, refs) and the renew thread's
 * state.  Store calls never run under reg_mu, so a slow store cannot stall
 * the registry.
 *
 * The renew thread renews in batches: the locks due now (and those due
 * soon after, which join early) are grouped by store, and each group is
 * one extend_many() call, one round trip, while the thread holds the mu
 * of every lock in it.  It takes those with pthread_mutex_trylock() only:
 * a user thread may hold one lock's mu and wait for another's (a callback,
 * a program's own order), and the renew thread must never be the other
 * half of that.  A lock whose mu is busy is simply looked at again a few
 * milliseconds later.  on_lost callbacks run after every mu is dropped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "store.h"

/* A lease may not be longer than a year: longer ones are surely a unit
 * mistake, and keeping all arithmetic far from overflow is simpler.
 * (Stores rely on this bound: store.h.) */
#define TTL_MAX_MS DLOCK_TTL_MAX_MS

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


static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cv;   /* wakes the renew thread */
static pthread_cond_t unref_cv; /* a lock's refs dropped */
static struct dlock_lock *reg_head;
/* The heap of auto-renewed locks by due time.  heap_want places are
 * reserved (one per auto-renewed lock from its acquire until it leaves
 * the registry), so putting a lock in never has to allocate. */
static struct dlock_lock **heap;
static size_t heap_len, heap_cap, heap_want;
/* Leases renewed by the renew thread so far (for dlock-bench). */
static uint64_t renewals;
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
    /* The parent's locks are never renewed here: out of the heap. */
    for (size_t i = 0; i < heap_len; i++)
        heap[i]->heap_idx = SIZE_MAX;
    heap_len = 0;
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

/* --- the heap of due locks (all under reg_mu) ------------------------ */

static int64_t due_of(const struct dlock_lock *lk)
{
    int64_t end = lease_end_of(lk);

    return lk->next_renew < end ? lk->next_renew : end;
}

static void heap_swap(size_t a, size_t b)
{
    struct dlock_lock *t = heap[a];

    heap[a] = heap[b];
    heap[b] = t;
    heap[a]->heap_idx = a;
    heap[b]->heap_idx = b;
}

static void heap_up(size_t i)
{
    while (i > 0 && heap[(i - 1) / 2]->due > heap[i]->due) {
        heap_swap(i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;

        if (l < heap_len && heap[l]->due < heap[m]->due)
            m = l;
        if (l + 1 < heap_len && heap[l + 1]->due < heap[m]->due)
            m = l + 1;
        if (m == i)
            return;
        heap_swap(i, m);
        i = m;
    }
}

static void heap_remove(struct dlock_lock *lk)
{
    size_t i = lk->heap_idx;

    if (i == SIZE_MAX)
        return;
    lk->heap_idx = SIZE_MAX;
    if (i != --heap_len) {
        struct dlock_lock *moved = heap[heap_len];

        heap[i] = moved;
        moved->heap_idx = i;
        heap_up(i);
        heap_down(moved->heap_idx);
    }
}

/* Put lk in the heap (or move it) to be due at `due`, if the renew
 * thread is to renew it.  Wakes the thread when lk became the first due. */
static void heap_put(struct dlock_lock *lk, int64_t due)
{
    if (!lk->heap_slot || lk->renewable <= 0 || !lk->auto_renew ||
        lk->pid != getpid()) {
        heap_remove(lk);
        return;
    }
    lk->due = due;
    if (lk->heap_idx == SIZE_MAX) {
        lk->heap_idx = heap_len;
        heap[heap_len++] = lk; /* reserved: heap_len <= heap_want <= cap */
    }
    heap_up(lk->heap_idx);
    heap_down(lk->heap_idx);
    if (lk->heap_idx == 0)
        pthread_cond_broadcast(&reg_cv);
}

/* Reserve lk's place in the heap (at acquire, before the store call). */
static int heap_reserve(struct dlock_lock *lk)
{
    if (heap_want + 1 > heap_cap) {
        size_t cap = heap_cap < 64 ? 64 : 2 * heap_cap;
        struct dlock_lock **h = realloc(heap, cap * sizeof(*h));

        if (h == NULL)
            return dlock__enomem();
        heap = h;
        heap_cap = cap;
    }
    heap_want++;
    lk->heap_slot = 1;
    return DLOCK_OK;
}

/* As heap_put, due by its schedule: its renewal time, and at the latest
 * its lease end. */
static void heap_set(struct dlock_lock *lk)
{
    heap_put(lk, due_of(lk));
}

static void heap_unreserve(struct dlock_lock *lk)
{
    heap_remove(lk);
    if (lk->heap_slot) {
        lk->heap_slot = 0;
        heap_want--;
    }
}

/* Mark lk lost (caller holds lk->mu).  Returns the callback to run once
 * the caller has dropped its locks, or NULL. */
static dlock_lost_cb mark_lost(struct dlock_lock *lk)
{
    lk->state = DLOCK_STATE_LOST;
    pthread_mutex_lock(&reg_mu);
    lk->renewable = 0;
    heap_remove(lk);
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
    heap_set(lk);
    pthread_mutex_unlock(&reg_mu);
}

/* --- the renew thread ------------------------------------------------ */

/* One due lock of a pass: what became of it. */
struct due {
    struct dlock_lock *lk;
    int64_t next;     /* renew again then; 0: not at all */
    dlock_lost_cb cb; /* to run once every mu is dropped */
    int busy;         /* a user thread had its mu: due at next, exactly */
    int done;
};

/* The outcome of a renewal sent at t0 that answered rc at now (caller
 * holds lk->mu), as one lock's extend has always been handled. */
static void renewed(struct due *d, int rc, int64_t t0, int64_t now)
{
    struct dlock_lock *lk = d->lk;

    if (rc == DLOCK_OK) {
        /* The lease counts from when the request left, not when the
         * answer came: the store may have started it any time between. */
        set_lease_end(lk, t0 + lk->ttl_ms);
        d->next = t0 + lk->ttl_ms / 3;
        __atomic_add_fetch(&renewals, 1, __ATOMIC_RELAXED);
    } else if (rc == DLOCK_LOST || now >= lease_end_of(lk)) {
        d->cb = mark_lost(lk);
    } else {
        /* Transient (store unreachable): try again soon, while the lease
         * we know of still runs.  When it has run out the lock is lost. */
        int64_t left = lease_end_of(lk) - now;

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
        struct dlock_lock *lk = d[i]->lk;

        if (pthread_mutex_trylock(&lk->mu) != 0) {
            /* A user thread is in a call on it: look again shortly (not
             * at once, even if its lease has ended meanwhile: the thread
             * would only spin on the same mu). */
            d[i]->next = t0 + RENEW_BUSY_MS;
            d[i]->busy = 1;
            continue;
        }
        if (lk->state != DLOCK_STATE_HELD) {
            pthread_mutex_unlock(&lk->mu);
            continue;
        }
        if (lapsed(lk, t0)) {
            /* Renewal fell behind (a stalled store): too late to extend,
             * whatever the store would answer. */
            d[i]->cb = mark_lost(lk);
            pthread_mutex_unlock(&lk->mu);
            continue;
        }
        locks[k] = lk;
        mine[k++] = d[i];
    }
    if (k == 0)
        return;
    if (s->ops->extend_many != NULL) {
        rc = s->ops->extend_many(s, locks, k, rcs);
        if (rc != DLOCK_OK)
            for (size_t i = 0; i < k; i++)
                rcs[i] = rc;
    } else {
        for (size_t i = 0; i < k; i++)
            rcs[i] = s->ops->extend(s, locks[i], locks[i]->ttl_ms);
    }
    now = dlock__now_ms();
    for (size_t i = 0; i < k; i++) {
        renewed(mine[i], rcs[i], t0, now);
        pthread_mutex_unlock(&locks[i]->mu);
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

static void free_lock(struct dlock_lock *lk)
{
    pthread_mutex_destroy(&lk->mu);
    free(lk->name);
    free(lk);
}

static void *renew_main(void *arg)
{
    /* On the stack (32 KiB), not allocated: a failure would have nobody
     * to tell. */
    struct due d[RENEW_PASS_MAX];

    (void)arg;
    on_renew_thread = 1;
#ifdef __linux__
    /* Named, so a profiler or dlock-bench can find its CPU time. */
    (void)prctl(PR_SET_NAME, "dlock-renew", 0, 0, 0);
#endif
    pthread_mutex_lock(&reg_mu);
    while (!renew_stop) {
        int64_t now = dlock__now_ms();
        size_t n = 0;

        if (heap_len == 0) {
            pthread_cond_wait(&reg_cv, &reg_mu);
            continue;
        }
        if (heap[0]->due > now) {
            cond_wait_until(&reg_cv, heap[0]->due);
            continue;
        }
        /* Due at its renewal time, and at the latest when its lease ends:
         * a lock whose renewal fell behind is reported LOST then, not
         * whenever the thread gets round to it.  Those due a little later
         * come along. */
        while (heap_len > 0 && n < RENEW_PASS_MAX) {
            struct dlock_lock *lk = heap[0];

            if (lk->due > now + lk->ttl_ms / RENEW_EARLY_DIV)
                break;
            /* Out of the heap (not picked again) until renewed. */
            heap_remove(lk);
            lk->refs++;
            d[n].lk = lk;
            d[n].next = 0;
            d[n].cb = NULL;
            d[n].busy = 0;
            d[n++].done = 0;
        }
        pthread_mutex_unlock(&reg_mu);
        renew_pass(d, n);
        pthread_mutex_lock(&reg_mu);
        for (size_t i = 0; i < n; i++) {
            if (d[i].next == 0)
                continue;
            if (d[i].busy) {
                heap_put(d[i].lk, d[i].next);
                continue;
            }
            d[i].lk->next_renew = d[i].next;
            heap_set(d[i].lk);
        }
        for (size_t i = 0; i < n; i++) {
            /* An earlier callback may have released this lock: its owner
             * no longer wants to hear of it. */
            if (d[i].cb == NULL || d[i].lk->free_on_unref)
                continue;
            pthread_mutex_unlock(&reg_mu);
            d[i].cb(d[i].lk, d[i].lk->payload);
            pthread_mutex_lock(&reg_mu);
        }
        for (size_t i = 0; i < n; i++) {
            struct dlock_lock *lk = d[i].lk;

            if (--lk->refs == 0 && lk->free_on_unref)
                free_lock(lk);
        }
        pthread_cond_broadcast(&unref_cv);
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
    heap_set(lk);
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
    heap_unreserve(lk);
}

/* --- what acquire.c needs of the registry ------------------------------ */

int dlock__registry_start(int auto_renew)
{
    int rc = DLOCK_OK;

    pthread_once(&reg_once, reg_init);
    if (auto_renew) {
        pthread_mutex_lock(&reg_mu);
        rc = renew_start_locked();
        pthread_mutex_unlock(&reg_mu);
    }
    return rc;
}

int dlock__registry_reserve(struct dlock_lock *lk)
{
    int rc;

    pthread_mutex_lock(&reg_mu);
    rc = heap_reserve(lk);
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

void dlock__registry_unreserve(struct dlock_lock *lk)
{
    pthread_mutex_lock(&reg_mu);
    heap_unreserve(lk);
    pthread_mutex_unlock(&reg_mu);
}

void dlock__registry_add(struct dlock_lock *lk)
{
    reg_add(lk);
}

void dlock__lock_free(struct dlock_lock *lk)
{
    free_lock(lk);
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
        heap_remove(lk);
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

uint64_t dlock__renewals(void)
{
    return __atomic_load_n(&renewals, __ATOMIC_RELAXED);
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
