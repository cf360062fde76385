/*
 * contended.c - dlock-bench part 2: 8 processes on one name, hold 1 ms,
 * think 1 ms: cycles/s, hand-off latency, Jain's fairness, hand-backs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "run.h"

struct event {
    int64_t acquired, released; /* ns, monotonic */
    int proc;
};

struct shared {
    volatile int go;
    int n;
    struct event ev[];
};

static void contender(struct shared *sh, int proc, int64_t end, int max)
{
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;
    char name[128];

    snprintf(name, sizeof(name), "%s/contended", run_id);
    o.wait_ms = DLOCK_WAIT_FOREVER;
    while (!sh->go)
        sleep_us(100);
    while (now_ns() < end) {
        dlock_lock *l;
        int i;

        if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
            die("contended acquire");
        i = __atomic_fetch_add(&sh->n, 1, __ATOMIC_SEQ_CST);
        if (i >= max)
            _exit(2);
        sh->ev[i].acquired = now_ns();
        sh->ev[i].proc = proc;
        sleep_us(1000); /* hold */
        sh->ev[i].released = now_ns();
        if (dlock_release(l) != DLOCK_OK)
            die("contended release");
        sleep_us(1000); /* think */
    }
    dlock_store_close(s);
    _exit(0);
}

static int cmp_ev(const void *a, const void *b)
{
    const struct event *x = a, *y = b;

    return x->acquired < y->acquired ? -1 : x->acquired > y->acquired;
}

void bench_contended(void)
{
    enum { P = 8 };
    const int secs = quick ? 3 : 10, max = 400000;
    size_t size = sizeof(struct shared) + sizeof(struct event) * max;
    struct shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int64_t end, *hand = NULL;
    long per[P] = {0}, back = 0, nh = 0;
    double sum = 0, sumsq = 0, jain;
    pid_t pids[P];
    struct bench_noop *noop = NULL;
    long long r0 = -1, r1 = -1;
    int n;

    if (sh == MAP_FAILED)
        exit(1);
    end = now_ns() + (int64_t)(secs + 1) * 1000000000;
    for (int p = 0; p < P; p++) {
        pids[p] = fork();
        if (pids[p] == 0)
            contender(sh, p, end, max);
    }
    sleep_us(1000000); /* all connected: the clock starts at "go" */
    if (bench_noop_open(&noop, url) == 0)
        r0 = bench_server_requests(noop);
    sh->go = 1;
    for (int p = 0; p < P; p++)
        waitpid(pids[p], NULL, 0);
    if (noop != NULL)
        r1 = bench_server_requests(noop);
    bench_noop_close(noop);
    n = sh->n;
    qsort(sh->ev, (size_t)n, sizeof(struct event), cmp_ev);
    hand = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (hand == NULL)
        exit(1);
    for (int i = 0; i < n; i++) {
        per[sh->ev[i].proc]++;
        if (i == 0)
            continue;
        if (sh->ev[i].proc == sh->ev[i - 1].proc)
            back++;
        else
            hand[nh++] = sh->ev[i].acquired - sh->ev[i - 1].released;
    }
    for (int p = 0; p < P; p++) {
        sum += (double)per[p];
        sumsq += (double)per[p] * (double)per[p];
    }
    jain = sumsq > 0 ? sum * sum / (P * sumsq) : 0;
    {
        double rate = n / (double)secs;
        int64_t p50 = pct(hand, (size_t)nh, 0.5),
                p99 = pct(hand, (size_t)nh, 0.99);
        int64_t mx = nh ? hand[nh - 1] : 0;

        double req = r0 >= 0 && r1 >= 0 && n > 0 ? (double)(r1 - r0) / n : -1;

        printf("contended    %9.0f cycles/s  hand-off p50 %7.1f us  p99 %7.1f "
               "us  max %7.1f us  Jain %.3f  back to releaser %.1f%%  "
               "requests/cycle %.2f\n",
               rate, p50 / 1e3, p99 / 1e3, mx / 1e3, jain,
               n > 1 ? 100.0 * back / (n - 1) : 0.0, req);
        if (json != NULL)
            fprintf(json, "  \"contended\": {\n");
        jnum("processes", P, 0);
        jnum("cycles_per_s", rate, 0);
        jnum("handoff_p50_us", p50 / 1e3, 0);
        jnum("handoff_p99_us", p99 / 1e3, 0);
        jnum("handoff_max_us", mx / 1e3, 0);
        jnum("jain_fairness", jain, 0);
        jnum("back_to_releaser", n > 1 ? (double)back / (n - 1) : 0, 0);
        jnum("requests_per_cycle", req, 1);
        if (json != NULL)
            fprintf(json, "  },\n");
    }
    free(hand);
    munmap(sh, size);
}
