/*
 * test_etcd_own_lease.c - a lock that is not auto-renewed ends at its
 * TTL on etcd even while the same handle renews other locks of that TTL
 * (their shared lease must not carry its key), and its clean release
 * frees the name at once (the keyless lease left to expire).
 *
 *     test_etcd_own_lease URL
 *
 * Handle 1 holds R (auto-renewed, 2 s) and then N (not renewed, 2 s),
 * and keeps renewing R.  Handle 2 must get N within its wait of 8 s: the
 * lease that carried N's key ended 2..3 s after it was granted (etcd's
 * whole seconds and its expiry tick), while R's, renewed, is still there.
 * Had N's key gone on R's lease, handle 2 would wait as long as R is
 * held: BUSY.  Then N again on handle 1, released: handle 2 gets it with
 * a try (no wait).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static void own_lease(const char *url)
{
    dlock_store *s1 = NULL, *s2 = NULL;
    dlock_lock *r = NULL, *n = NULL, *n2 = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    char rn[128], nn[128];
    int64_t t0;

    snprintf(rn, sizeof(rn), "own-lease-%ld-%ld/r", (long)getpid(),
             (long)time(NULL));
    snprintf(nn, sizeof(nn), "own-lease-%ld-%ld/n", (long)getpid(),
             (long)time(NULL));
    CHECK_RC(dlock_store_open(&s1, url), DLOCK_OK);
    CHECK_RC(dlock_store_open(&s2, url), DLOCK_OK);
    o.ttl_ms = 2000;
    CHECK_RC(dlock_acquire(&r, s1, rn, &o), DLOCK_OK);
    o.auto_renew = 0;
    CHECK_RC(dlock_acquire(&n, s1, nn, &o), DLOCK_OK);
    t0 = now_ms();
    o.wait_ms = 8000;
    EXPECT_RC(dlock_acquire(&n2, s2, nn, &o), DLOCK_OK);
    printf("  a lock not renewed (2 s) beside a renewed one of the same "
           "TTL: free for another handle %lld ms later\n",
           (long long)(now_ms() - t0));
    EXPECT(!dlock_is_lost(r));
    EXPECT_RC(dlock_release(n), DLOCK_LOST);
    if (n2 != NULL)
        EXPECT_RC(dlock_release(n2), DLOCK_OK);
    /* A clean release frees it at once. */
    o.wait_ms = 0;
    n = n2 = NULL;
    CHECK_RC(dlock_acquire(&n, s1, nn, &o), DLOCK_OK);
    EXPECT_RC(dlock_release(n), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&n2, s2, nn, &o), DLOCK_OK);
    if (n2 != NULL)
        EXPECT_RC(dlock_release(n2), DLOCK_OK);
    EXPECT_RC(dlock_release(r), DLOCK_OK);
    dlock_store_close(s1);
    dlock_store_close(s2);
}

int main(int argc, char **argv)
{
    const char *url = argc == 2 ? argv[1] : NULL;

    if (url == NULL || *url == '\0') {
        fprintf(stderr, "usage: test_etcd_own_lease URL\n");
        if (getenv("CI") != NULL && strcmp(getenv("CI"), "true") == 0)
            return 1;
        return 77;
    }
    own_lease(url);
    printf("%s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
