/* trylock: do the job only if nobody else is doing it right now.
 *   trylock [URL]      (default: the embedded SQLite store) */
#include <dlock.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : dlock_default_url();
    dlock_store *store;
    dlock_lock *lock;
    int rc;

    if (dlock_store_open(&store, url) != DLOCK_OK) {
        fprintf(stderr, "trylock: %s\n", dlock_errmsg());
        return 69;
    }
    rc = dlock_acquire(&lock, store, "examples/trylock", NULL); /* wait 0 */
    if (rc == DLOCK_OK) {
        printf("got it, fence %llu\n", (unsigned long long)dlock_fence(lock));
        rc = dlock_release(lock);
    } else if (rc == DLOCK_BUSY) {
        printf("busy: someone else is on it\n");
        rc = DLOCK_OK;
    } else {
        fprintf(stderr, "trylock: %s\n", dlock_errmsg());
    }
    dlock_store_close(store);
    return rc == DLOCK_OK ? 0 : 1;
}
