/*
 * many.c - dlock-bench part 3: one process holding N names with
 * auto-renew: acquires/s, RSS per held lock, renewals per second; and on
 * the way (held_scaling), the uncontended cycle (acquire + release of one
 * more name) with 1, 100 and 10,000 others held and renewed, which stays
 * flat when renewals are batched (one round trip per batch) and the
 * store's lookups are indexed.  --many N caps the count (bench.sh: 1,000
 * on the session-bound stores, a server connection or session per held
 * lock): the counts above N are left out and the cap is said.
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

/* The p50 of reps acquire + release cycles of one name, in us. */
static double cycle_us(dlock_store *s, int reps)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    int64_t *v = malloc(sizeof(int64_t) * (size_t)reps);
    char name[128];
    double p;

    if (v == NULL)
        exit(1);
    o.auto_renew = 0;
    snprintf(name, sizeof(name), "%s/many/cycle", run_id);
    for (int r = 0; r < reps; r++) {
        dlock_lock *l;
        int64_t a = now_ns();

        if (dlock_acquire(&l, s, name, &o) != DLOCK_OK ||
            dlock_release(l) != DLOCK_OK)
            die("many cycle");
        v[r] = now_ns() - a;
    }
    p = (double)pct(v, (size_t)reps, 0.5) / 1e3;
    free(v);
    return p;
}

void bench_many(void)
{
    static const int steps[] = {1, 100, 10000};
    const int reps = quick ? 200 : 1000;
    double cyc[3];
    int nsteps = 0, step_n[3];
    const int n = many_n > 0 ? many_n : 10000;
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
        /* The cycle with i + 1 held (its own acquires not counted). */
        for (int k = 0; k < 3; k++) {
            if (steps[k] == i + 1 ||
                (k > 0 && steps[k] > n && steps[k - 1] < n && i + 1 == n)) {
                int64_t c0 = now_ns();

                step_n[nsteps] = i + 1;
                cyc[nsteps++] = cycle_us(s, reps);
                t0 += now_ns() - c0;
                break;
            }
        }
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
    for (int k = 0; k < nsteps; k++)
        printf("many locks   cycle with %5d others held (auto-renew on): "
               "p50 %7.1f us\n",
               step_n[k], cyc[k]);
    if (n < steps[2])
        printf("many locks   capped at %d held (--many): 10,000 held is "
               "more than this store's sessions allow\n",
               n);
    if (json != NULL) {
        fprintf(json, "  \"held_scaling\": [\n");
        for (int k = 0; k < nsteps; k++)
            fprintf(json, "    {\"held\": %d, \"cycle_us\": %.6g}%s\n",
                    step_n[k], cyc[k], k + 1 < nsteps ? "," : "");
        fprintf(json, "  ],\n");
        if (n < steps[2])
            fprintf(json, "  \"held_scaling_capped\": %d,\n", n);
    }
    for (int i = 0; i < n; i++)
        if (dlock_release(l[i]) != DLOCK_OK)
            die("many release");
    free(l);
    dlock_store_close(s);
}
