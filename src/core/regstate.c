/*
 * regstate.c - the registry's shared state (regstate.h), below every
 * file that uses it: the mutex and condition variables, the list's head,
 * the two heaps, the library threads' stop flag and start handshake, and
 * a lock record's last ref and free.  It calls none of the registry's
 * other files (heap.c, lease.c, renew.c, reglist.c, held.c, registry.c),
 * so each of them can be read from here upwards.
 *
 * Locking order: see regstate.h.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "regstate.h"

pthread_mutex_t dlock__reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cv;   /* wakes the renew thread */
static pthread_cond_t lease_cv; /* wakes the lease thread */
pthread_cond_t dlock__unref_cv; /* a lock's refs dropped */
pthread_cond_t dlock__start_cv; /* a library thread is in its loop */
/* The registry: every held lock of this process. */
struct dlock__held *dlock__reg_head;
struct dlock__heap dlock__heaps[2] = {{NULL, 0, 0, 0, H_RENEW, &reg_cv, 0},
                                      {NULL, 0, 0, 0, H_LEASE, &lease_cv, 0}};
int dlock__thr_started[2]; /* reached its loop: its start-up is over */
int dlock__thr_stop;
_Thread_local int dlock__on_lib_thread; /* 1 + H_RENEW or 1 + H_LEASE */

void dlock__reg_conds_init(void)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&reg_cv, &ca);
    pthread_cond_init(&lease_cv, &ca);
    pthread_cond_init(&dlock__unref_cv, &ca);
    pthread_cond_init(&dlock__start_cv, &ca);
    pthread_condattr_destroy(&ca);
}

void dlock__thread_begin(int which)
{
    dlock__on_lib_thread = 1 + which;
    pthread_mutex_lock(&dlock__reg_mu);
    dlock__thr_started[which] = 1;
    pthread_cond_broadcast(&dlock__start_cv);
}

void dlock__lock_free(struct dlock__held *lk)
{
    pthread_mutex_destroy(&lk->mu);
    free(lk->view.name);
    free(lk->value);
    free(lk);
}

void dlock__unref_locked(struct dlock__held *lk)
{
    if (--lk->refs == 0 && lk->free_on_unref)
        dlock__lock_free(lk);
}
