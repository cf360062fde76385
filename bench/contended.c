/*
 * contended.c - dlock-bench part 2: 8 processes on one name, hold 1 ms,
 * think 1 ms: cycles/s, hand-off latency, Jain's fairness, hand-backs;
 * then the same with the store's hand-off floor (handoff.h) in place of
 * dlock, and dlock's hand-off as a ratio to it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "handoff.h"
#include "run.h"

struct event {
    int64_t acquired, released; /* ns, monotonic */
    int proc;
};

struct shared {
    volatile int go, ready;
    int n;
    struct event ev[];
};

/* What one run of the shape gave. */
struct contended {
    double rate, jain, back, req; /* req: -1 where the server cannot count */
    int64_t p50, p99, max;        /* hand-off, ns */
};

/* dlock as a handoff_ops: the thing measured. */
struct dlock_c {
    dlock_store *s;
    dlock_lock *l;
    char name[128];
};

static void *dl_open(const char *u, const char *name)
{
    struct dlock_c *c = calloc(1, sizeof(*c));

    (void)u;
    if (c == NULL)
        return NULL;
    c->s = open_store();
    snprintf(c->name, sizeof(c->name), "%s", name);
    return c;
}

static int dl_acquire(void *p)
{
    struct dlock_c *c = p;
    dlock_options o = DLOCK_OPTIONS_INIT;

    o.wait_ms = DLOCK_WAIT_FOREVER;
    if (dlock_acquire(&c->l, c->s, c->name, &o) != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: contended acquire: %s\n", dlock_errmsg());
        return -1;
    }
    return 0;
}

static int dl_release(void *p)
{
    struct dlock_c *c = p;

    if (dlock_release(c->l) != DLOCK_OK) {
        fprintf(stderr, "dlock-bench: contended release: %s\n", dlock_errmsg());
        return -1;
    }
    return 0;
}

static void dl_close(void *p)
{
    struct dlock_c *c = p;

    dlock_store_close(c->s);
    free(c);
}

static const struct handoff_ops dlock_ops = {
    "dlock", NULL, dl_open, dl_acquire, dl_release, dl_close, NULL};

static void contender(const struct handoff_ops *ops, const char *name,
                      struct shared *sh, int proc, int secs, int max)
{
    void *c = ops->open(url, name);
    int64_t end;

    if (c == NULL)
        _exit(1);
    __atomic_fetch_add(&sh->ready, 1, __ATOMIC_SEQ_CST);
    while (!sh->go)
        sleep_us(100);
    end = now_ns() + (int64_t)secs * 1000000000;
    while (now_ns() < end) {
        int i;

        if (ops->acquire(c) != 0)
            _exit(1);
        i = __atomic_fetch_add(&sh->n, 1, __ATOMIC_SEQ_CST);
        if (i >= max)
            _exit(2);
        sh->ev[i].acquired = now_ns();
        sh->ev[i].proc = proc;
        sleep_us(1000); /* hold */
        sh->ev[i].released = now_ns();
        if (ops->release(c) != 0)
            _exit(1);
        sleep_us(1000); /* think */
    }
    ops->close(c);
    _exit(0);
}

static int cmp_ev(const void *a, const void *b)
{
    const struct event *x = a, *y = b;

    return x->acquired < y->acquired ? -1 : x->acquired > y->acquired;
}

enum { P = 8 };

/* The shape, run once with OPS on a name of its own. */
static void run_shape(const struct handoff_ops *ops, const char *tag,
                      struct contended *r)
{
    const int secs = quick ? 3 : 10, max = 400000;
    size_t size = sizeof(struct shared) + sizeof(struct event) * max;
    struct shared *sh = mmap(NULL, size, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int64_t *hand = NULL;
    long per[P] = {0}, back = 0, nh = 0;
    double sum = 0, sumsq = 0;
    pid_t pids[P];
    struct bench_noop *noop = NULL;
    long long r0 = -1, r1 = -1;
    char name[128];
    int n, bad = 0;

    if (sh == MAP_FAILED)
        exit(1);
    snprintf(name, sizeof(name), "%s/%s", run_id, tag);
    if (ops->setup != NULL && ops->setup(url) != 0) {
        fprintf(stderr, "dlock-bench: contended (%s): setup failed\n",
                ops->what);
        exit(1);
    }
    for (int p = 0; p < P; p++) {
        pids[p] = fork();
        if (pids[p] == 0)
            contender(ops, name, sh, p, secs, max);
    }
    /* All connected before the clock starts at "go". */
    while (sh->ready < P) {
        int st;
        pid_t q = waitpid(-1, &st, WNOHANG);

        if (q > 0) {
            fprintf(stderr,
                    "dlock-bench: contended (%s): a contender "
                    "failed before the start\n",
                    ops->what);
            exit(1);
        }
        sleep_us(1000);
    }
    if (bench_noop_open(&noop, url) == 0)
        r0 = bench_server_requests(noop);
    sh->go = 1;
    for (int p = 0; p < P; p++) {
        int st;

        waitpid(pids[p], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad = 1;
    }
    if (bad) {
        fprintf(stderr, "dlock-bench: contended (%s): a contender failed\n",
                ops->what);
        exit(1);
    }
    if (noop != NULL)
        r1 = bench_server_requests(noop);
    bench_noop_close(noop);
    if (ops->teardown != NULL)
        ops->teardown(url);
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
    r->jain = sumsq > 0 ? sum * sum / (P * sumsq) : 0;
    r->rate = n / (double)secs;
    r->p50 = pct(hand, (size_t)nh, 0.5);
    r->p99 = pct(hand, (size_t)nh, 0.99);
    r->max = nh ? hand[nh - 1] : 0;
    r->back = n > 1 ? (double)back / (n - 1) : 0;
    r->req = r0 >= 0 && r1 >= 0 && n > 0 ? (double)(r1 - r0) / n : -1;
    free(hand);
    munmap(sh, size);
}

static void say(const char *label, const struct contended *r)
{
    printf("%-12s %9.0f cycles/s  hand-off p50 %7.1f us  p99 %7.1f us  "
           "max %7.1f us  Jain %.3f  back to releaser %.1f%%  "
           "requests/cycle %.2f\n",
           label, r->rate, r->p50 / 1e3, r->p99 / 1e3, r->max / 1e3, r->jain,
           100.0 * r->back, r->req);
}

static void jshape(const struct contended *r)
{
    jnum("cycles_per_s", r->rate, 0);
    jnum("handoff_p50_us", r->p50 / 1e3, 0);
    jnum("handoff_p99_us", r->p99 / 1e3, 0);
    jnum("handoff_max_us", r->max / 1e3, 0);
    jnum("jain_fairness", r->jain, 0);
    jnum("back_to_releaser", r->back, 0);
    jnum("requests_per_cycle", r->req, 0);
}

void bench_contended(void)
{
    const struct handoff_ops *floor = no_floor ? NULL : handoff_floor(url);
    struct contended d, f;

    run_shape(&dlock_ops, "contended", &d);
    say("contended", &d);
    if (floor != NULL) {
        run_shape(floor, "handoff-floor", &f);
        say("  floor", &f);
        printf("  (floor: %s)\n", floor->what);
        printf("  hand-off p50 %.2fx the floor's, p99 %.2fx dlock's p50\n",
               f.p50 > 0 ? (double)d.p50 / (double)f.p50 : 0,
               d.p50 > 0 ? (double)d.p99 / (double)d.p50 : 0);
    }
    if (json != NULL)
        fprintf(json, "  \"contended\": {\n");
    jnum("processes", P, 0);
    jshape(&d);
    if (floor != NULL && json != NULL) {
        jnum("p50_to_floor", f.p50 > 0 ? (double)d.p50 / (double)f.p50 : 0, 0);
        fprintf(json, "    \"floor\": {\n      \"what\": \"%s\",\n",
                floor->what);
        jshape(&f);
        jnum("processes", P, 1);
        fprintf(json, "    },\n");
    }
    jnum("p99_over_p50", d.p50 > 0 ? (double)d.p99 / (double)d.p50 : 0, 1);
    if (json != NULL)
        fprintf(json, "  },\n");
}
