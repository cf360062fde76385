/*
 * adv_stray_key.c - an acquire whose put landed but whose answer was lost
 * (adv_relay.py drops it) while the same handle holds another lock of the
 * same TTL, on the same etcd lease.  acquire.c marks that lease tainted
 * (no new lock takes it) and leaves the stray key on it; the held lock's
 * renewals keep the lease, and the stray key with it, alive.  The stray
 * key is an exclusive holder of the name with our own token: the retry
 * (on a new lease) queues behind it, and every other client is locked
 * out for as long as the other lock is held.
 *
 *   adv_stray_key RELAY_URL DIRECT_URL NAME
 *
 * Through the relay: hold NAME-x (30 s), then acquire NAME (30 s, wait
 * 4 s): the relay loses the answer to NAME's first put.  Then NAME must
 * be free for another handle (direct): the acquire that ended left
 * nothing behind, or (if it got NAME) released it.
 * Exit 0 pass, 1 fail.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"

int main(int argc, char **argv)
{
    dlock_store *s1 = NULL, *s2 = NULL;
    dlock_lock *x = NULL, *y = NULL, *z = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    char nx[300];
    int rc, fail = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: adv_stray_key RELAY_URL DIRECT_URL NAME\n");
        return 2;
    }
    snprintf(nx, sizeof(nx), "%s-x", argv[3]);
    if (dlock_store_open(&s1, argv[1]) != DLOCK_OK ||
        dlock_store_open(&s2, argv[2]) != DLOCK_OK) {
        fprintf(stderr, "FAIL: open: %s\n", dlock_errmsg());
        return 1;
    }
    o.ttl_ms = 30000;
    if (dlock_acquire(&x, s1, nx, &o) != DLOCK_OK) {
        fprintf(stderr, "FAIL: acquire %s: %s\n", nx, dlock_errmsg());
        return 1;
    }
    o.wait_ms = 4000;
    rc = dlock_acquire(&y, s1, argv[3], &o);
    printf("acquire %s through the relay that lost its put's answer: %s "
           "(%s)\n",
           argv[3], dlock_strerror(rc), rc == DLOCK_OK ? "" : dlock_errmsg());
    if (rc == DLOCK_OK)
        dlock_release(y);
    /* NAME is nobody's now. */
    o.wait_ms = 0;
    o.ttl_ms = 5000;
    rc = dlock_acquire(&z, s2, argv[3], &o);
    if (rc != DLOCK_OK) {
        printf("FAIL: %s is not free after that acquire ended (%s: %s) "
               "while the handle still holds %s\n",
               argv[3], dlock_strerror(rc), dlock_errmsg(), nx);
        fail = 1;
    } else {
        printf("ok: %s is free\n", argv[3]);
        dlock_release(z);
        z = NULL;
    }
    dlock_release(x);
    if (fail) {
        /* Once the other lock lets go, the tainted lease is revoked. */
        o.wait_ms = 5000;
        rc = dlock_acquire(&z, s2, argv[3], &o);
        printf("after %s's release: %s\n", nx, dlock_strerror(rc));
        dlock_release(z);
    }
    dlock_store_close(s1);
    dlock_store_close(s2);
    return fail;
}
