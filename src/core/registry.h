/*
 * registry.h - the registry of held locks, as the rest of the core uses
 * it (core only; the files that make it share regstate.h).
 *
 * Every lock this process holds is in the registry from its acquire to
 * its release: the renew thread (renew.c) renews the auto-renewed ones,
 * the lease thread (lease.c) declares LOST those whose lease ran out,
 * closing a store detaches the locks taken through it, and the atexit
 * handler releases what the program forgot (registry.c).
 */
#ifndef DLOCK_CORE_REGISTRY_H
#define DLOCK_CORE_REGISTRY_H

#ifdef DLOCK__STORE_SOURCE
#error "registry.h is the core's own: stores see store.h only"
#endif

#include <stdint.h>

#include "held.h"

/* For acquire.c.  start() installs the process hooks once and starts the
 * lease thread and, for an auto-renewed lock, the renew thread
 * (registry.c); reserve() makes room in the schedules before the store
 * is asked (so registering a held lock cannot fail), unreserve() gives it
 * back when the acquire fails; add() registers a held lock (reglist.c). */
int dlock__registry_start(int auto_renew);
int dlock__registry_reserve(struct dlock__held *lk, int auto_renew);
void dlock__registry_unreserve(struct dlock__held *lk);
void dlock__registry_add(struct dlock__held *lk);

/* store.c: the store is closing; release (best effort) and detach the
 * locks this process holds through it (registry.c). */
void dlock__registry_detach_store(struct dlock_store *store);

/* Leases the renew thread has renewed in this process so far (renew.c;
 * dlock-bench reads it; the thread is named "dlock-renew" on Linux). */
uint64_t dlock__renewals(void);

#endif /* DLOCK_CORE_REGISTRY_H */
