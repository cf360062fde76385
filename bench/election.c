/*
 * election.c - dlock-bench part 6 (--only elect): how soon leadership
 * moves and how soon an observer sees it (issue 45).
 *
 *  - takeover after resignation: a candidate waits in dlock_elect() on
 *    a second handle; the leader releases; the time until the waiter
 *    leads, median of the rounds, and its ratio to the server's raw
 *    round trip measured in the same run;
 *  - takeover after kill -9 of a leader with a 5 s lease: what the store
 *    does about a dead leader (a session that ends, or the lease);
 *  - observe: a dlock_observe() on a handle of its own; the leader
 *    elects, proclaims and resigns in turn, and each change's callback
 *    is timed from the return of the call that made it (each 50 ms
 *    after the observer's last read: an observer reads at most every
 *    20 ms, so changes closer together wait for that): median and max,
 *    and the same ratio.  On a polled store (SQLite, MariaDB/MySQL) it
 *    is bounded by DLOCK_OBSERVE_POLL_MS.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "run.h"

struct cand {
    const char *name;
    int64_t done;
    int rc;
};

static void *cand_main(void *arg)
{
    struct cand *c = arg;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s = open_store();
    dlock_lock *l = NULL;

    o.wait_ms = 20000;
    c->rc = dlock_elect(&l, s, c->name, "waiter", &o);
    c->done = now_ns();
    dlock_release(l);
    dlock_store_close(s);
    return NULL;
}

struct obs {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n;
    int64_t at;
};

static int obs_cb(const dlock_info *info, void *payload)
{
    struct obs *ob = payload;

    (void)info;
    pthread_mutex_lock(&ob->mu);
    ob->n++;
    ob->at = now_ns();
    pthread_cond_broadcast(&ob->cv);
    pthread_mutex_unlock(&ob->mu);
    return 0;
}

struct obs_run {
    struct obs *ob;
    const char *name;
    dlock_cancel *cancel;
    int rc;
};

static void *obs_main(void *arg)
{
    struct obs_run *r = arg;
    dlock_store *s = open_store();

    r->rc = dlock_observe(s, r->name, obs_cb, r->ob, r->cancel);
    dlock_store_close(s);
    return NULL;
}

/* Wait until the observer has seen n changes (at most 5 s); the time of
 * the last, or -1. */
static int64_t seen(struct obs *ob, int n)
{
    int64_t end = now_ns() + 5000000000LL, at = -1;

    pthread_mutex_lock(&ob->mu);
    while (ob->n < n && now_ns() < end) {
        pthread_mutex_unlock(&ob->mu);
        sleep_us(1000);
        pthread_mutex_lock(&ob->mu);
    }
    if (ob->n >= n)
        at = ob->at;
    pthread_mutex_unlock(&ob->mu);
    return at;
}

static double rtt_ns(void)
{
    struct bench_noop *n;
    int64_t t0;
    const int k = 200;

    if (bench_noop_open(&n, url) != 0)
        return 0;
    t0 = now_ns();
    for (int i = 0; i < k; i++)
        (void)bench_noop(n);
    t0 = now_ns() - t0;
    bench_noop_close(n);
    return (double)t0 / k;
}

static int64_t takeover_after_kill(const char *name)
{
    int p[2];
    pid_t pid;
    char c;
    dlock_store *s;
    dlock_lock *l;
    dlock_options o = DLOCK_OPTIONS_INIT;
    int64_t t0, t;

    if (pipe(p) != 0)
        exit(1);
    pid = fork();
    if (pid == 0) {
        dlock_store *cs = open_store();
        dlock_options co = DLOCK_OPTIONS_INIT;
        dlock_lock *cl;

        co.ttl_ms = 5000;
        if (dlock_elect(&cl, cs, name, "doomed", &co) != DLOCK_OK)
            _exit(1);
        (void)!write(p[1], "H", 1);
        for (;;)
            pause();
    }
    close(p[1]);
    if (read(p[0], &c, 1) != 1)
        die("leader did not start");
    close(p[0]);
    s = open_store();
    o.wait_ms = 20000;
    kill(pid, SIGKILL);
    t0 = now_ns();
    waitpid(pid, NULL, 0);
    if (dlock_elect(&l, s, name, "next", &o) != DLOCK_OK)
        die("elect after kill");
    t = now_ns() - t0;
    dlock_release(l);
    dlock_store_close(s);
    return t;
}

void bench_elect(void)
{
    const int rounds = quick ? 5 : 15;
    int64_t resign[32], killed[8], lat[96], lmax = 0;
    int nlat = 0, nkill = quick ? 2 : 3;
    char name[128], oname[128];
    double rtt = rtt_ns();
    dlock_store *s = open_store();
    dlock_options o = DLOCK_OPTIONS_INIT;

    snprintf(name, sizeof(name), "%s/elect", run_id);
    snprintf(oname, sizeof(oname), "%s/elect-observe", run_id);
    for (int r = 0; r < rounds; r++) {
        struct cand c = {name, 0, -99};
        pthread_t t;
        dlock_lock *l;
        int64_t t0;

        if (dlock_elect(&l, s, name, "leader", &o) != DLOCK_OK)
            die("elect");
        pthread_create(&t, NULL, cand_main, &c);
        /* Resign only once the candidate waits: its key or row is in the
         * store (status shows a waiter on no store, so give it time to
         * get there; what is measured starts at the release). */
        sleep_us(100000);
        t0 = now_ns();
        dlock_release(l);
        pthread_join(t, NULL);
        if (c.rc != DLOCK_OK)
            die("candidate");
        resign[r] = c.done - t0;
    }
    for (int r = 0; r < nkill; r++)
        killed[r] = takeover_after_kill(name);
    {
        struct obs ob;
        struct obs_run run;
        pthread_t t;
        dlock_lock *l;
        int n = 1;

        memset(&ob, 0, sizeof(ob));
        pthread_mutex_init(&ob.mu, NULL);
        pthread_cond_init(&ob.cv, NULL);
        run.ob = &ob;
        run.name = oname;
        if (dlock_cancel_new(&run.cancel) != DLOCK_OK)
            die("cancel");
        pthread_create(&t, NULL, obs_main, &run);
        if (seen(&ob, n++) < 0)
            die("observer's first report");
        for (int r = 0; r < rounds; r++) {
            int64_t t0, at;

            sleep_us(50000);
            if (dlock_elect(&l, s, oname, "a", &o) != DLOCK_OK)
                die("elect (observed)");
            t0 = now_ns();
            at = seen(&ob, n++);
            if (at >= 0)
                lat[nlat++] = at - t0;
            sleep_us(50000);
            if (dlock_proclaim(l, r % 2 ? "b" : "c") != DLOCK_OK)
                die("proclaim");
            t0 = now_ns();
            at = seen(&ob, n++);
            if (at >= 0)
                lat[nlat++] = at - t0;
            sleep_us(50000);
            dlock_release(l);
            t0 = now_ns();
            at = seen(&ob, n++);
            if (at >= 0)
                lat[nlat++] = at - t0;
        }
        dlock_cancel_fire(run.cancel);
        pthread_join(t, NULL);
        dlock_cancel_free(run.cancel);
    }
    dlock_store_close(s);
    for (int i = 0; i < nlat; i++)
        if (lat[i] > lmax)
            lmax = lat[i];
    {
        int64_t rm = pct(resign, (size_t)rounds, 0.5);
        int64_t km = pct(killed, (size_t)nkill, 0.5);
        int64_t om = nlat > 0 ? pct(lat, (size_t)nlat, 0.5) : -1;

        printf("election     takeover after resignation %.2f ms (median of "
               "%d; %.1f x the round trip of %.3f ms)\n",
               rm / 1e6, rounds, rtt > 0 ? rm / rtt : 0, rtt / 1e6);
        printf("election     takeover after kill -9 of a 5 s leader %.1f ms "
               "(median of %d)\n",
               km / 1e6, nkill);
        printf("election     observer sees a change %.2f ms after it (median "
               "of %d, max %.2f; %.1f x the round trip)\n",
               om / 1e6, nlat, lmax / 1e6, rtt > 0 ? om / rtt : 0);
        if (json != NULL)
            fprintf(json, "  \"election\": {\n");
        jnum("takeover_resign_ms", rm / 1e6, 0);
        jnum("takeover_kill_ms", km / 1e6, 0);
        jnum("observe_median_ms", om / 1e6, 0);
        jnum("observe_max_ms", lmax / 1e6, 0);
        jnum("rtt_ms", rtt / 1e6, 1);
        if (json != NULL)
            fprintf(json, "  },\n");
    }
}
