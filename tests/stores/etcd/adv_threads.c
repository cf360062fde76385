/*
 * adv_threads.c - threads sharing one etcd handle (for ThreadSanitizer):
 * a held lock renewed by the lease thread and waiters of the same TTL on
 * the same etcd lease, watching, refreshing and re-reading while another
 * handle holds and releases their names, and one more thread that
 * acquires and releases the held lock's TTL on other names.  Every waiter
 * must get its name, once, with a fence above the one before.
 *
 *   adv_threads URL
 * Exit 0 pass, 1 fail, 77 no URL (1 with CI=true).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"

#define WAITERS 3
#define TTL 2100 /* 3 s etcd lease: granted_ms / 3 = the watch step */

static dlock_store *shared_s;
static char names[WAITERS][64];
static int got[WAITERS];
static uint64_t fence_before[WAITERS], fence_got[WAITERS];
static atomic_int stop;

static void *waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;

    o.ttl_ms = TTL;
    o.wait_ms = 20000;
    if (dlock_acquire(&l, shared_s, names[i], &o) == DLOCK_OK) {
        got[i] = 1;
        fence_got[i] = dlock_fence(l);
        dlock_release(l);
    } else {
        fprintf(stderr, "waiter %d: %s\n", i, dlock_errmsg());
    }
    return NULL;
}

static void *churn(void *arg)
{
    int n = 0;

    (void)arg;
    while (!stop) {
        dlock_options o = DLOCK_OPTIONS_INIT;
        dlock_lock *l = NULL;
        char nm[80];

        o.ttl_ms = TTL;
        snprintf(nm, sizeof(nm), "%s-churn-%d", names[0], n++ % 4);
        if (dlock_acquire(&l, shared_s, nm, &o) == DLOCK_OK)
            dlock_release(l);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("DLOCK_TEST_ETCD_URL");
    const char *ci = getenv("CI");
    dlock_store *other = NULL;
    dlock_lock *held = NULL, *blockers[WAITERS] = {NULL};
    dlock_options o = DLOCK_OPTIONS_INIT;
    pthread_t t[WAITERS], c;
    struct timespec ts = {3, 0};
    int fail = 0;

    if (url == NULL || *url == '\0') {
        fprintf(stderr, "no etcd URL (DLOCK_TEST_ETCD_URL)\n");
        return ci != NULL && strcmp(ci, "true") == 0 ? 1 : 77;
    }
    if (dlock_store_open(&shared_s, url) != DLOCK_OK ||
        dlock_store_open(&other, url) != DLOCK_OK) {
        fprintf(stderr, "FAIL: open: %s\n", dlock_errmsg());
        return 1;
    }
    o.ttl_ms = TTL;
    for (int i = 0; i < WAITERS; i++) {
        snprintf(names[i], sizeof(names[i]), "adv-thr-%ld-%d", (long)getpid(),
                 i);
        if (dlock_acquire(&blockers[i], other, names[i], &o) != DLOCK_OK) {
            fprintf(stderr, "FAIL: acquire %s: %s\n", names[i], dlock_errmsg());
            return 1;
        }
        fence_before[i] = dlock_fence(blockers[i]);
    }
    {
        char nm[80];

        snprintf(nm, sizeof(nm), "adv-thr-%ld-held", (long)getpid());
        if (dlock_acquire(&held, shared_s, nm, &o) != DLOCK_OK) {
            fprintf(stderr, "FAIL: acquire %s: %s\n", nm, dlock_errmsg());
            return 1;
        }
    }
    for (int i = 0; i < WAITERS; i++)
        pthread_create(&t[i], NULL, waiter, (void *)(intptr_t)i);
    pthread_create(&c, NULL, churn, NULL);
    /* The waiters wait through a few renewals of the shared lease. */
    nanosleep(&ts, NULL);
    for (int i = 0; i < WAITERS; i++)
        dlock_release(blockers[i]);
    for (int i = 0; i < WAITERS; i++)
        pthread_join(t[i], NULL);
    stop = 1;
    pthread_join(c, NULL);
    for (int i = 0; i < WAITERS; i++)
        if (!got[i] || fence_got[i] <= fence_before[i]) {
            printf("FAIL: waiter %d: got %d, fence %llu after %llu\n", i,
                   got[i], (unsigned long long)fence_got[i],
                   (unsigned long long)fence_before[i]);
            fail = 1;
        }
    if (dlock_is_lost(held)) {
        printf("FAIL: the held lock was lost\n");
        fail = 1;
    }
    dlock_release(held);
    dlock_store_close(shared_s);
    dlock_store_close(other);
    if (!fail)
        printf("ok: %d waiters on a shared handle and lease\n", WAITERS);
    return fail;
}
