/* One block of dlock's uncontended cycle: URL NAME CYCLES MAX_SECONDS
 * WARMUP; the same shape as bench/node-redlock/cycle.js. */
#include "dlock.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void cycle(dlock_store *s, const char *name, const dlock_options *o)
{
    dlock_lock *l;
    int rc = dlock_acquire(&l, s, name, o);

    if (rc != DLOCK_OK) {
        fprintf(stderr, "dlock cycle: acquire: %s\n", dlock_errmsg());
        exit(1);
    }
    if ((rc = dlock_release(l)) != DLOCK_OK) {
        fprintf(stderr, "dlock cycle: release: %s\n", dlock_strerror(rc));
        exit(1);
    }
}

int main(int argc, char **argv)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s;
    long cycles, warmup, n = 0;
    double limit, t0, t;

    if (argc != 6)
        return 2;
    cycles = atol(argv[3]);
    limit = atof(argv[4]);
    warmup = atol(argv[5]);
    if (dlock_store_open(&s, argv[1]) != DLOCK_OK) {
        fprintf(stderr, "dlock cycle: open: %s\n", dlock_errmsg());
        return 1;
    }
    o.wait_ms = 0;    /* a try, as redlock's retryCount 0 */
    o.ttl_ms = 30000; /* the default lease */
    o.auto_renew = 0; /* redlock has none; nothing in the background */
    for (long i = 0; i < warmup; i++)
        cycle(s, argv[2], &o);
    t = t0 = now();
    while (n < cycles) {
        cycle(s, argv[2], &o);
        n++;
        t = now();
        if (t - t0 >= limit)
            break;
    }
    dlock_store_close(s);
    printf("{\"impl\":\"dlock\",\"version\":\"%s\",\"cycles\":%ld,"
           "\"seconds\":%.9f,\"cycles_per_s\":%.3f}\n",
           dlock_version(), n, t - t0, n / (t - t0));
    return 0;
}
