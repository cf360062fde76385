/*
 * herd.c - dlock-bench part 3b: 1, 20 and 100 waiters on one name (or
 * --waiters N alone): what one release costs (the client requests the
 * server counted per hand-off) and how long a hand-off takes with that
 * many waiting (waiter_scaling).  With FIFO kept and no herd, the
 * requests per hand-off stay flat as the waiters grow.  N + 1 processes
 * take turns, so that N wait while one holds.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "run.h"

struct herd {
    volatile int ready, stop;
    int n;
    int64_t released[]; /* [i]: when holder i let go; [0] is the parent */
};

/* Wait, hold for nothing, release, wait again, until the parent has
 * counted enough hand-offs (then it kills us). */
static void herd_waiter(struct herd *h, const char *name, int k)
{
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;

    o.wait_ms = DLOCK_WAIT_FOREVER;
    o.auto_renew = 0;
    __atomic_fetch_add(&h->ready, 1, __ATOMIC_SEQ_CST);
    for (;;) {
        dlock_lock *l;
        int i;

        if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
            die("herd acquire");
        i = __atomic_add_fetch(&h->n, 1, __ATOMIC_SEQ_CST);
        if (i <= k)
            h->released[i + k + 1] = now_ns(); /* acquired */
        if (i >= k)
            h->stop = 1;
        if (i <= k)
            h->released[i] = now_ns();
        if (dlock_release(l) != DLOCK_OK)
            die("herd release");
    }
}

/* W waiters; *first: no point written yet to waiter_scaling. */
static void herd_one(int W, int *first)
{
    const int k = quick ? 100 : 300;
    size_t size = sizeof(struct herd) + sizeof(int64_t) * (2 * k + 2);
    struct herd *h = mmap(NULL, size, PROT_READ | PROT_WRITE,
                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct bench_noop *noop = NULL;
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l;
    int64_t *hand = malloc(sizeof(int64_t) * (size_t)k), t0, t1;
    long long r0 = -1, r1 = -1;
    double base = -1;
    pid_t *pids = calloc((size_t)W + 1, sizeof(*pids));
    char name[128];
    int nh = 0;

    if (h == MAP_FAILED || hand == NULL || pids == NULL)
        exit(1);
    snprintf(name, sizeof(name), "%s/herd/%d", run_id, W);
    o.auto_renew = 0;
    o.ttl_ms = 60000;
    /* What one uncontended acquire + release costs, for comparison. */
    if (bench_noop_open(&noop, url) == 0 &&
        (r0 = bench_server_requests(noop)) >= 0) {
        for (int i = 0; i < 50; i++) {
            if (dlock_acquire(&l, s, name, &o) != DLOCK_OK ||
                dlock_release(l) != DLOCK_OK)
                die("herd baseline");
        }
        r1 = bench_server_requests(noop);
        base = r1 >= 0 ? (double)(r1 - r0) / 50 : -1;
    }
    if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
        die("herd first acquire");
    for (int w = 0; w <= W; w++) {
        pids[w] = fork();
        if (pids[w] == 0)
            herd_waiter(h, name, k);
    }
    /* Everyone connected and (after a moment) blocked in the wait. */
    while (h->ready < W + 1)
        sleep_us(1000);
    sleep_us(1000000);
    r0 = r1 = -1;
    if (noop != NULL)
        r0 = bench_server_requests(noop);
    t0 = now_ns();
    h->released[0] = t0;
    if (dlock_release(l) != DLOCK_OK)
        die("herd release");
    while (!h->stop)
        sleep_us(200);
    t1 = now_ns();
    if (noop != NULL)
        r1 = bench_server_requests(noop);
    for (int w = 0; w <= W; w++)
        kill(pids[w], SIGKILL);
    for (int w = 0; w <= W; w++)
        waitpid(pids[w], NULL, 0);
    for (int i = 1; i <= k; i++)
        hand[nh++] = h->released[i + k + 1] - h->released[i - 1];
    qsort(hand, (size_t)nh, sizeof(*hand), cmp_i64);
    {
        double per = r0 >= 0 && r1 >= 0 ? (double)(r1 - r0) / k : -1;
        int64_t p50 = pct(hand, (size_t)nh, 0.5);
        int64_t p99 = pct(hand, (size_t)nh, 0.99);

        printf("%d waiters  %d hand-offs in %.2f s: hand-off p50 %7.1f us  "
               "p99 %7.1f us; ",
               W, k, (t1 - t0) / 1e9, p50 / 1e3, p99 / 1e3);
        if (per >= 0)
            printf("%.2f client requests per hand-off, %.2f per "
                   "uncontended acquire + release\n",
                   per, base);
        else
            printf("requests per hand-off: n/a (%s)\n",
                   url[0] == 's' ? "no server to count them"
                                 : "the server counts none at once");
        if (json != NULL)
            fprintf(json,
                    "%s    {\"waiters\": %d, \"handoffs\": %d, "
                    "\"handoff_p50_us\": %.6g, \"handoff_p99_us\": %.6g, "
                    "\"requests_per_handoff\": %.6g, "
                    "\"requests_per_uncontended_cycle\": %.6g}",
                    *first ? "" : ",\n", W, k, p50 / 1e3, p99 / 1e3, per, base);
        *first = 0;
    }
    bench_noop_close(noop);
    dlock_store_close(s);
    free(hand);
    free(pids);
    munmap(h, size);
}

void bench_herd(void)
{
    static const int counts[] = {1, 20, 100};
    int first = 1;

    if (json != NULL)
        fprintf(json, "  \"waiter_scaling\": [\n");
    if (herd_w > 0) {
        herd_one(herd_w, &first);
    } else {
        for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++) {
            herd_one(counts[i], &first);
            fflush(stdout);
        }
    }
    if (json != NULL)
        fprintf(json, "\n  ],\n");
}
