/*
 * regstate.h - the registry's shared state and the functions its files
 * call of each other (regstate.c, heap.c, lease.c, renew.c, reglist.c,
 * held.c, registry.c only).  In that order each file uses only the files
 * before it, never one after it: no two of them call each other.
 *
 * Locking order: dlock__reg_mu may be taken while holding a lock's mu,
 * never the other way round.  A lock's mu serialises store calls on that
 * lock (user thread against renew thread); dlock__reg_mu protects the
 * list, the heaps, the scheduling fields (next_renew, due, heap_idx,
 * renewable, refs) and the library threads' state.  Store calls never run
 * under dlock__reg_mu, so a slow store cannot stall the registry.
 */
#ifndef DLOCK_CORE_REGSTATE_H
#define DLOCK_CORE_REGSTATE_H

#ifdef DLOCK__STORE_SOURCE
#error "regstate.h is the core's own: stores see store.h only"
#endif

#include <pthread.h>
#include <stdint.h>

#include "held.h"
#include "registry.h"

/* Two heaps of held locks, each by its own key (struct dlock__held's
 * due[which]): the renew thread's holds the auto-renewed locks by when
 * each is due, the lease thread's holds every held lock by its lease end.
 * `want` places are reserved (one per lock from its acquire until it
 * leaves the registry), so putting a lock in never has to allocate. */
#define H_RENEW 0
#define H_LEASE 1
struct dlock__heap {
    struct dlock__held **v;
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

/* regstate.c: the state, and what every other file may use of it. */
extern pthread_mutex_t dlock__reg_mu;
extern pthread_cond_t dlock__unref_cv; /* a lock's refs dropped */
extern pthread_cond_t dlock__start_cv; /* a library thread is in its loop */
extern struct dlock__held *dlock__reg_head; /* the list of held locks */
extern struct dlock__heap dlock__heaps[2];
extern int dlock__thr_started[2]; /* reached its loop */
extern int dlock__thr_stop;
/* 1 + H_RENEW or 1 + H_LEASE on a library thread, else 0. */
extern _Thread_local int dlock__on_lib_thread;
/* (Re)make the condition variables, on CLOCK_MONOTONIC (at the first
 * start, and in a fork child). */
void dlock__reg_conds_init(void);
/* A library thread's start: marks it as such, takes dlock__reg_mu and
 * tells thread_start_locked() (registry.c) it reached its loop. */
void dlock__thread_begin(int which);
/* Drop a library thread's ref on lk (caller holds dlock__reg_mu): the
 * last ref of a lock released from its own on_lost callback frees it. */
void dlock__unref_locked(struct dlock__held *lk);

/* heap.c (all under dlock__reg_mu) */
void dlock__heap_sleep(struct dlock__heap *h, int64_t when_ms);
void dlock__heap_remove(struct dlock__heap *h, struct dlock__held *lk);
void dlock__heap_put(struct dlock__heap *h, struct dlock__held *lk,
                     int64_t due);
int dlock__heap_reserve(struct dlock__heap *h, struct dlock__held *lk);
void dlock__heap_unreserve(struct dlock__heap *h, struct dlock__held *lk);
void dlock__heap_set(struct dlock__held *lk);
void dlock__heaps_remove(struct dlock__held *lk);

/* lease.c: loss. */
/* lease_end is written under lk->mu but read by the threads' scans under
 * dlock__reg_mu only: relaxed atomics keep those reads whole. */
static inline int64_t dlock__lease_end_of(const struct dlock__held *lk)
{
    return __atomic_load_n(&lk->view.lease_end, __ATOMIC_RELAXED);
}
static inline int dlock__declared_lost(const struct dlock__held *lk)
{
    return __atomic_load_n(&lk->lost_notified, __ATOMIC_ACQUIRE);
}
void dlock__set_lease_end(struct dlock__held *lk, int64_t t0, int64_t ttl_ms);
int dlock__lapsed(const struct dlock__held *lk, int64_t now);
int dlock__lapsed_err(const struct dlock__held *lk);
dlock_lost_cb dlock__declare_lost(struct dlock__held *lk);
dlock_lost_cb dlock__mark_lost(struct dlock__held *lk);
void *dlock__lease_main(void *arg);

/* renew.c */
void *dlock__renew_main(void *arg);

/* reglist.c (also registry.h's reserve, unreserve and add): take lk out
 * of the registry and both schedules, giving back its reserved places
 * (caller holds dlock__reg_mu). */
void dlock__reg_unlink_locked(struct dlock__held *lk);

/* held.c: tell the store lk is let go, whatever its state (caller holds
 * lk->mu). */
int dlock__store_release(struct dlock__held *lk);

#endif /* DLOCK_CORE_REGSTATE_H */
