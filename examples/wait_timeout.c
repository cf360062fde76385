/* wait_timeout: wait up to 2 s for a lock, with a 10 s lease.
 *   wait_timeout [URL] */
#include <dlock.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : dlock_default_url();
    dlock_options opts = DLOCK_OPTIONS_INIT;
    dlock_store *store;
    dlock_lock *lock;
    int rc;

    opts.wait_ms = 2000;
    opts.ttl_ms = 10000;
    if (dlock_store_open(&store, url) != DLOCK_OK) {
        fprintf(stderr, "wait_timeout: %s\n", dlock_errmsg());
        return 69;
    }
    rc = dlock_acquire(&lock, store, "examples/wait", &opts);
    switch (rc) {
    case DLOCK_OK:
        /* Before a long step: is at least 5 s of lease left? */
        if (dlock_assert_ttl(lock, 5000) == DLOCK_OK)
            printf("held with time to spare\n");
        rc = dlock_release(lock);
        break;
    case DLOCK_BUSY:
        printf("not acquired within 2 s\n");
        rc = DLOCK_OK;
        break;
    default:
        fprintf(stderr, "wait_timeout: %s\n", dlock_errmsg());
    }
    dlock_store_close(store);
    return rc == DLOCK_OK ? 0 : 1;
}
