/*
 * registry.c - the registry of held locks as a whole: the start of the
 * renew and lease threads, fork and atexit, and detaching the locks of a
 * store being closed.  It sits on top of the registry's files and none
 * of them calls it.  (The shared state: regstate.c; a lock in and out:
 * reglist.c; the schedules: heap.c; the threads: renew.c and lease.c;
 * calls on a held lock and release: held.c; acquiring: acquire.c.)
 *
 * Every held lock of this process is in one registry (a list behind
 * dlock__reg_mu).  The registry exists for three reasons: the renew
 * thread finds the leases due for renewal in it, the atexit handler walks
 * it to release what the program forgot, and closing a store detaches the
 * locks taken through it.  The locks are also in two min-heaps keyed by
 * when each is due (heap.c), so the library threads look at the due ones
 * only, never at all of them.  A fork child inherits the registry: its
 * parent's locks stay listed there (never renewed or released by the
 * child) until the child frees them with dlock_release(), which hands
 * them to the store's forget_inherited().
 *
 * Locking order: see regstate.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "process.h"
#include "regstate.h"

static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
/* The two threads: [H_RENEW] renews, [H_LEASE] declares lapsed leases
 * LOST.  The lease thread never does I/O, so that a renewal stuck in a
 * store that stopped answering cannot delay it. */
static pthread_t thr[2];
static int thr_running[2];
static int at_exit; /* atexit ran: no new thread */

static void release_all_at_exit(void);

static void fork_prepare(void)
{
    pthread_mutex_lock(&dlock__reg_mu);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&dlock__reg_mu);
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
        for (size_t i = 0; i < dlock__heaps[w].len; i++)
            dlock__heaps[w].v[i]->heap_idx[w] = SIZE_MAX;
        dlock__heaps[w].len = 0;
        thr_running[w] = 0;
        dlock__thr_started[w] = 0;
        dlock__heaps[w].sleep_until = 0;
    }
    pthread_mutex_init(&dlock__reg_mu, NULL);
    dlock__reg_conds_init();
    dlock__thr_stop = 0;
}

static void reg_init(void)
{
    dlock__reg_conds_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    atexit(release_all_at_exit);
}

/* Start thread `which` if it is not running (caller holds dlock__reg_mu). */
static int thread_start_locked(int which)
{
    static const char *const what[2] = {"renew", "lease"};
    int err;

    if (thr_running[which])
        return DLOCK_OK;
    if (at_exit)
        return dlock__seterr(DLOCK_EINVAL, "the process is exiting");
    dlock__thr_stop = 0;
    err = pthread_create(
        &thr[which], NULL,
        which == H_RENEW ? dlock__renew_main : dlock__lease_main, NULL);
    if (err != 0)
        return dlock__seterr(err == ENOMEM ? DLOCK_ENOMEM : DLOCK_EINVAL,
                             "cannot start the %s thread: %s", what[which],
                             strerror(err));
    thr_running[which] = 1;
    /* Wait until the thread is in its loop (waiting on dlock__reg_mu, which
     * this wait lets go of): its start-up, which allocates, is over
     * before the caller can fork.  A child forked while another thread
     * allocates can find the allocator locked (sanitizers' allocators
     * have no fork handlers) and hang at its first malloc. */
    while (!dlock__thr_started[which])
        pthread_cond_wait(&dlock__start_cv, &dlock__reg_mu);
    return DLOCK_OK;
}

/* --- the threads acquire.c starts -------------------------------------- */

int dlock__registry_start(int auto_renew)
{
    int rc;

    pthread_once(&reg_once, reg_init);
    pthread_mutex_lock(&dlock__reg_mu);
    rc = thread_start_locked(H_LEASE);
    if (rc == DLOCK_OK && auto_renew)
        rc = thread_start_locked(H_RENEW);
    pthread_mutex_unlock(&dlock__reg_mu);
    return rc;
}

/* --- store close, process exit --------------------------------------- */

/* Release (best effort) and detach every lock of this process for which
 * match(lk) holds; they stay allocated for their owners to free. */
static void detach_where(struct dlock_store *only)
{
    uint64_t me = dlock__generation();

    pthread_mutex_lock(&dlock__reg_mu);
    for (;;) {
        struct dlock__held *lk;

        for (lk = dlock__reg_head; lk != NULL; lk = lk->next)
            if (lk->gen == me && DLOCK_STATE_GET(lk) != DLOCK_STATE_DETACHED &&
                lk->renewable >= 0 && (only == NULL || lk->store == only))
                break;
        if (lk == NULL)
            break;
        /* renewable = -1 marks "being detached" so the loop moves on. */
        lk->renewable = -1;
        dlock__heaps_remove(lk);
        while (lk->refs > 0 && !dlock__on_lib_thread)
            pthread_cond_wait(&dlock__unref_cv, &dlock__reg_mu);
        pthread_mutex_unlock(&dlock__reg_mu);
        pthread_mutex_lock(&lk->mu);
        (void)dlock__store_release(lk);
        lk->view.priv = NULL;
        DLOCK_STATE_SET(lk, DLOCK_STATE_DETACHED);
        pthread_mutex_unlock(&lk->mu);
        pthread_mutex_lock(&dlock__reg_mu);
    }
    pthread_mutex_unlock(&dlock__reg_mu);
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
    pthread_mutex_lock(&dlock__reg_mu);
    at_exit = 1;
    dlock__thr_stop = 1;
    pthread_cond_broadcast(dlock__heaps[H_RENEW].cv);
    pthread_cond_broadcast(dlock__heaps[H_LEASE].cv);
    for (int w = 0; w < 2; w++) {
        /* exit() from an on_lost callback runs on a library thread. */
        join[w] = thr_running[w] && dlock__on_lib_thread != 1 + w;
        thr_running[w] = 0;
    }
    pthread_mutex_unlock(&dlock__reg_mu);
    for (int w = 0; w < 2; w++)
        if (join[w])
            pthread_join(thr[w], NULL);
    detach_where(NULL);
}
