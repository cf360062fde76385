/*
 * runs_kept.c - dlock-bench part 7 (--only runs): what a run's
 * bookkeeping costs (dlock_run_begin() + dlock_run_end(), the lock
 * already held) on a name that keeps the default 20 runs and on one that
 * keeps 10,000 (dlock_keep_runs(); 1,000 with --quick), both full.
 *
 * The name of many runs is filled first, one real run after another (an
 * acquire, a begin, an end, a release each: a run is one per fence); the
 * fill is timed too, in tenths, so a cost that grows with the runs kept
 * shows as a slope.  Then blocks of runs alternate between the two
 * names, and the ratio of their median cycles is taken per pair of
 * blocks: 1.0 is "the same whatever the setting", in the same run on
 * the same server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define BLOCK 50

/* One run of name: begin + end timed (ns), acquire and release not. */
static int64_t one_run(dlock_store *s, const char *name)
{
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    dlock_run *last = NULL;
    int64_t t0, t1;
    int go = 0;

    o.wait_ms = 10000;
    o.ttl_ms = 30000;
    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
        die("runs acquire");
    t0 = now_ns();
    if (dlock_run_begin(l, &rule, &go, &last) != DLOCK_OK || !go)
        die("runs begin");
    if (dlock_run_end(l, DLOCK_RUN_EXITED, 0) != DLOCK_OK)
        die("runs end");
    t1 = now_ns();
    dlock_run_free(last);
    if (dlock_release(l) != DLOCK_OK)
        die("runs release");
    return t1 - t0;
}

/* The median cycle of a block of n runs of name, in ns. */
static int64_t block(dlock_store *s, const char *name, int n)
{
    int64_t v[BLOCK];

    for (int i = 0; i < n; i++)
        v[i] = one_run(s, name);
    return pct(v, (size_t)n, 0.5);
}

static int count_cb(const dlock_run *r, void *p)
{
    (void)r;
    ++*(unsigned *)p;
    return 0;
}

void bench_runs_kept(void)
{
    unsigned many = quick ? 1000 : DLOCK_RUNS_KEPT_MAX;
    const int pairs = quick ? 5 : 11, fill_parts = 10;
    dlock_store *s = open_store();
    char few[128], lots[128];
    double ratio[11], fill_us[10];
    int64_t few_ns[11], lots_ns[11];
    unsigned kept = 0;
    int rc;

    snprintf(few, sizeof(few), "%s/runs/20", run_id);
    snprintf(lots, sizeof(lots), "%s/runs/many", run_id);
    rc = dlock_keep_runs(s, lots, many);
    if (rc == DLOCK_EINVAL && many > 500) {
        /* A store that keeps fewer at most (etcd: 500) says so: measured
         * at its most. */
        printf("runs kept    (%s; measured at 500)\n", dlock_errmsg());
        many = 500;
        rc = dlock_keep_runs(s, lots, many);
    }
    if (rc == DLOCK_ENOTSUP) {
        printf("runs kept    (this store keeps no run records)\n");
        dlock_store_close(s);
        return;
    }
    if (rc != DLOCK_OK)
        die("keep runs");
    /* Fill: `many` runs, a tenth at a time, the mean cycle of each. */
    for (int part = 0; part < fill_parts; part++) {
        unsigned n = many / fill_parts;
        int64_t sum = 0;

        for (unsigned i = 0; i < n; i++)
            sum += one_run(s, lots);
        fill_us[part] = (double)sum / n / 1000.0;
    }
    for (int i = 0; i < DLOCK_RUNS_KEPT + 5; i++)
        (void)one_run(s, few);
    /* One more than the setting: the trim is in every run from here. */
    (void)one_run(s, lots);
    if (dlock_history(s, lots, 0, count_cb, &kept) != DLOCK_OK)
        die("runs history");
    for (int p = 0; p < pairs; p++) {
        few_ns[p] = block(s, few, BLOCK);
        lots_ns[p] = block(s, lots, BLOCK);
        ratio[p] = (double)lots_ns[p] / (double)few_ns[p];
    }
    qsort(ratio, (size_t)pairs, sizeof(ratio[0]), cmp_dbl);
    printf("runs kept    begin+end, lock held: %u kept %.1f us, %d kept "
           "%.1f us (medians of %d blocks of %d); ratio %.2f (median; "
           "%.2f..%.2f); kept after the fill: %u (want %u); fill by "
           "tenths %.1f .. %.1f us\n",
           many, (double)pct(lots_ns, (size_t)pairs, 0.5) / 1000.0,
           DLOCK_RUNS_KEPT, (double)pct(few_ns, (size_t)pairs, 0.5) / 1000.0,
           pairs, BLOCK, ratio[pairs / 2], ratio[0], ratio[pairs - 1], kept,
           many, fill_us[0], fill_us[fill_parts - 1]);
    if (json != NULL)
        fprintf(json, "  \"runs_kept\": {\n");
    jnum("kept_many", many, 0);
    jnum("kept_after_fill", kept, 0);
    jnum("cycle_us_20", (double)pct(few_ns, (size_t)pairs, 0.5) / 1000.0, 0);
    jnum("cycle_us_many", (double)pct(lots_ns, (size_t)pairs, 0.5) / 1000.0, 0);
    jnum("ratio_median", ratio[pairs / 2], 0);
    jnum("ratio_min", ratio[0], 0);
    jnum("ratio_max", ratio[pairs - 1], 0);
    jnum("fill_first_tenth_us", fill_us[0], 0);
    jnum("fill_last_tenth_us", fill_us[fill_parts - 1], 1);
    if (json != NULL)
        fprintf(json, "  },\n");
    dlock_store_close(s);
}
