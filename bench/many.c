/*
 * many.c - dlock-bench part 3: one process holding N names with
 * auto-renew: acquires/s, RSS per held lock, renewals per second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, res = 0;

    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

void bench_many(void)
{
    const int n = many_n > 0 ? many_n : quick ? 1000 : 10000;
    const int64_t ttl = 30000;
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock **l = calloc((size_t)n, sizeof(*l));
    long before, after;
    int64_t t0, t1;
    char name[128];

    if (l == NULL)
        exit(1);
    o.ttl_ms = ttl;
    before = rss_kb();
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "%s/many/%06d", run_id, i);
        if (dlock_acquire(&l[i], s, name, &o) != DLOCK_OK)
            die("many acquire");
    }
    t1 = now_ns();
    after = rss_kb();
    printf("many locks   %d held: %.0f acquires/s, %.2f KiB RSS per held "
           "lock (client side), renewals %.0f/s (one per lock per ttl/3 = "
           "%.0f s)\n",
           n, n / ((double)(t1 - t0) / 1e9), (double)(after - before) / n,
           n / (ttl / 3000.0), ttl / 3000.0);
    if (json != NULL)
        fprintf(json, "  \"many\": {\n");
    jnum("held", n, 0);
    jnum("acquires_per_s", n / ((double)(t1 - t0) / 1e9), 0);
    jnum("rss_kib_per_lock", (double)(after - before) / n, 0);
    jnum("renewals_per_s", n / (ttl / 3000.0), 1);
    if (json != NULL)
        fprintf(json, "  },\n");
    for (int i = 0; i < n; i++)
        if (dlock_release(l[i]) != DLOCK_OK)
            die("many release");
    free(l);
    dlock_store_close(s);
}
