/*
 * adv_move_lost.c - dlock_extend() to another TTL whose txn landed but
 * whose answer was lost (adv_relay.py SKIP=1 loses the answer to the
 * second put under NAME/: the acquire's passes, the extend's is lost).
 * store.c move_lease then marks the new lease tainted and puts it: with
 * no other lock on it, it is revoked at once, and with it the holder's
 * key, which the landed put had moved onto it.  The extend answers an
 * error, not LOST, and the lock still counts as held: another client can
 * take the name while the holder goes on (two holders until the next
 * renewal finds the key gone).
 *
 *   adv_move_lost RELAY_URL DIRECT_URL NAME
 *
 * Pass: after the extend, either the holder knows it lost the lock
 * (DLOCK_LOST, dlock_is_lost) or nobody else can take the name.
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
    dlock_lock *a = NULL, *b = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    int rc, rb, fail = 0;

    if (argc != 4) {
        fprintf(stderr, "usage: adv_move_lost RELAY_URL DIRECT_URL NAME\n");
        return 2;
    }
    if (dlock_store_open(&s1, argv[1]) != DLOCK_OK ||
        dlock_store_open(&s2, argv[2]) != DLOCK_OK) {
        fprintf(stderr, "FAIL: open: %s\n", dlock_errmsg());
        return 1;
    }
    o.ttl_ms = 6000;
    if (dlock_acquire(&a, s1, argv[3], &o) != DLOCK_OK) {
        fprintf(stderr, "FAIL: acquire %s: %s\n", argv[3], dlock_errmsg());
        return 1;
    }
    rc = dlock_extend(a, 9000);
    printf("extend to 9 s through the relay that lost its answer: %s (%s)\n",
           dlock_strerror(rc), rc == DLOCK_OK ? "" : dlock_errmsg());
    o.ttl_ms = 5000;
    rb = dlock_acquire(&b, s2, argv[3], &o);
    if (rb == DLOCK_OK && !dlock_is_lost(a)) {
        printf("FAIL: another handle got %s while its holder still counts it "
               "held (%lld ms of lease left as it counts): two holders\n",
               argv[3], (long long)dlock_lease_left(a));
        fail = 1;
    } else {
        printf("ok: another handle's acquire: %s; holder lost: %d\n",
               dlock_strerror(rb), dlock_is_lost(a));
    }
    dlock_release(b);
    dlock_release(a);
    dlock_store_close(s1);
    dlock_store_close(s2);
    return fail;
}
