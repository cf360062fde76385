/* fenced_write: a file that refuses writes from a holder older than the
 * last one it saw (Kleppmann's fencing token).  The file keeps
 * "<fence> <counter>"; a writer with a lower fence is turned away even if
 * it still believes it holds the lock (after a long GC pause, say).
 *   fenced_write FILE [URL] */
#include <dlock.h>
#include <stdio.h>

static int fenced_increment(const char *path, uint64_t fence)
{
    unsigned long long seen = 0, counter = 0;
    FILE *f = fopen(path, "r");

    if (f != NULL) {
        if (fscanf(f, "%llu %llu", &seen, &counter) != 2)
            seen = counter = 0;
        fclose(f);
    }
    if (fence < seen) {
        fprintf(stderr, "refused: fence %llu < %llu\n",
                (unsigned long long)fence, seen);
        return -1;
    }
    f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%llu %llu\n", (unsigned long long)fence, counter + 1);
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *url = argc > 2 ? argv[2] : dlock_default_url();
    dlock_options opts = DLOCK_OPTIONS_INIT;
    dlock_store *store;
    dlock_lock *lock;
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: fenced_write FILE [URL]\n");
        return 64;
    }
    opts.wait_ms = DLOCK_WAIT_FOREVER;
    if (dlock_store_open(&store, url) != DLOCK_OK) {
        fprintf(stderr, "fenced_write: %s\n", dlock_errmsg());
        return 69;
    }
    rc = dlock_acquire(&lock, store, "examples/fenced", &opts);
    if (rc == DLOCK_OK) {
        if (fenced_increment(argv[1], dlock_fence(lock)) != 0)
            rc = DLOCK_LOST;
        if (dlock_release(lock) != DLOCK_OK)
            rc = DLOCK_LOST;
    } else {
        fprintf(stderr, "fenced_write: %s\n", dlock_errmsg());
    }
    dlock_store_close(store);
    return rc == DLOCK_OK ? 0 : 1;
}
