/*
 * reglist.c - a lock into the registry and out of it: its places in the
 * two schedules reserved before the store is asked (and given back when
 * the acquire fails), its entry in the list once held, with the lease
 * end this process enforces from then on, and its unlinking at release.
 * (The state: regstate.c; the schedules: heap.c.)
 *
 * Locking order: see regstate.h.
 */
#include <pthread.h>
#include <stddef.h>

#include "clock.h"
#include "regstate.h"

void dlock__reg_unlink_locked(struct dlock__held *lk)
{
    if (lk->prev != NULL)
        lk->prev->next = lk->next;
    else if (dlock__reg_head == lk)
        dlock__reg_head = lk->next;
    if (lk->next != NULL)
        lk->next->prev = lk->prev;
    lk->prev = lk->next = NULL;
    lk->renewable = 0;
    dlock__heap_unreserve(&dlock__heaps[H_RENEW], lk);
    dlock__heap_unreserve(&dlock__heaps[H_LEASE], lk);
}

/* --- what acquire.c needs of the registry ------------------------------ */

int dlock__registry_reserve(struct dlock__held *lk, int auto_renew)
{
    int rc;

    pthread_mutex_lock(&dlock__reg_mu);
    rc = dlock__heap_reserve(&dlock__heaps[H_LEASE], lk);
    if (rc == DLOCK_OK && auto_renew) {
        rc = dlock__heap_reserve(&dlock__heaps[H_RENEW], lk);
        if (rc != DLOCK_OK)
            dlock__heap_unreserve(&dlock__heaps[H_LEASE], lk);
    }
    pthread_mutex_unlock(&dlock__reg_mu);
    return rc;
}

void dlock__registry_unreserve(struct dlock__held *lk)
{
    pthread_mutex_lock(&dlock__reg_mu);
    dlock__heap_unreserve(&dlock__heaps[H_RENEW], lk);
    dlock__heap_unreserve(&dlock__heaps[H_LEASE], lk);
    pthread_mutex_unlock(&dlock__reg_mu);
}

void dlock__registry_add(struct dlock__held *lk)
{
    pthread_mutex_lock(&dlock__reg_mu);
    lk->prev = NULL;
    lk->next = dlock__reg_head;
    if (dlock__reg_head != NULL)
        dlock__reg_head->prev = lk;
    dlock__reg_head = lk;
    lk->renewable = 1;
    /* From here on lease_end is the end this process enforces: the
     * store's less the clock-rate margin. */
    __atomic_store_n(&lk->view.lease_end,
                     lk->view.lease_end - dlock__drift_margin(lk->view.ttl_ms),
                     __ATOMIC_RELAXED);
    dlock__heap_set(lk);
    pthread_mutex_unlock(&dlock__reg_mu);
}
