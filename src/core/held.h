/*
 * held.h - the core's own record of a lock (core only: no store includes
 * this).
 *
 * struct dlock__held wraps the store's view (struct dlock_lock, store.h)
 * as its first member, so the public dlock_lock handle, the view a store
 * is given and the core's record are one allocation:
 *
 *     struct dlock__held *h = dlock__held_of(lk);   // view -> record
 *     struct dlock_lock *lk = &h->view;             // record -> view
 *
 * Locking: `mu` serialises store calls on the lock (a user thread against
 * the renew thread); the registry mutex (regstate.c) guards the
 * scheduling fields (next_renew, due, heap_idx, heap_slot, renewable,
 * refs, free_on_unref, prev/next).  Order: the registry mutex may be
 * taken while holding mu, never the other way round.
 */
#ifndef DLOCK_CORE_HELD_H
#define DLOCK_CORE_HELD_H

#ifdef DLOCK__STORE_SOURCE
#error "held.h is the core's own: stores see store.h only"
#endif

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlock.h"
#include "store.h"

/* Lock states. */
enum dlock_state {
    DLOCK_STATE_HELD = 0,
    DLOCK_STATE_LOST,
    DLOCK_STATE_DETACHED /* its store was closed under it */
};

/* h->state is written under h->mu but read without it (lease_left(),
 * the registry scans): every access goes through these two. */
#define DLOCK_STATE_GET(h) __atomic_load_n(&(h)->state, __ATOMIC_ACQUIRE)
#define DLOCK_STATE_SET(h, v)                                                  \
    __atomic_store_n(&(h)->state, (v), __ATOMIC_RELEASE)

struct dlock__held {
    struct dlock_lock view; /* what the store sees: first, always */
    struct dlock_store *store;
    pthread_mutex_t mu; /* serialises store calls on this lock */
    pid_t pid;          /* the owning process (for messages) */
    uint64_t gen;       /* its dlock__generation() */
    enum dlock_state state;
    int lost_notified; /* declared lost (atomic: the lease thread sets
                        * it without mu); on_lost ran or is running */
    dlock_lost_cb on_lost;
    void *payload;
    /* view.lease_end, once held: the store's end less the clock-rate
     * margin (lease.c), the moment the lock is LOST; written under mu
     * with relaxed atomics, read by the threads' scans without mu. */
    int64_t next_renew; /* monotonic ms */
    /* under the registry mutex: two heaps, [0] the renew thread's (key:
     * min(next_renew, lease_end)), [1] the lease thread's (key: lease_end
     * when last looked at) */
    int64_t due[2];
    size_t heap_idx[2]; /* place in each heap, or SIZE_MAX */
    int heap_slot[2];   /* a place in that heap is reserved for it */
    unsigned refs;      /* library threads (and store close) using it now */
    int renewable;      /* the renew thread may pick it */
    int free_on_unref;  /* released from its own on_lost callback */
    int run_begun;      /* dlock_run_begin() recorded a run (under mu) */
    char *value;        /* a candidate's value (view.value points here,
                         * or is NULL for ""), changed under mu */
    struct dlock__held *prev, *next; /* registry list */
};

/* The core's record of the lock whose view (or public handle) lk is;
 * NULL for NULL.  The view is the first member, so this is a cast (C11
 * 6.7.2.1: a pointer to a struct points to its first member, and back). */
_Static_assert(offsetof(struct dlock__held, view) == 0,
               "the view must be the first member");
static inline struct dlock__held *dlock__held_of(struct dlock_lock *lk)
{
    return (struct dlock__held *)(void *)lk;
}
static inline const struct dlock__held *
dlock__held_of_const(const struct dlock_lock *lk)
{
    return (const struct dlock__held *)(const void *)lk;
}

/* A store call on lk under its mu (held.c); held_only: lk must be held
 * (a lapsed lease or DLOCK_LOST marks it lost, as dlock_assert_ttl()).
 * fn gets the store's view of the lock. */
int dlock__lock_call(struct dlock__held *lk, int held_only,
                     int (*fn)(struct dlock_store *s, struct dlock_lock *lk,
                               void *arg),
                     void *arg);

/* dlock_acquire_len(), and dlock_elect() with candidate 1 and its value
 * (checked by the caller). */
int dlock__acquire(dlock_lock **out, dlock_store *s, const char *name,
                   size_t name_len, const dlock_options *opts,
                   const char *value, size_t value_len, int candidate);

/* Free a lock record that is in no registry (acquire.c's failures). */
void dlock__lock_free(struct dlock__held *lk);

#endif /* DLOCK_CORE_HELD_H */
