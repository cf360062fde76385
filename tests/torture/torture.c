/*
 * torture.c - many processes, injected faults, and a checker that reads the
 * whole history.  One machine, one clock: real-time order is exact.
 *
 *   torture URL [--workers N] [--seconds S] [--ttl MS] [--hold MS]
 *               [--workload mutex|counter|fenced|semaphore] [--limit N]
 *               [--fault none|kill|stop] [--expect-violation] [--renew]
 *               [--nemesis CMD [--every MS] [--revokes] [--quiet MS]]
 *               [--netns PREFIX [--hosts K]]
 *               [--clock-rate R [--clock-workers K] [--faketime LIB]]
 *               [--overlap-expected] [--elect]
 *
 * Workers loop: acquire (random wait), critical section, release, logging
 * every step with CLOCK_MONOTONIC timestamps to their own file.  Faults are
 * injected at random moments inside the critical section, by the worker on
 * itself so the moment is exactly "while holding": `kill` is SIGKILL (the
 * parent starts a replacement), `stop` is SIGSTOP (the parent sends SIGCONT
 * after 1.5 x the lease).
 *
 * Checks (one line each, PASS/FAIL):
 *  - mutex: the windows [acquire ok, release invoke] never overlap, each cut
 *    at acquire invoke + lease (a holder may not assume more: the lease
 *    started no earlier than the invoke) and at the holder's death;
 *  - fences strictly increase in acquisition order;
 *  - counter: the final value equals the acknowledged writes (no lost
 *    update); fenced: the same, with a store that refuses stale fences;
 *  - a holder resumed after its lease ran out gets DLOCK_LOST;
 *  - no release is told DLOCK_OK after another holder acquired the lock
 *    (invoked after the window's start, answered before the release's
 *    invoke: the store had handed the lock on, it was no longer this
 *    holder's);
 *  - semaphore (--limit N, default 3): no more than N of the same windows
 *    ever overlap, N do (else the run proved nothing), fences are unique
 *    and follow real-time order (an acquire that returned before another
 *    was invoked has the smaller fence: concurrent holders may log their
 *    acquisitions in either order).
 * --elect (or DLOCK_TORTURE_ELECT=1 in the environment, for the
 * harnesses that build the command line themselves): workers campaign
 * with dlock_elect() (value "worker I") instead of dlock_acquire(): a
 * leader is a holder, its term the fence, and every check above applies
 * to leaders unchanged (issue 45).
 *
 * Auto-renew is off: each lease is exactly the time a holder may use, so
 * pausing a holder past it is the fault under test.
 *
 * --nemesis runs a shell command from outside at random moments (on
 * average every --every ms, default 500): a server-wide fault such as
 * Redis's SCRIPT FLUSH or a server restart.  Each run counts as a fault.
 * With --revokes the fault takes every lock away (a restart of a store
 * that keeps locks in sessions or in memory, a kill of every client
 * connection): a holder's window is then cut where the fault began, since
 * another process may take the lock as soon as the server is back; a
 * holder whose window spans a whole fault must not be told its release
 * succeeded (it must get DLOCK_LOST or an error); and the fenced counter
 * must still lose nothing.  Without --revokes the fault must not change
 * who holds what: windows are not cut.
 *
 * --netns PREFIX puts worker i on "client host" PREFIX<i % K + 1> (K is
 * --hosts, default every worker its own): after fork, before it opens the
 * store, the worker joins the network namespace /run/netns/PREFIX<n>
 * (scripts/netns.sh makes them).  A nemesis then cuts hosts off
 * (tests/torture/netns-nemesis.sh); it finds the holders and waiters in
 * the workers' logs, in $DLOCK_TORTURE_DIR.
 *
 * --clock-rate R runs the first K workers (--clock-workers, default half)
 * with their clocks at R x real time: each re-executes itself under
 * libfaketime (LD_PRELOAD of --faketime LIB, FAKETIME="OFFSET xR": libc's
 * monotonic and boot clocks start where the kernel's are and run at R x;
 * sleeps and timeouts follow; the wall clock reads the boot clock, which
 * dlock shows but never trusts), so libdlock runs on that clock.  The harness's
 * own timestamps come from the kernel by syscall, which libfaketime does not
 * see: the history stays on one clock.
 *
 * Every run also reports the errors workers saw (by code, with the first
 * message), how soon a lock was taken again after a holder was killed,
 * and, with a nemesis, that workers acquired again after the last fault.
 * A worker that crashes (any end but the harness's own SIGKILL and a
 * clean exit) fails the run.
 *
 * --overlap-expected is for faults under which the store cannot promise
 * mutual exclusion (a split brain behind asynchronous replication, a
 * server clock that jumps past a lease): overlapping windows, fences out
 * of order and late releases are measured and reported (MEASURED lines),
 * not failed; lost fenced updates, crashes, progress and recovery still
 * fail the run.
 *
 * Every run ends with one line for tables, fixed format:
 *   summary: overlaps=N fences_out_of_order=N late_releases=N
 *     fenced_lost=N stale_refused=N told_lost=N faults=N
 *     new_holder_after_heal_ms=P50/MAX all_workers_back_ms=MS
 * told_lost: releases answered DLOCK_LOST; new_holder_after_heal_ms: for
 * each nemesis run, the first acquisition answered after the command
 * ended (a network nemesis ends right after its heal) minus that end
 * (p50 and max over the runs, "-" without a nemesis); all_workers_back_ms:
 * after the last nemesis run, until every worker had acquired again ("-"
 * if one never did).
 *
 * --expect-violation turns it around: the unfenced counter under `stop`
 * MUST show lost updates, proof that the harness can see a violation.
 * With the semaphore workload the workers ignore the limit (they ask the
 * store for N + 1) and the checker, still counting to N, MUST see N + 1
 * holders at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"

#define MAX_WORKERS 64
#define FAULT_ONE_IN 12 /* a fault in about one critical section of 12 */

enum workload { W_MUTEX, W_COUNTER, W_FENCED, W_SEM };
enum fault { F_NONE, F_KILL, F_STOP };

struct cfg {
    const char *url;
    char dir[256];
    int workers;
    int seconds;
    int64_t ttl;
    int hold_ms;
    int revokes;
    int renew; /* --renew: auto-renewed leases (holds may outlast one) */
    int elect; /* --elect: workers campaign (dlock_elect) */
    enum workload workload;
    unsigned limit; /* semaphore: at most this many holders */
    enum fault fault;
    int expect_violation;
    int overlap_expected; /* report overlaps, fail only lost updates */
    const char *nemesis;
    int every_ms;
    int quiet_ms;      /* no fault starts in the run's last quiet_ms */
    const char *netns; /* worker i joins /run/netns/<netns><i % hosts + 1> */
    int hosts;
    const char *clock_rate; /* workers < clock_workers run at this rate */
    int clock_workers;
    const char *faketime; /* libfaketime to preload for them */
    char name[64];
};

/* The kernel's monotonic clock, by syscall: a worker under libfaketime
 * (--clock-rate) must log on the same clock as every other process. */
static void real_now(struct timespec *ts)
{
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ts);
}

static int64_t now_ms(void)
{
    struct timespec ts;

    real_now(&ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t now_us(void)
{
    struct timespec ts;

    real_now(&ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(int64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* --- the shared resources ------------------------------------------------ */

/* A plain counter file: read, (pause), write.  Unprotected by anything but
 * the lock under test. */
static long counter_read(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = 0;

    if (f != NULL) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

static void counter_write(const char *path, long v)
{
    char tmp[600];
    FILE *f;

    snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
    f = fopen(tmp, "w");
    if (f == NULL)
        exit(90);
    fprintf(f, "%ld\n", v);
    fclose(f);
    rename(tmp, path);
}

/* A fenced store: every operation (read or write) carries the caller's
 * fence and is refused if an operation with a higher fence was seen
 * before.  Each operation is atomic (flock), as a storage server's would
 * be; the read-pause-write in between is not. */
static int fenced_op(const char *path, uint64_t fence, int write, long *v)
{
    unsigned long long seen = 0;
    long val = 0;
    int fd = open(path, O_RDWR | O_CREAT, 0644), ok;
    char buf[64];
    ssize_t n;

    if (fd < 0)
        exit(91);
    flock(fd, LOCK_EX);
    n = read(fd, buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    if (sscanf(buf, "%llu %ld", &seen, &val) != 2)
        seen = 0, val = 0;
    ok = fence >= seen;
    if (ok) {
        if (write)
            val = *v;
        else
            *v = val;
        n = snprintf(buf, sizeof(buf), "%llu %ld\n", (unsigned long long)fence,
                     val);
        if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n)
            exit(92);
    }
    flock(fd, LOCK_UN);
    close(fd);
    return ok;
}

/* --- workers ------------------------------------------------------------- */

static FILE *wlog;

static void logf_(const char *fmt, ...)
{
    va_list ap;

    fprintf(wlog, "%lld ", (long long)now_us());
    va_start(ap, fmt);
    vfprintf(wlog, fmt, ap);
    va_end(ap);
    fputc('\n', wlog);
    fflush(wlog); /* in the kernel before any fault */
}

static void maybe_fault(const struct cfg *c)
{
    if (c->fault == F_NONE || rand() % FAULT_ONE_IN != 0)
        return;
    if (c->fault == F_KILL) {
        logf_("K");
        raise(SIGKILL);
    }
    logf_("S");
    raise(SIGSTOP); /* the parent resumes us after 1.5 x the lease */
    logf_("C");
}

/* The time spent inside the critical section: 0 .. --hold ms (with
 * --renew, hold/2 .. hold: holds that outlast the lease). */
static int64_t hold_us(const struct cfg *c)
{
    int64_t us = rand() % (c->hold_ms * 1000 + 1);

    return c->renew ? c->hold_ms * 500 + us / 2 : us;
}

static int worker(const struct cfg *c, int idx, int gen, int64_t end)
{
    char path[512], counter[512];
    dlock_store *s;
    int rc;

    snprintf(path, sizeof(path), "%s/w%02d-%03d.log", c->dir, idx, gen);
    snprintf(counter, sizeof(counter), "%s/counter", c->dir);
    wlog = fopen(path, "w");
    if (wlog == NULL)
        return 80;
    srand((unsigned)(getpid() ^ now_us()));
    if (c->netns != NULL) {
        char ns[300];
        int fd;

        snprintf(ns, sizeof(ns), "/run/netns/%s%d", c->netns,
                 idx % c->hosts + 1);
        fd = open(ns, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
            fprintf(stderr, "worker %d: cannot join %s: %s\n", idx, ns,
                    strerror(errno));
            return 82;
        }
        close(fd);
    }
    /* A worker started (or restarted after kill -9) while a server fault
     * is under way meets a server that is down: as a real client would,
     * it tries again until the run ends.  The parent's first fault may
     * come 183 ms after the start (its rand() is not seeded), before an
     * ASan build has opened every worker's store. */
    while ((rc = dlock_store_open(&s, c->url)) == DLOCK_EUNAVAIL &&
           now_ms() < end)
        sleep_us(50000);
    if (rc != DLOCK_OK) {
        logf_("E open %s", dlock_errmsg());
        fprintf(stderr, "worker %d: cannot open the store: %s\n", idx,
                dlock_errmsg());
        return 81;
    }
    while (now_ms() < end) {
        dlock_options o = DLOCK_OPTIONS_INIT;
        dlock_lock *l;
        uint64_t fence;
        long v = 0;

        o.wait_ms = rand() % 4 == 0 ? 0 : rand() % 200;
        o.ttl_ms = c->ttl;
        /* Without --renew a hold must fit in one lease; with it, a holder
         * keeps its lock by renewal and ignores a loss (the unfenced
         * counter then shows what a cut-off holder that does not stop
         * does: the partition control). */
        o.auto_renew = c->renew;
        /* The control ignores the limit the checker counts to. */
        if (c->workload == W_SEM)
            o.limit = c->limit + (c->expect_violation ? 1 : 0);
        logf_("I");
        if (c->elect) {
            char value[32];

            snprintf(value, sizeof(value), "worker %d", idx);
            rc = dlock_elect(&l, s, c->name, value, &o);
        } else {
            rc = dlock_acquire(&l, s, c->name, &o);
        }
        if (rc == DLOCK_BUSY) {
            logf_("B");
            continue;
        }
        if (rc != DLOCK_OK) {
            logf_("E %d %s", rc, dlock_errmsg()); /* unknown outcome */
            sleep_us(10000);
            continue;
        }
        fence = dlock_fence(l);
        logf_("A %llu", (unsigned long long)fence);
        switch (c->workload) {
        case W_MUTEX:
        case W_SEM:
            maybe_fault(c);
            sleep_us(hold_us(c));
            break;
        case W_COUNTER:
            v = counter_read(counter);
            maybe_fault(c);
            sleep_us(hold_us(c));
            counter_write(counter, v + 1);
            logf_("W %ld", v + 1);
            break;
        case W_FENCED:
            if (!fenced_op(counter, fence, 0, &v)) {
                logf_("R");
                break;
            }
            maybe_fault(c);
            sleep_us(hold_us(c));
            v++;
            if (fenced_op(counter, fence, 1, &v))
                logf_("W %ld", v);
            else
                logf_("R");
            break;
        }
        logf_("U");
        rc = dlock_release(l);
        if (rc == DLOCK_OK || rc == DLOCK_LOST)
            logf_("u %d", rc);
        else
            logf_("u %d %s", rc, dlock_errmsg());
    }
    dlock_store_close(s);
    fclose(wlog);
    return 0;
}

/* --- the checker ---------------------------------------------------------- */

struct window {
    int64_t invoke, start, end;
    int64_t released; /* release invoke or death; 0 while unknown */
    int rel_rc;       /* the release's answer; 1 if none came */
    int killed;       /* the holder was killed while it held */
    uint64_t fence;
    int worker;
};

#define NCODES 16 /* -rc for rc in DLOCK_OK .. DLOCK_ENOMEM and beyond */

struct history {
    struct window *w;
    size_t n, cap;
    long ops, acquired, busy, unknown, writes, rejected, faults;
    long stops, stopped_then_lost, stopped_then_ok;
    long told_lost;                /* releases answered DLOCK_LOST */
    long errors[NCODES];           /* acquire and release errors by -rc */
    char first_error[NCODES][160]; /* the first message of each */
    int64_t *kills;                /* when holders were killed */
    size_t nkills, capkills;
};

/* Server-wide faults as the parent saw them: [start, end] of each nemesis
 * command, in microseconds of CLOCK_MONOTONIC. */
static struct {
    int64_t start, end;
} nemeses[4096];
/* A worker whose run ends while a nemesis is on, or less than this long
 * after its heal, runs on until this long after the heal. */
#define RECOVER_MS 3000
static size_t n_nemeses;

static int by_start(const void *a, const void *b)
{
    const struct window *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

static int by_value(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;

    return *x < *y ? -1 : *x > *y;
}

static void note_error(struct history *h, int rc, const char *line)
{
    int i = -rc >= 0 && -rc < NCODES ? -rc : NCODES - 1;
    const char *msg = line;

    /* "TIME EV RC message": keep the message. */
    for (int field = 0; field < 3 && msg != NULL; field++) {
        msg = strchr(msg, ' ');
        msg = msg != NULL ? msg + 1 : NULL;
    }
    if (h->errors[i]++ == 0 && msg != NULL) {
        snprintf(h->first_error[i], sizeof(h->first_error[i]), "%s", msg);
        h->first_error[i][strcspn(h->first_error[i], "\n")] = '\0';
    }
}

static void *grow(void *p, size_t *cap, size_t size)
{
    *cap = *cap ? *cap * 2 : 1024;
    p = realloc(p, *cap * size);
    if (p == NULL)
        exit(93);
    return p;
}

static void read_log(const struct cfg *c, const char *path, int worker,
                     struct history *h)
{
    FILE *f = fopen(path, "r");
    char line[512];
    int64_t invoke = 0, ttl_us = c->ttl * 1000;
    long open_w = -1; /* index of the window being held */
    long last_w = -1; /* ... and of the one being released */
    int stopped = 0;

    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        long long t;
        char ev;
        unsigned long long fence;
        int rc;

        if (sscanf(line, "%lld %c", &t, &ev) != 2)
            continue;
        switch (ev) {
        case 'I':
            invoke = t;
            h->ops++;
            break;
        case 'B':
            h->busy++;
            break;
        case 'E':
            h->unknown++;
            if (sscanf(line, "%*d %*c %d", &rc) == 1)
                note_error(h, rc, line);
            break;
        case 'A':
            if (sscanf(line, "%*d %*c %llu", &fence) != 1)
                break;
            if (h->n == h->cap)
                h->w = grow(h->w, &h->cap, sizeof(*h->w));
            h->w[h->n] = (struct window){invoke, t, invoke + ttl_us, 0,
                                         1,      0, fence,           worker};
            open_w = (long)h->n++;
            h->acquired++;
            break;
        case 'W':
            h->writes++;
            break;
        case 'R':
            h->rejected++;
            break;
        case 'S':
            h->faults++;
            h->stops++;
            stopped = 1;
            break;
        case 'K':
        case 'U':
            if (ev == 'K') {
                h->faults++;
                if (h->nkills == h->capkills)
                    h->kills = grow(h->kills, &h->capkills, sizeof(*h->kills));
                h->kills[h->nkills++] = t;
            }
            if (open_w >= 0) {
                h->w[open_w].killed = ev == 'K';
                if (t < h->w[open_w].end)
                    h->w[open_w].end = t;
                h->w[open_w].released = t;
            }
            last_w = open_w;
            open_w = -1;
            break;
        case 'u':
            if (sscanf(line, "%*d %*c %d", &rc) != 1)
                break;
            if (last_w >= 0)
                h->w[last_w].rel_rc = rc;
            h->told_lost += rc == DLOCK_LOST;
            if (rc != DLOCK_OK && rc != DLOCK_LOST)
                note_error(h, rc, line);
            if (stopped) {
                if (rc == DLOCK_LOST)
                    h->stopped_then_lost++;
                else
                    h->stopped_then_ok++;
            }
            stopped = 0;
            break;
        }
    }
    fclose(f);
}

/* A fault that revokes every lock: cut each window that overlaps it at the
 * fault's start, and count the holders that lived through a whole fault
 * and what their release was told. */
static void apply_revocations(struct history *h, long *spanned, long told[3])
{
    for (size_t i = 0; i < h->n; i++) {
        struct window *w = &h->w[i];

        for (size_t k = 0; k < n_nemeses; k++) {
            if (w->start < nemeses[k].end && w->end > nemeses[k].start)
                w->end =
                    w->start > nemeses[k].start ? w->start : nemeses[k].start;
            if (w->start < nemeses[k].start && w->released > nemeses[k].end) {
                (*spanned)++;
                told[w->rel_rc == DLOCK_OK     ? 0
                     : w->rel_rc == DLOCK_LOST ? 1
                                               : 2]++;
                break;
            }
        }
    }
}

static long nemesis_runs, crashes;

/* Releases told DLOCK_OK although the store handed the lock on before the
 * release was invoked: another holder whose acquire was invoked after this
 * window began (so its grant came after this one's) and returned before
 * this release was invoked.  The token could no longer own the lock.  (A
 * holder cut off from its store, or paused, past its lease.)  An acquire
 * invoked earlier proves nothing: its grant may predate this window, its
 * answer delayed.  Mutex windows, sorted by start. */
static long late_releases(const struct history *h)
{
    long late = 0;

    for (size_t i = 0; i < h->n; i++) {
        const struct window *w = &h->w[i];

        if (w->rel_rc != DLOCK_OK || w->released == 0 || w->killed)
            continue;
        for (size_t j = i + 1; j < h->n && h->w[j].start < w->released; j++) {
            const struct window *x = &h->w[j];

            if (x->invoke < w->start)
                continue;
            late++;
            if (late <= 3)
                fprintf(stderr,
                        "  late release: worker %d fence %llu "
                        "released at %lld told OK, worker %d acquired at "
                        "%lld (invoked at %lld)\n",
                        w->worker, (unsigned long long)w->fence,
                        (long long)w->released, x->worker, (long long)x->start,
                        (long long)x->invoke);
            break;
        }
    }
    return late;
}

struct edge {
    int64_t t;
    int delta; /* +1 a window starts, -1 one ends */
};

static int by_edge(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;

    /* An end at the very moment of a start comes first: windows that
     * only touch do not overlap (as in the mutex check). */
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->delta - y->delta;
}

static int by_invoke(const void *a, const void *b)
{
    const struct window *x = a, *y = b;

    return x->invoke < y->invoke ? -1 : x->invoke > y->invoke;
}

static int by_fence(const void *a, const void *b)
{
    const struct window *x = a, *y = b;

    return x->fence < y->fence ? -1 : x->fence > y->fence;
}

/* Semaphore: the most windows open at once, how many windows started
 * with N or more already open (*over), and the ms with N open.  lease_us
 * > 0: a killed holder's window runs to its lease end instead of its
 * death (its slot, not its work: see the caller). */
static unsigned max_overlap(const struct history *h, unsigned n, long *over,
                            double *full_ms, int64_t lease_us)
{
    struct edge *e = calloc(2 * h->n + 1, sizeof(*e));
    unsigned open = 0, most = 0;
    int64_t full_since = 0, full_us = 0;

    if (e == NULL)
        exit(93);
    for (size_t i = 0; i < h->n; i++) {
        int64_t end = lease_us > 0 && h->w[i].killed ? h->w[i].invoke + lease_us
                                                     : h->w[i].end;

        e[2 * i] = (struct edge){h->w[i].start, +1};
        /* A window cut before it began (a revocation) never opened. */
        e[2 * i + 1] =
            (struct edge){end > h->w[i].start ? end : h->w[i].start, -1};
    }
    qsort(e, 2 * h->n, sizeof(*e), by_edge);
    *over = 0;
    for (size_t i = 0; i < 2 * h->n; i++) {
        if (e[i].delta > 0) {
            if (open >= n)
                (*over)++;
            if (++open > most)
                most = open;
            if (open == n)
                full_since = e[i].t;
        } else {
            if (open == n)
                full_us += e[i].t - full_since;
            open--;
        }
    }
    free(e);
    *full_ms = full_us / 1000.0;
    return most;
}

/* Semaphore fences: unique, and an acquire that returned before another
 * was invoked has the smaller one.  Reorders h->w. */
static long sem_fence_errors(struct history *h)
{
    struct window *by_start_w = malloc(h->n * sizeof(*by_start_w) + 1);
    uint64_t done_max = 0;
    long errors = 0;
    size_t j = 0;

    if (by_start_w == NULL)
        exit(93);
    memcpy(by_start_w, h->w, h->n * sizeof(*by_start_w));
    qsort(by_start_w, h->n, sizeof(*by_start_w), by_start);
    qsort(h->w, h->n, sizeof(*h->w), by_invoke);
    for (size_t i = 0; i < h->n; i++) {
        while (j < h->n && by_start_w[j].start < h->w[i].invoke) {
            if (by_start_w[j].fence > done_max)
                done_max = by_start_w[j].fence;
            j++;
        }
        if (h->w[i].fence <= done_max)
            errors++;
    }
    free(by_start_w);
    qsort(h->w, h->n, sizeof(*h->w), by_fence);
    for (size_t i = 1; i < h->n; i++)
        errors += h->w[i].fence == h->w[i - 1].fence;
    qsort(h->w, h->n, sizeof(*h->w), by_start);
    return errors;
}

/* Millisecond figure, or "-" when there is none. */
static const char *ms_or_dash(char *buf, size_t size, int64_t us)
{
    if (us < 0)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%.1f", us / 1000.0);
    return buf;
}

/* After each nemesis run (its command ended: a network nemesis right
 * after its heal), how soon a lock was answered again; after the last
 * one, how soon every worker had one.  Then the summary line.  h->w is
 * sorted by start. */
static void summarize(const struct cfg *c, const struct history *h,
                      long overlaps, long fence_errors, long late,
                      long lost_updates)
{
    int64_t *gap = calloc(n_nemeses + 1, sizeof(*gap)), all = -1;
    size_t ngap = 0;
    char p50[32], max[32], back[32];

    if (gap == NULL)
        exit(93);
    for (size_t k = 0; k < n_nemeses; k++) {
        if (nemeses[k].end == 0)
            continue; /* still running at the end: no heal */
        for (size_t i = 0; i < h->n; i++)
            if (h->w[i].start > nemeses[k].end) {
                gap[ngap++] = h->w[i].start - nemeses[k].end;
                break;
            }
    }
    if (n_nemeses > 0 && nemeses[n_nemeses - 1].end > 0) {
        int64_t last = nemeses[n_nemeses - 1].end, first[MAX_WORKERS];
        int seen = 0;

        for (int w = 0; w < c->workers; w++)
            first[w] = -1;
        for (size_t i = 0; i < h->n; i++)
            if (h->w[i].start > last && h->w[i].worker >= 0 &&
                h->w[i].worker < c->workers && first[h->w[i].worker] < 0) {
                first[h->w[i].worker] = h->w[i].start - last;
                seen++;
                if (first[h->w[i].worker] > all)
                    all = first[h->w[i].worker];
            }
        if (seen < c->workers)
            all = -1;
        if (seen == c->workers)
            printf("INFO after the last heal: every worker acquired again "
                   "within %.1f ms\n",
                   all / 1000.0);
        else
            printf("INFO after the last heal: %d of %d workers acquired "
                   "again\n",
                   seen, c->workers);
    }
    if (ngap > 0) {
        qsort(gap, ngap, sizeof(*gap), by_value);
        printf("INFO new holder after a heal: %zu heals, p50 %.1f ms, max "
               "%.1f ms\n",
               ngap, gap[ngap / 2] / 1000.0, gap[ngap - 1] / 1000.0);
    }
    printf("summary: overlaps=%ld fences_out_of_order=%ld late_releases=%ld "
           "fenced_lost=%ld stale_refused=%ld told_lost=%ld faults=%ld "
           "new_holder_after_heal_ms=%s/%s all_workers_back_ms=%s\n",
           overlaps, fence_errors, late,
           c->workload == W_FENCED ? lost_updates : 0, h->rejected,
           h->told_lost, h->faults + nemesis_runs,
           ngap ? ms_or_dash(p50, sizeof(p50), gap[ngap / 2]) : "-",
           ngap ? ms_or_dash(max, sizeof(max), gap[ngap - 1]) : "-",
           ms_or_dash(back, sizeof(back), all));
    free(gap);
}

static int check(const struct cfg *c, int gens[])
{
    struct history h = {0};
    long overlaps = 0, fence_errors = 0, final, lost_updates;
    long spanned = 0, told[3] = {0}; /* OK, LOST, an error */
    const struct window *last_fence = NULL;
    long over = 0, late = 0;
    unsigned most = 0, most_slots = 0;
    double full_ms = 0;
    int64_t max_end = 0;
    const struct window *max_w = NULL;
    char path[512];
    int fails = 0;

    for (int i = 0; i < c->workers; i++)
        for (int g = 0; g <= gens[i]; g++) {
            snprintf(path, sizeof(path), "%s/w%02d-%03d.log", c->dir, i, g);
            read_log(c, path, i, &h);
        }
    if (h.n > 0)
        qsort(h.w, h.n, sizeof(*h.w), by_start);
    if (c->revokes)
        apply_revocations(&h, &spanned, told);
    for (size_t i = 0; i < h.n; i++) {
        if (i > 0 && h.w[i].start < max_end) {
            overlaps++;
            if (overlaps <= 3 && c->workload != W_SEM) {
                fprintf(stderr,
                        "  overlap: worker %d fence %llu [%lld, "
                        "%lld] (invoked %lld), before worker %d fence %llu "
                        "[%lld, %lld] (invoked %lld) ends\n",
                        h.w[i].worker, (unsigned long long)h.w[i].fence,
                        (long long)h.w[i].start, (long long)h.w[i].end,
                        (long long)h.w[i].invoke, max_w->worker,
                        (unsigned long long)max_w->fence,
                        (long long)max_w->start, (long long)max_end,
                        (long long)max_w->invoke);
                /* Where the server faults were, to tell a hole from a
                 * fault the checker does not model. */
                for (size_t k = 0; k < n_nemeses; k++)
                    fprintf(stderr, "    server fault %zu: [%lld, %lld]\n", k,
                            (long long)nemeses[k].start,
                            (long long)nemeses[k].end);
            }
        }
        if (h.w[i].end > max_end) {
            max_end = h.w[i].end;
            max_w = &h.w[i];
        }
        /* Fences rise in the order holdings began.  A window a revoking
         * fault cut to nothing was no holding: its acquire was answered
         * after the server had already dropped the lock (a reply that
         * crossed a restart on a busy machine), so its fence, older than
         * one handed out after the restart, says nothing about order. */
        if (h.w[i].end <= h.w[i].start && c->revokes)
            continue;
        if (last_fence != NULL && h.w[i].fence <= last_fence->fence) {
            fence_errors++;
            if (fence_errors <= 3 && c->workload != W_SEM)
                fprintf(stderr,
                        "  fence: worker %d fence %llu at %lld "
                        "after worker %d fence %llu at %lld\n",
                        h.w[i].worker, (unsigned long long)h.w[i].fence,
                        (long long)h.w[i].start, last_fence->worker,
                        (unsigned long long)last_fence->fence,
                        (long long)last_fence->start);
        }
        last_fence = &h.w[i];
    }
    if (c->workload == W_SEM) {
        long over_slots;
        double full_slots_ms;

        most = max_overlap(&h, c->limit, &over, &full_ms, 0);
        /* The proof of a full semaphore counts a killed holder's slot
         * until its lease end: a store with only leases (Redis) may keep
         * it that long (DESIGN 1), making N live holders at once rare. */
        most_slots = max_overlap(&h, c->limit, &over_slots, &full_slots_ms,
                                 (int64_t)c->ttl * 1000);
        fence_errors = sem_fence_errors(&h);
    }
    snprintf(path, sizeof(path), "%s/counter", c->dir);
    if (c->workload == W_FENCED) {
        long v = 0;

        fenced_op(path, UINT64_MAX, 0, &v);
        final = v;
    } else {
        final = counter_read(path);
    }
    lost_updates =
        c->workload == W_MUTEX || c->workload == W_SEM ? 0 : h.writes - final;

    printf("history: %ld ops, %ld acquired, %ld busy, %ld unknown, %ld "
           "holder faults, %ld server faults\n",
           h.ops, h.acquired, h.busy, h.unknown, h.faults, nemesis_runs);
    for (int i = 1; i < NCODES; i++)
        if (h.errors[i] > 0)
            printf("  errors: %ld x %s, first: %s\n", h.errors[i],
                   dlock_strerror(-i), h.first_error[i]);
    /* With N slots, someone else may take one right after a kill whether
     * or not the dead holder's slot was freed: the measure says nothing
     * there (the contract suite times a freed slot). */
    if (h.nkills > 0 && c->workload != W_SEM) {
        /* How soon after a holder's death someone held the lock again. */
        int64_t *gap = calloc(h.nkills, sizeof(*gap));
        size_t ngap = 0, j = 0;

        if (gap == NULL)
            exit(93);
        qsort(h.kills, h.nkills, sizeof(*h.kills), by_value);
        for (size_t k = 0; k < h.nkills; k++) {
            while (j < h.n && h.w[j].start <= h.kills[k])
                j++;
            if (j < h.n)
                gap[ngap++] = h.w[j].start - h.kills[k];
        }
        if (ngap > 0) {
            qsort(gap, ngap, sizeof(*gap), by_value);
            /* Free again within the lease (sooner where the store sees
             * the death), give or take a second of scheduling. */
            int late = gap[ngap - 1] > (c->ttl + 1000) * 1000;

            printf("%s taken again after kill -9: %zu kills, p50 %.1f ms, "
                   "max %.1f ms (lease %lld ms)\n",
                   late ? "FAIL" : "PASS", ngap, gap[ngap / 2] / 1000.0,
                   gap[ngap - 1] / 1000.0, (long long)c->ttl);
            fails += late;
        }
        free(gap);
    }
    if (crashes > 0) {
        printf("FAIL crashes: %ld worker(s) ended by a signal or an error\n",
               crashes);
        fails++;
    }
    if (c->workload == W_SEM && !c->expect_violation) {
        /* The windows are cut as for the mutex: at the lease and at the
         * holder's death. */
        int bad = most > c->limit || over != 0;

        printf("%s semaphore: at most %u holders at once (limit %u), %ld "
               "admitted past the limit, %.0f ms with all %u slots taken\n",
               bad ? "FAIL" : "PASS", most, c->limit, over, full_ms, c->limit);
        fails += bad;
        if (most_slots < c->limit) {
            printf("FAIL semaphore: never %u holders at once: the run "
                   "proved nothing\n",
                   c->limit);
            fails++;
        } else if (most < c->limit) {
            printf("PASS semaphore: all %u slots taken at once only with "
                   "killed holders' slots counted to their lease end\n",
                   c->limit);
        }
        printf("%s fences: %ld duplicate or out of real-time order\n",
               fence_errors ? "FAIL" : "PASS", fence_errors);
        fails += fence_errors != 0;
    } else if (c->workload == W_SEM) {
        printf("%s control: at most %u holders at once (workers asked for "
               "%u, the checker counts to %u), %ld admitted past %u; the "
               "harness %s a violation\n",
               over > 0 ? "PASS" : "FAIL", most, c->limit + 1, c->limit, over,
               c->limit, over > 0 ? "sees" : "did NOT see");
        fails += over <= 0;
    }
    if (!c->expect_violation) {
        /* Overlaps of lease windows are only meaningful as a check of the
         * lock; with stop faults a paused holder's window is cut at its
         * lease, which is what the lock promises. */
        if (c->workload != W_SEM) {
            /* Measured, not failed, where the store cannot promise it. */
            const char *bad = c->overlap_expected ? "MEASURED" : "FAIL";
            int weight = !c->overlap_expected;

            printf("%s mutex: %ld overlapping holders\n",
                   overlaps ? bad : "PASS", overlaps);
            fails += weight * (overlaps != 0);
            printf("%s fences: %ld out of order\n", fence_errors ? bad : "PASS",
                   fence_errors);
            fails += weight * (fence_errors != 0);
            late = late_releases(&h);
            printf("%s late releases: %ld told OK after the lock had "
                   "passed on\n",
                   late ? bad : "PASS", late);
            fails += weight * (late != 0);
        }
        if (c->workload == W_COUNTER || c->workload == W_FENCED) {
            printf("%s counter: final %ld, %ld acknowledged writes, %ld lost "
                   "updates, %ld stale writes refused\n",
                   lost_updates ? "FAIL" : "PASS", final, h.writes,
                   lost_updates, h.rejected);
            fails += lost_updates != 0;
        }
        if (c->fault == F_STOP) {
            printf("%s resumed holders: %ld paused, %ld got LOST, %ld "
                   "released as if still held\n",
                   h.stopped_then_ok ? "FAIL" : "PASS", h.stops,
                   h.stopped_then_lost, h.stopped_then_ok);
            fails += h.stopped_then_ok != 0;
        }
        if (c->revokes) {
            printf("%s revoked holders: %ld held through a server fault, "
                   "%ld told LOST, %ld told an error, %ld released as if "
                   "still held\n",
                   told[0] ? "FAIL" : "PASS", spanned, told[1], told[2],
                   told[0]);
            fails += told[0] != 0;
        }
        if (c->nemesis != NULL) {
            /* After the last fault the store must serve again. */
            int64_t last = n_nemeses ? nemeses[n_nemeses - 1].end : 0;
            long after = 0;

            for (size_t i = 0; i < h.n; i++)
                after += h.w[i].start > last;
            printf("%s recovery: %ld acquisitions after the last server "
                   "fault\n",
                   after > 0 ? "PASS" : "FAIL", after);
            fails += after == 0;
        }
        if (h.faults + nemesis_runs == 0 &&
            (c->fault != F_NONE || c->nemesis != NULL)) {
            printf("FAIL faults: none were injected\n");
            fails++;
        }
        /* Renewed holds outlast leases: fewer of them fit in a run. */
        if (h.acquired < (c->renew ? 3 : 10)) {
            printf("FAIL progress: only %ld acquisitions\n", h.acquired);
            fails++;
        }
    } else if (c->workload != W_SEM) {
        printf("%s control: %ld lost updates (final %ld, %ld acknowledged); "
               "the harness %s a violation\n",
               lost_updates > 0 ? "PASS" : "FAIL", lost_updates, final,
               h.writes, lost_updates > 0 ? "sees" : "did NOT see");
        fails += lost_updates <= 0;
    }
    if (!c->expect_violation)
        summarize(c, &h, overlaps, fence_errors, late, lost_updates);
    free(h.w);
    free(h.kills);
    return fails;
}

/* --- the parent: start workers, resume or replace them, check ----------- */

static void usage(void)
{
    fprintf(stderr, "usage: torture URL [--workers N] [--seconds S] "
                    "[--ttl MS] [--hold MS] "
                    "[--workload mutex|counter|fenced|semaphore] [--limit N] "
                    "[--fault none|kill|stop] [--expect-violation] [--renew] "
                    "[--nemesis CMD [--every MS] [--revokes] [--quiet MS]] "
                    "[--netns PREFIX [--hosts K]] "
                    "[--clock-rate R [--clock-workers K] [--faketime LIB]] "
                    "[--overlap-expected] [--elect]\n");
    exit(64);
}

/* A worker whose clock runs at another rate re-executes this program
 * under libfaketime with --as-worker IDX GEN END DIR NAME after the
 * parent's own arguments. */
static void exec_faked_worker(const struct cfg *c, char **argv, int idx,
                              int gen, int64_t end)
{
    char n[3][32], env[96], *asan, *args[128];
    struct timespec boot, wall;
    int argc = 0;
    size_t len;

    while (argv[argc] != NULL && argc < 120) {
        args[argc] = argv[argc];
        argc++;
    }
    snprintf(n[0], sizeof(n[0]), "%d", idx);
    snprintf(n[1], sizeof(n[1]), "%d", gen);
    snprintf(n[2], sizeof(n[2]), "%lld", (long long)end);
    args[argc++] = "--as-worker";
    args[argc++] = n[0];
    args[argc++] = n[1];
    args[argc++] = n[2];
    args[argc++] = (char *)c->dir;
    args[argc++] = (char *)c->name;
    args[argc] = NULL;
    /* libfaketime counts its monotonic and boot clocks from the fake wall
     * clock: set that to the boot clock's reading, so that they start
     * where the kernel's are and only their rate differs (SQLite keeps
     * leases on CLOCK_BOOTTIME, shared by every process). */
    syscall(SYS_clock_gettime, CLOCK_BOOTTIME, &boot);
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &wall);
    snprintf(env, sizeof(env), "%+.6f x%s",
             (double)(boot.tv_sec - wall.tv_sec) +
                 (double)(boot.tv_nsec - wall.tv_nsec) / 1e9,
             c->clock_rate);
    setenv("FAKETIME", env, 1);
    setenv("LD_PRELOAD", c->faketime, 1);
    /* ASan wants to be first in the list of libraries; libfaketime is. */
    len = strlen(getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "") + 40;
    asan = malloc(len);
    if (asan != NULL) {
        snprintf(asan, len, "%s%sverify_asan_link_order=0",
                 getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "",
                 getenv("ASAN_OPTIONS") ? ":" : "");
        setenv("ASAN_OPTIONS", asan, 1);
        free(asan);
    }
    execv("/proc/self/exe", args);
    fprintf(stderr, "worker %d: cannot re-execute: %s\n", idx, strerror(errno));
    _exit(83);
}

static pid_t start_worker(const struct cfg *c, char **argv, int idx, int gen,
                          int64_t end)
{
    pid_t pid = fork();

    if (pid == 0) {
        if (c->clock_rate != NULL && idx < c->clock_workers)
            exec_faked_worker(c, argv, idx, gen, end);
        _exit(worker(c, idx, gen, end));
    }
    return pid;
}

int main(int argc, char **argv)
{
    struct cfg c = {0};
    pid_t pids[MAX_WORKERS], nem = -1;
    int gens[MAX_WORKERS] = {0}, alive, fails;
    int64_t resume_at[MAX_WORKERS] = {0}, end, nem_at;
    char *shown;
    int as_worker = -1, as_gen = 0;
    int64_t as_end = 0;

    if (argc < 2)
        usage();
    c.url = argv[1];
    if (c.url[0] == '\0') {
        /* An unset DLOCK_TEST_*_URL must not test the default store. */
        fprintf(stderr, "torture: empty URL\n");
        return 64;
    }
    c.workers = 8;
    c.seconds = 5;
    c.ttl = 300;
    c.hold_ms = 2;
    c.limit = 3;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(a, "--expect-violation") == 0) {
            c.expect_violation = 1;
            continue;
        }
        if (strcmp(a, "--revokes") == 0) {
            c.revokes = 1;
            continue;
        }
        if (strcmp(a, "--renew") == 0) {
            c.renew = 1;
            continue;
        }
        if (strcmp(a, "--elect") == 0) {
            c.elect = 1;
            continue;
        }
        if (strcmp(a, "--overlap-expected") == 0) {
            c.overlap_expected = 1;
            continue;
        }
        if (strcmp(a, "--as-worker") == 0 && i + 5 < argc) {
            as_worker = atoi(argv[i + 1]);
            as_gen = atoi(argv[i + 2]);
            as_end = atoll(argv[i + 3]);
            snprintf(c.dir, sizeof(c.dir), "%s", argv[i + 4]);
            snprintf(c.name, sizeof(c.name), "%s", argv[i + 5]);
            i += 5;
            continue;
        }
        if (v == NULL)
            usage();
        i++;
        if (strcmp(a, "--workers") == 0)
            c.workers = atoi(v);
        else if (strcmp(a, "--seconds") == 0)
            c.seconds = atoi(v);
        else if (strcmp(a, "--ttl") == 0)
            c.ttl = atoi(v);
        else if (strcmp(a, "--hold") == 0)
            c.hold_ms = atoi(v);
        else if (strcmp(a, "--limit") == 0)
            c.limit = (unsigned)atoi(v);
        else if (strcmp(a, "--nemesis") == 0)
            c.nemesis = v;
        else if (strcmp(a, "--every") == 0)
            c.every_ms = atoi(v);
        else if (strcmp(a, "--quiet") == 0)
            c.quiet_ms = atoi(v);
        else if (strcmp(a, "--netns") == 0)
            c.netns = v;
        else if (strcmp(a, "--hosts") == 0)
            c.hosts = atoi(v);
        else if (strcmp(a, "--clock-rate") == 0)
            c.clock_rate = v;
        else if (strcmp(a, "--clock-workers") == 0)
            c.clock_workers = atoi(v);
        else if (strcmp(a, "--faketime") == 0)
            c.faketime = v;
        else if (strcmp(a, "--workload") == 0)
            c.workload = !strcmp(v, "mutex")       ? W_MUTEX
                         : !strcmp(v, "counter")   ? W_COUNTER
                         : !strcmp(v, "fenced")    ? W_FENCED
                         : !strcmp(v, "semaphore") ? W_SEM
                                                   : (usage(), W_MUTEX);
        else if (strcmp(a, "--fault") == 0)
            c.fault = !strcmp(v, "none")   ? F_NONE
                      : !strcmp(v, "kill") ? F_KILL
                      : !strcmp(v, "stop") ? F_STOP
                                           : (usage(), F_NONE);
        else
            usage();
    }
    if (c.workers < 1 || c.workers > MAX_WORKERS || c.seconds < 1 ||
        c.ttl < 50 || c.hold_ms < 0 || c.hold_ms > 60000 || c.limit < 2 ||
        c.limit >= DLOCK_LIMIT_MAX || c.hosts < 0 ||
        (c.nemesis != NULL && c.seconds < 3) ||
        (c.clock_rate != NULL && atof(c.clock_rate) <= 0))
        usage();
    if (getenv("DLOCK_TORTURE_ELECT") != NULL &&
        strcmp(getenv("DLOCK_TORTURE_ELECT"), "1") == 0)
        c.elect = 1;
    if (c.elect && c.workload == W_SEM)
        usage(); /* a leader is alone */
    if (c.hosts == 0 || c.hosts > c.workers)
        c.hosts = c.workers;
    if (c.elect && as_worker < 0)
        printf("workers campaign (dlock_elect)\n");
    if (as_worker >= 0)
        return worker(&c, as_worker, as_gen, as_end);
    if (c.clock_workers <= 0 || c.clock_workers > c.workers)
        c.clock_workers = c.workers / 2 > 0 ? c.workers / 2 : 1;
    if (c.faketime == NULL)
        c.faketime = getenv("DLOCK_FAKETIME_LIB");
    if (c.faketime == NULL)
        c.faketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
    if (c.clock_rate != NULL && access(c.faketime, R_OK) != 0) {
        fprintf(stderr, "torture: no libfaketime at %s (package faketime)\n",
                c.faketime);
        return 69;
    }
    snprintf(c.dir, sizeof(c.dir), "/tmp/dlock-torture.XXXXXX");
    if (mkdtemp(c.dir) == NULL)
        return 70;
    snprintf(c.name, sizeof(c.name), "torture-%d", (int)getpid());
    /* For a nemesis that aims (the cluster script kills the master that
     * serves this name). */
    setenv("DLOCK_TORTURE_NAME", c.name, 1);
    /* For a nemesis that aims at a holder or a waiter (netns-nemesis.sh
     * reads the workers' logs). */
    setenv("DLOCK_TORTURE_DIR", c.dir, 1);
    if (dlock_url_redact(&shown, c.url) != DLOCK_OK)
        shown = NULL;
    printf("torture: %s, %d workers, %d s, lease %lld ms, hold <= %d ms, "
           "workload %s, fault %s%s%s%s",
           shown ? shown : "(bad URL)", c.workers, c.seconds, (long long)c.ttl,
           c.hold_ms,
           c.workload == W_MUTEX     ? "mutex"
           : c.workload == W_COUNTER ? "counter"
           : c.workload == W_FENCED  ? "fenced"
           : c.expect_violation      ? "semaphore (workers ask one more)"
                                     : "semaphore",
           c.fault == F_NONE   ? "none"
           : c.fault == F_KILL ? "kill"
                               : "stop",
           c.nemesis ? ", nemesis: " : "", c.nemesis ? c.nemesis : "",
           c.revokes ? " (revokes every lock)" : "");
    if (c.clock_rate != NULL)
        printf(", clock x%s in %d of %d workers", c.clock_rate, c.clock_workers,
               c.workers);
    if (c.netns != NULL)
        printf(", on %d hosts %s1..", c.hosts, c.netns);
    if (c.overlap_expected)
        printf(", overlaps measured, not failed");
    printf("\n");
    fflush(stdout);
    dlock_free(shown);

    if (c.every_ms <= 0)
        c.every_ms = 500;
    if (c.quiet_ms <= 0)
        c.quiet_ms = 2000;
    end = now_ms() + c.seconds * 1000LL;
    nem_at = now_ms() + rand() % (2 * c.every_ms);
    for (int i = 0; i < c.workers; i++)
        pids[i] = start_worker(&c, argv, i, 0, end);
    alive = c.workers;
    while (alive > 0 || nem > 0) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG | WUNTRACED);
        int idx = -1;

        if (p > 0 && p == nem) {
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "nemesis command failed (%d)\n", status);
                crashes++;
            }
            nemeses[n_nemeses - 1].end = now_us();
            nem = -1;
            nemesis_runs++;
            continue;
        }
        /* No server fault in the last --quiet ms (2 s): the run must show
         * that the store serves again after one. */
        if (c.nemesis != NULL && nem < 0 && now_ms() >= nem_at &&
            now_ms() < end - c.quiet_ms &&
            n_nemeses < sizeof(nemeses) / sizeof(nemeses[0])) {
            nemeses[n_nemeses++].start = now_us();
            nem = fork();
            if (nem == 0) {
                execl("/bin/sh", "sh", "-c", c.nemesis, (char *)NULL);
                _exit(127);
            }
            nem_at = now_ms() + rand() % (2 * c.every_ms);
        }

        for (int i = 0; i < c.workers; i++)
            if (pids[i] == p)
                idx = i;
        if (p > 0 && idx >= 0) {
            if (WIFSTOPPED(status)) {
                resume_at[idx] = now_ms() + c.ttl * 3 / 2;
            } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
                       now_ms() < end) {
                pids[idx] = start_worker(&c, argv, idx, ++gens[idx], end);
            } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                       c.nemesis != NULL && n_nemeses > 0 &&
                       (nem > 0 ||
                        now_ms() <
                            nemeses[n_nemeses - 1].end / 1000 + RECOVER_MS)) {
                /* Its time is up, but a fault is still on (a nemesis that
                 * waits for a failover can outlast the run) or healed just
                 * now: it runs on, a new generation, until RECOVER_MS after
                 * the heal, so that recovery is seen, not cut off. */
                int64_t until =
                    nem > 0 ? now_ms() + RECOVER_MS
                            : nemeses[n_nemeses - 1].end / 1000 + RECOVER_MS;

                pids[idx] = start_worker(&c, argv, idx, ++gens[idx], until);
            } else {
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
                        fprintf(stderr, "worker %d ended badly (%d)\n", idx,
                                status);
                        crashes++;
                    }
                }
                pids[idx] = -1;
                alive--;
            }
            continue;
        }
        for (int i = 0; i < c.workers; i++)
            if (resume_at[i] && now_ms() >= resume_at[i]) {
                resume_at[i] = 0;
                kill(pids[i], SIGCONT);
            }
        sleep_us(5000);
    }
    fails = check(&c, gens);
    {
        char cmd[300];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c.dir);
        if (fails == 0 && getenv("TORTURE_KEEP") == NULL && system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", c.dir);
    }
    if (fails)
        printf("logs kept in %s\n", c.dir);
    return fails ? 1 : 0;
}
