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
#include <stdio.h>
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


/* The clock-rate margin: a held lock is LOST this much before the end of
 * the lease the store granted (1/DRIFT_DIV of the lease, at least 1 ms).
 * Its rate is the clock-rate difference dlock assumes between the
 * holder's clock and the store's (docs/semantics.md): a lease measured on
 * a clock 1% slow still ends locally before it ends on the store. */
#define DRIFT_DIV DLOCK_DRIFT_DIV

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cv;   /* wakes the renew thread */
static pthread_cond_t lease_cv; /* wakes the lease thread */
static pthread_cond_t unref_cv; /* a lock's refs dropped */
static pthread_cond_t start_cv; /* a library thread is in its loop */
static struct dlock_lock *reg_head;
/* Two heaps of held locks, each by its own key (struct dlock_lock's
 * due[which]): the renew thread's holds the auto-renewed locks by when
 * each is due, the lease thread's holds every held lock by its lease end.
 * `want` places are reserved (one per lock from its acquire until it
 * leaves the registry), so putting a lock in never has to allocate. */
#define H_RENEW 0
#define H_LEASE 1
struct heap {
    struct dlock_lock **v;
    size_t len, cap, want;
    int which;
    pthread_cond_t *cv; /* signalled when a lock becomes the first due */
    /* When its thread, waiting on cv, will look at the heap again by
     * itself (INT64_MAX: only when woken); 0 while it is not waiting and
     * so will look before it waits again.  A lock due no earlier needs
     * no wake-up: an acquire after a release (the next lease ends a
     * little later than the last) costs the lease thread nothing. */
    int64_t sleep_until;
};
static struct heap heaps[2] = {{NULL, 0, 0, 0, H_RENEW, &reg_cv, 0},
                               {NULL, 0, 0, 0, H_LEASE, &lease_cv, 0}};
/* Leases renewed by the renew thread so far (for dlock-bench). */
static uint64_t renewals;
/* The two threads: [H_RENEW] renews, [H_LEASE] declares lapsed leases
 * LOST.  The lease thread never does I/O, so that a renewal stuck in a
 * store that stopped answering cannot delay it. */
static pthread_t thr[2];
static int thr_running[2];
static int thr_started[2]; /* reached its loop: its start-up is over */
static int thr_stop;
static int at_exit; /* atexit ran: no new thread */
static _Thread_local int on_lib_thread; /* 1 + H_RENEW or 1 + H_LEASE */

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
    pthread_cond_init(&lease_cv, &ca);
    pthread_cond_init(&unref_cv, &ca);
    pthread_cond_init(&start_cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* The child has no library threads, and the locks in the registry are its
 * parent's: it never renews or releases them (lock->pid tells).  The
 * condition variables are made anew: the parent's threads were waiting
 * on them, and a waiter that does not exist in the child would make the
 * child's first broadcast wait for it forever. */
static void fork_child(void)
{
    /* The parent's locks are never renewed or watched here. */
    for (int w = 0; w < 2; w++) {
        for (size_t i = 0; i < heaps[w].len; i++)
            heaps[w].v[i]->heap_idx[w] = SIZE_MAX;
        heaps[w].len = 0;
        thr_running[w] = 0;
        thr_started[w] = 0;
        heaps[w].sleep_until = 0;
    }
    pthread_mutex_init(&reg_mu, NULL);
    init_conds();
    thr_stop = 0;
}

static void reg_init(void)
{
    init_conds();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(release_all_at_exit);
}

/* A library thread sleeps on its heap's cv until when_ms (INT64_MAX: until
 * woken), saying so in the heap (heap_put reads it). */
static void heap_sleep(struct heap *h, int64_t when_ms)
{
    struct timespec ts;

    h->sleep_until = when_ms;
    if (when_ms == INT64_MAX) {
        pthread_cond_wait(h->cv, &reg_mu);
    } else {
        ts.tv_sec = (time_t)(when_ms / 1000);
        ts.tv_nsec = (long)(when_ms % 1000) * 1000000L;
        pthread_cond_timedwait(h->cv, &reg_mu, &ts);
    }
    h->sleep_until = 0;
}

/* --- loss ------------------------------------------------------------ */

/* lease_end is written under lk->mu but read by the threads' scans under
 * reg_mu only: relaxed atomics keep those reads whole. */
static int64_t lease_end_of(const struct dlock_lock *lk)
{
    return __atomic_load_n(&lk->lease_end, __ATOMIC_RELAXED);
}

int64_t dlock__drift_margin(int64_t ttl_ms)
{
    return ttl_ms / DRIFT_DIV > 0 ? ttl_ms / DRIFT_DIV : 1;
}

/* A lease of ttl_ms the store started no earlier than t0 (the request
 * left then) ends, for this process, at t0 + ttl_ms less the margin. */
static void set_lease_end(struct dlock_lock *lk, int64_t t0, int64_t ttl_ms)
{
    __atomic_store_n(&lk->lease_end, t0 + ttl_ms - dlock__drift_margin(ttl_ms),
                     __ATOMIC_RELAXED);
}

static int declared_lost(const struct dlock_lock *lk)
{
    return __atomic_load_n(&lk->lost_notified, __ATOMIC_ACQUIRE);
}

/* A held lock whose lease, as this process knows it, has run out without
 * a renewal: it is lost, whatever the store would still say.  Someone may
 * have held it meanwhile (taken and released again) and only the local
 * clock can tell the holder that its exclusion lapsed.  The lease end is
 * set before each successful request is sent, so it is never later than
 * the store's.  Once the lease thread has declared it lost, a renewal
 * answered late cannot bring it back. */
static int lapsed(const struct dlock_lock *lk, int64_t now)
{
    return DLOCK_STATE_GET(lk) == DLOCK_STATE_HELD &&
           (now >= lease_end_of(lk) || declared_lost(lk));
}

static int lapsed_err(const struct dlock_lock *lk)
{
    return dlock__seterr(DLOCK_LOST,
                         "lock '%s' was lost: its lease ran out before it "
                         "was renewed",
                         lk->name);
}

/* Declare lk lost, once: the callback to run, or NULL when it had been
 * declared before (or has none).  Either thread, mu held or not. */
static dlock_lost_cb declare_lost(struct dlock_lock *lk)
{
    if (__atomic_exchange_n(&lk->lost_notified, 1, __ATOMIC_ACQ_REL))
        return NULL;
    return lk->on_lost;
}

/* --- the heaps (all under reg_mu) ------------------------------------ */

static void heap_swap(struct heap *h, size_t a, size_t b)
{
    struct dlock_lock *t = h->v[a];

    h->v[a] = h->v[b];
    h->v[b] = t;
    h->v[a]->heap_idx[h->which] = a;
    h->v[b]->heap_idx[h->which] = b;
}

static void heap_up(struct heap *h, size_t i)
{
    int w = h->which;

    while (i > 0 && h->v[(i - 1) / 2]->due[w] > h->v[i]->due[w]) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(struct heap *h, size_t i)
{
    int w = h->which;

    for (;;) {
        size_t l = 2 * i + 1, m = i;

        if (l < h->len && h->v[l]->due[w] < h->v[m]->due[w])
            m = l;
        if (l + 1 < h->len && h->v[l + 1]->due[w] < h->v[m]->due[w])
            m = l + 1;
        if (m == i)
            return;
        heap_swap(h, i, m);
        i = m;
    }
}

static void heap_remove(struct heap *h, struct dlock_lock *lk)
{
    size_t i = lk->heap_idx[h->which];

    if (i == SIZE_MAX)
        return;
    lk->heap_idx[h->which] = SIZE_MAX;
    if (i != --h->len) {
        struct dlock_lock *moved = h->v[h->len];

        h->v[i] = moved;
        moved->heap_idx[h->which] = i;
        heap_up(h, i);
        heap_down(h, moved->heap_idx[h->which]);
    }
}

/* Put lk in heap h (or move it) to be due at `due`, if that heap's thread
 * is to look after it.  Wakes the thread when lk became the first due. */
static void heap_put(struct heap *h, struct dlock_lock *lk, int64_t due)
{
    int w = h->which;

    if (!lk->heap_slot[w] || lk->renewable <= 0 || lk->gen != dlock__generation() ||
        (w == H_RENEW && !lk->auto_renew)) {
        heap_remove(h, lk);
        return;
    }
    lk->due[w] = due;
    if (lk->heap_idx[w] == SIZE_MAX) {
        lk->heap_idx[w] = h->len;
        h->v[h->len++] = lk; /* reserved: len <= want <= cap */
    }
    heap_up(h, lk->heap_idx[w]);
    heap_down(h, lk->heap_idx[w]);
    if (lk->heap_idx[w] == 0 && due < h->sleep_until)
        pthread_cond_broadcast(h->cv);
}

/* Reserve lk's place in heap h (at acquire, before the store call). */
static int heap_reserve(struct heap *h, struct dlock_lock *lk)
{
    if (h->want + 1 > h->cap) {
        size_t cap = h->cap < 64 ? 64 : 2 * h->cap;
        struct dlock_lock **v = realloc(h->v, cap * sizeof(*v));

        if (v == NULL)
            return dlock__enomem();
        h->v = v;
        h->cap = cap;
    }
    h->want++;
    lk->heap_slot[h->which] = 1;
    return DLOCK_OK;
}

static void heap_unreserve(struct heap *h, struct dlock_lock *lk)
{
    heap_remove(h, lk);
    if (lk->heap_slot[h->which]) {
        lk->heap_slot[h->which] = 0;
        h->want--;
    }
}

/* Both heaps by lk's schedule: the renew thread's at its renewal time (at
 * the latest its lease end), the lease thread's at its lease end. */
static void heap_set(struct dlock_lock *lk)
{
    int64_t end = lease_end_of(lk);

    heap_put(&heaps[H_RENEW], lk,
             lk->next_renew < end ? lk->next_renew : end);
    heap_put(&heaps[H_LEASE], lk, end);
}

static void heaps_remove(struct dlock_lock *lk)
{
    heap_remove(&heaps[H_RENEW], lk);
    heap_remove(&heaps[H_LEASE], lk);
}

/* Mark lk lost (caller holds lk->mu).  Returns the callback to run once
 * the caller has dropped its locks, or NULL. */
static dlock_lost_cb mark_lost(struct dlock_lock *lk)
{
    DLOCK_STATE_SET(lk, DLOCK_STATE_LOST);
    pthread_mutex_lock(&reg_mu);
    lk->renewable = 0;
    heaps_remove(lk);
    pthread_mutex_unlock(&reg_mu);
    return declare_lost(lk);
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

    if (rc == DLOCK_OK && !lapsed(lk, now)) {
        /* The lease counts from when the request left, not when the
         * answer came: the store may have started it any time between. */
        set_lease_end(lk, t0, lk->ttl_ms);
        d->next = t0 + lk->ttl_ms / 3;
        __atomic_add_fetch(&renewals, 1, __ATOMIC_RELAXED);
    } else if (rc == DLOCK_OK || rc == DLOCK_LOST || lapsed(lk, now)) {
        /* An answer that came after the lease ended here is too late:
         * the holder has been told (or is being told) it lost the lock. */
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
        if (DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD) {
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
    /* Past the last of their leases, renewing them is of no use. */
    for (size_t i = 0; i < k; i++)
        if (lease_end_of(locks[i]) > dlock__io_deadline)
            dlock__io_deadline = lease_end_of(locks[i]);
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

/* Drop a library thread's ref on lk (caller holds reg_mu): the last ref
 * of a lock released from its own on_lost callback frees it. */
static void unref_locked(struct dlock_lock *lk)
{
    if (--lk->refs == 0 && lk->free_on_unref)
        free_lock(lk);
}

static void *renew_main(void *arg)
{
    /* On the stack (32 KiB), not allocated: a failure would have nobody
     * to tell. */
    struct due d[RENEW_PASS_MAX];
    struct heap *h = &heaps[H_RENEW];

    (void)arg;
    on_lib_thread = 1 + H_RENEW;
#ifdef __linux__
    /* Named, so a profiler or dlock-bench can find its CPU time. */
    (void)prctl(PR_SET_NAME, "dlock-renew", 0, 0, 0);
#endif
    pthread_mutex_lock(&reg_mu);
    thr_started[H_RENEW] = 1;
    pthread_cond_broadcast(&start_cv);
    while (!thr_stop) {
        int64_t now = dlock__now_ms();
        size_t n = 0;

        if (h->len == 0) {
            heap_sleep(h, INT64_MAX);
            continue;
        }
        if (h->v[0]->due[H_RENEW] > now) {
            heap_sleep(h, h->v[0]->due[H_RENEW]);
            continue;
        }
        /* Due at its renewal time, and at the latest when its lease ends.
         * Those due a little later come along. */
        while (h->len > 0 && n < RENEW_PASS_MAX) {
            struct dlock_lock *lk = h->v[0];

            /* ttl_ms: dlock_extend() writes it under mu only. */
            if (lk->due[H_RENEW] >
                now + __atomic_load_n(&lk->ttl_ms, __ATOMIC_RELAXED) /
                          RENEW_EARLY_DIV)
                break;
            /* Out of the heap (not picked again) until renewed. */
            heap_remove(h, lk);
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
                heap_put(h, d[i].lk, d[i].next);
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
        for (size_t i = 0; i < n; i++)
            unref_locked(d[i].lk);
        pthread_cond_broadcast(&unref_cv);
    }
    pthread_mutex_unlock(&reg_mu);
    return NULL;
}

/* The lease thread: declares a held lock LOST at its lease end (this
 * process's, the margin taken) unless a renewal confirmed a later one by
 * then.  It never calls a store, and takes no lock's mu, so a renewal
 * stuck in a store that stopped answering (a cut network) cannot delay
 * it: the holder hears of the loss when its lease ends, not when the
 * store's timeout fires. */
static void *lease_main(void *arg)
{
    struct heap *h = &heaps[H_LEASE];

    (void)arg;
    on_lib_thread = 1 + H_LEASE;
#ifdef __linux__
    (void)prctl(PR_SET_NAME, "dlock-lease", 0, 0, 0);
#endif
    pthread_mutex_lock(&reg_mu);
    thr_started[H_LEASE] = 1;
    pthread_cond_broadcast(&start_cv);
    while (!thr_stop) {
        int64_t now = dlock__now_ms(), end;
        struct dlock_lock *lk;
        dlock_lost_cb cb;

        if (h->len == 0) {
            heap_sleep(h, INT64_MAX);
            continue;
        }
        lk = h->v[0];
        if (lk->due[H_LEASE] > now) {
            heap_sleep(h, lk->due[H_LEASE]);
            continue;
        }
        end = lease_end_of(lk);
        if (end > now) {
            heap_put(h, lk, end); /* renewed since it was put here */
            continue;
        }
        heap_remove(h, lk);
        cb = declare_lost(lk);
        if (cb == NULL)
            continue;
        lk->refs++;
        pthread_mutex_unlock(&reg_mu);
        cb(lk, lk->payload);
        pthread_mutex_lock(&reg_mu);
        unref_locked(lk);
        pthread_cond_broadcast(&unref_cv);
    }
    pthread_mutex_unlock(&reg_mu);
    return NULL;
}

/* Start thread `which` if it is not running (caller holds reg_mu). */
static int thread_start_locked(int which)
{
    static const char *const what[2] = {"renew", "lease"};
    int err;

    if (thr_running[which])
        return DLOCK_OK;
    if (at_exit)
        return dlock__seterr(DLOCK_EINVAL, "the process is exiting");
    thr_stop = 0;
    err = pthread_create(&thr[which], NULL,
                         which == H_RENEW ? renew_main : lease_main, NULL);
    if (err != 0)
        return dlock__seterr(err == ENOMEM ? DLOCK_ENOMEM : DLOCK_EINVAL,
                             "cannot start the %s thread: %s", what[which],
                             strerror(err));
    thr_running[which] = 1;
    /* Wait until the thread is in its loop (waiting on reg_mu, which
     * this wait lets go of): its start-up, which allocates, is over
     * before the caller can fork.  A child forked while another thread
     * allocates can find the allocator locked (sanitizers' allocators
     * have no fork handlers) and hang at its first malloc. */
    while (!thr_started[which])
        pthread_cond_wait(&start_cv, &reg_mu);
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
    /* From here on lease_end is the end this process enforces: the
     * store's less the clock-rate margin. */
    __atomic_store_n(&lk->lease_end,
                     lk->lease_end - dlock__drift_margin(lk->ttl_ms),
                     __ATOMIC_RELAXED);
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
    heap_unreserve(&heaps[H_RENEW], lk);
    heap_unreserve(&heaps[H_LEASE], lk);
}

/* --- what acquire.c needs of the registry ------------------------------ */

int dlock__registry_start(int auto_renew)
{
    int rc;

    pthread_once(&reg_once, reg_init);
    pthread_mutex_lock(&reg_mu);
    rc = thread_start_locked(H_LEASE);
    if (rc == DLOCK_OK && auto_renew)
        rc = thread_start_locked(H_RENEW);
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

int dlock__registry_reserve(struct dlock_lock *lk, int auto_renew)
{
    int rc;

    pthread_mutex_lock(&reg_mu);
    rc = heap_reserve(&heaps[H_LEASE], lk);
    if (rc == DLOCK_OK && auto_renew) {
        rc = heap_reserve(&heaps[H_RENEW], lk);
        if (rc != DLOCK_OK)
            heap_unreserve(&heaps[H_LEASE], lk);
    }
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

void dlock__registry_unreserve(struct dlock_lock *lk)
{
    pthread_mutex_lock(&reg_mu);
    heap_unreserve(&heaps[H_RENEW], lk);
    heap_unreserve(&heaps[H_LEASE], lk);
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
    if (lk->gen != dlock__generation())
        return dlock__seterr(DLOCK_EINVAL,
                             "lock '%s' belongs to process %ld; a forked "
                             "child cannot use it",
                             lk->name, (long)lk->pid);
    return DLOCK_OK;
}

static int not_held(const struct dlock_lock *lk)
{
    if (DLOCK_STATE_GET(lk) == DLOCK_STATE_DETACHED)
        return dlock__seterr(DLOCK_LOST,
                             "lock '%s' is gone: its store was closed",
                             lk->name);
    return dlock__seterr(DLOCK_LOST, "lock '%s' was lost", lk->name);
}

/* on_lost, called on the caller's thread from inside an API call: the
 * callback may call the library, which sets this thread's error message;
 * the call it interrupted still returns with its own. */
static void tell_lost(struct dlock_lock *lk, dlock_lost_cb cb)
{
    char saved[512];

    snprintf(saved, sizeof(saved), "%s", dlock_errmsg());
    cb(lk, lk->payload);
    (void)dlock__seterr(DLOCK_OK, "%s", saved);
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
    if (DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD) {
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
            tell_lost(lk, cb);
        return rc;
    }
    dlock__io_deadline = lease_end_of(lk);
    rc = s->ops->extend(s, lk, ttl_ms);
    dlock__io_deadline = 0;
    if (rc != DLOCK_LOST && lapsed(lk, dlock__now_ms())) {
        /* Answered (or failed) after the lease ended here: too late. */
        rc = lapsed_err(lk);
        cb = mark_lost(lk);
    } else if (rc == DLOCK_OK) {
        __atomic_store_n(&lk->ttl_ms, ttl_ms, __ATOMIC_RELAXED);
        set_lease_end(lk, t0, ttl_ms);
        next = t0 + ttl_ms / 3;
    } else if (rc == DLOCK_LOST) {
        cb = mark_lost(lk);
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
 * was closed under it still refuses). */
int dlock__lock_call(struct dlock_lock *lk, int held_only,
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
    if (held_only && lapsed(lk, dlock__now_ms())) {
        rc = lapsed_err(lk);
        cb = mark_lost(lk);
    } else {
        dlock__io_deadline = held_only ? lease_end_of(lk)
                                       : dlock__now_ms() + lk->ttl_ms / 3;
        rc = fn(lk->store, lk, arg);
        dlock__io_deadline = 0;
        if (rc == DLOCK_LOST && held_only)
            cb = mark_lost(lk);
    }
    pthread_mutex_unlock(&lk->mu);
    if (cb != NULL)
        tell_lost(lk, cb);
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
    if (DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD) {
        rc = not_held(lk);
        pthread_mutex_unlock(&lk->mu);
        return rc;
    }
    if (lapsed(lk, dlock__now_ms())) {
        rc = lapsed_err(lk);
        cb = mark_lost(lk);
    } else {
        dlock__io_deadline = lease_end_of(lk);
        rc = s->ops->ttl_left(s, lk, &left);
        dlock__io_deadline = 0;
        if (rc == DLOCK_LOST)
            cb = mark_lost(lk);
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
                             lk->name, (long long)left,
                             (long long)min_remaining_ms);
    dlock__clearerr();
    return DLOCK_OK;
}

/* A release-like store call (release, forget) whose I/O ends at
 * `deadline` (dlock__io_bound) whatever the URL's timeout says. */
static int call_until(struct dlock_lock *lk, int64_t deadline,
                      int (*op)(struct dlock_store *, struct dlock_lock *))
{
    int rc;

    dlock__io_deadline = deadline;
    rc = op(lk->store, lk);
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

/* Tell the store, whatever the state, so the store frees lk->priv. */
static int store_release(struct dlock_lock *lk)
{
    struct dlock_store *s = lk->store;
    int rc;

    if (lapsed(lk, dlock__now_ms())) {
        /* Tidy the store if it is still ours there (nobody waits for an
         * expired lease anyway), but the holder must hear it lapsed.
         * Best effort, so briefly: a store cut off must not keep the
         * holder (dlock run, say) for the URL's whole timeout. */
        (void)call_until(lk, dlock__now_ms() + lk->ttl_ms / 3,
                         s->ops->release);
        DLOCK_STATE_SET(lk, DLOCK_STATE_LOST);
        return lapsed_err(lk);
    }
    if (DLOCK_STATE_GET(lk) == DLOCK_STATE_HELD) {
        /* Past the lease the store lets go by itself. */
        return call_until(lk, lease_end_of(lk), s->ops->release);
    }
    if (DLOCK_STATE_GET(lk) == DLOCK_STATE_LOST) {
        if (lk->priv != NULL) {
            /* Tidying, as for a lapsed lease above: briefly. */
            (void)call_until(lk, dlock__now_ms() + lk->ttl_ms / 3,
                             forget_or_release);
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
    if (lk->gen != dlock__generation()) {
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
    /* Called from this lock's own on_lost callback on a library thread,
     * which holds one ref: that thread frees it afterwards. */
    if (on_lib_thread && lk->refs > 0) {
        pthread_mutex_unlock(&reg_mu);
        pthread_mutex_lock(&lk->mu);
        rc = store_release(lk);
        DLOCK_STATE_SET(lk, DLOCK_STATE_DETACHED);
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

/* What is left of lk's lease as this process knows it, 0 when lost.
 * Without lk->mu (a renewal may hold it, stuck in a store that stopped
 * answering): state is read whole, and a lock is never HELD again once it
 * was not. */
static int64_t lease_left(const struct dlock_lock *lk)
{
    int64_t left;

    if (DLOCK_STATE_GET(lk) != DLOCK_STATE_HELD ||
        declared_lost(lk))
        return 0;
    left = lease_end_of(lk) - dlock__now_ms();
    return left > 0 ? left : 0;
}

int dlock_is_lost(const dlock_lock *lk)
{
    return lk == NULL || lease_left(lk) == 0;
}

int64_t dlock_lease_left(const dlock_lock *lk)
{
    return lk == NULL ? 0 : lease_left(lk);
}

/* --- store close, process exit --------------------------------------- */

/* Release (best effort) and detach every lock of this process for which
 * match(lk) holds; they stay allocated for their owners to free. */
static void detach_where(struct dlock_store *only)
{
    uint64_t me = dlock__generation();

    pthread_mutex_lock(&reg_mu);
    for (;;) {
        struct dlock_lock *lk;

        for (lk = reg_head; lk != NULL; lk = lk->next)
            if (lk->gen == me &&
                DLOCK_STATE_GET(lk) != DLOCK_STATE_DETACHED &&
                lk->renewable >= 0 && (only == NULL || lk->store == only))
                break;
        if (lk == NULL)
            break;
        /* renewable = -1 marks "being detached" so the loop moves on. */
        lk->renewable = -1;
        heaps_remove(lk);
        while (lk->refs > 0 && !on_lib_thread)
            pthread_cond_wait(&unref_cv, &reg_mu);
        pthread_mutex_unlock(&reg_mu);
        pthread_mutex_lock(&lk->mu);
        (void)store_release(lk);
        lk->priv = NULL;
        DLOCK_STATE_SET(lk, DLOCK_STATE_DETACHED);
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
    int join[2] = {0, 0};

    /* A child the fork handlers never ran in (_Fork(), a raw clone()
     * without CLONE_VM, a vfork() child calling exit()) has its parent's
     * generation, registry and thread bookkeeping: joining threads that
     * do not exist here would hang, and the registry's locks are the
     * parent's, on the parent's connections.  Its real pid tells it from
     * the process the library cached (dlock__pid(), refreshed by those
     * handlers only); nothing here is its own. */
    if (getpid() != dlock__pid())
        return;
    pthread_mutex_lock(&reg_mu);
    at_exit = 1;
    thr_stop = 1;
    pthread_cond_broadcast(&reg_cv);
    pthread_cond_broadcast(&lease_cv);
    for (int w = 0; w < 2; w++) {
        /* exit() from an on_lost callback runs on a library thread. */
        join[w] = thr_running[w] && on_lib_thread != 1 + w;
        thr_running[w] = 0;
    }
    pthread_mutex_unlock(&reg_mu);
    for (int w = 0; w < 2; w++)
        if (join[w])
            pthread_join(thr[w], NULL);
    detach_where(NULL);
}
