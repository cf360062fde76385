/*
 * run_elect.c - what `dlock elect` adds to a run (cmd_run.c): the
 * campaign, dlock_elect() in place of dlock_acquire(); the candidate's
 * marker that makes its --priority seen; and the leader's checks every
 * --health-interval (a candidate of higher priority campaigning: yield;
 * --health-cmd failing --health-fails times in a row: resign), which
 * run_supervise() calls and acts on as on a loss (CMD stopped, SIGTERM
 * then SIGKILL).
 *
 * The marker: a candidate of priority P > 1 holds, while it campaigns
 * and leads, the lock "dlock.candidates/" NAME "/" P "/" TOKEN (TOKEN 16
 * random hex digits, so never busy).  Not under NAME "/": on etcd the
 * keys under NAME "/" are NAME's candidates (etcdctl elect's layout).
 * A marker is an ordinary lock, renewed and freed by its lease when its
 * holder dies, so a dead candidate of high priority stops counting
 * within a lease.  Priority 1 (the default) needs no marker: nobody
 * yields to the lowest priority that leads.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

#define MARKER_DIR "dlock.candidates/"

static dlock_store *el_store;
static dlock_lock *marker;
static int stepped;
static int fails;
static int64_t next_check = -1;
static char **health_env;

/* "dlock.candidates/NAME/", malloc'd. */
static char *marker_prefix(const char *name)
{
    size_t n = strlen(name);
    char *p = malloc(sizeof(MARKER_DIR) + n + 1);

    if (p != NULL)
        sprintf(p, "%s%s/", MARKER_DIR, name);
    return p;
}

struct higher {
    size_t plen;
    int priority;
    int found;
};

/* Is info a marker of a priority above h->priority?  Only "P/TOKEN"
 * after the prefix counts (P digits, TOKEN without '/'): a name that
 * continues NAME ("NAME/x/...") is some other name's marker. */
static int higher_cb(const dlock_info *info, void *payload)
{
    struct higher *h = payload;
    const char *s = info->name + h->plen, *slash;
    size_t d = strspn(s, "0123456789");

    if (d == 0 || d > 4 || s[d] != '/')
        return 0;
    slash = strchr(s + d + 1, '/');
    if (slash != NULL || s[d + 1] == '\0')
        return 0;
    if (atoi(s) > h->priority) {
        h->found = 1;
        return 1;
    }
    return 0;
}

/* 1 if a candidate of higher priority than o's campaigns or leads, 0 if
 * none, a dlock_rc < 0 if the store could not tell. */
static int higher_held(const struct run_opts *o)
{
    struct higher h = {0, o->priority, 0};
    char *prefix = marker_prefix(o->name);
    int rc;

    if (prefix == NULL)
        return DLOCK_ENOMEM;
    h.plen = strlen(prefix);
    rc = dlock_list(el_store, prefix, higher_cb, &h);
    free(prefix);
    if (h.found)
        return 1;
    return rc < 0 ? rc : 0;
}

/* --- the leader's look for a candidate of higher priority -------------
 *
 * A look is a store call (dlock_list()), which may take the URL's whole
 * timeout on a store that stopped answering (a cut, a frozen server):
 * made in run_supervise()'s loop, it kept that loop from stopping CMD
 * before the lease end, and CMD ran on under a lock another holder had
 * taken.  So the leader's looks run on a thread of their own, every
 * --health-interval; one that finds a candidate of higher priority sets
 * `higher` and wakes the loop through the self-pipe. */

static pthread_t looker;
static int looking;
static pthread_mutex_t lmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lcv;
static int lcv_made;
static int lstop;  /* under lmu */
static int higher; /* atomic */
static const struct run_opts *lopts;

static void *look_loop(void *arg)
{
    int64_t every = lopts->health_interval_ms;

    (void)arg;
    for (;;) {
        struct timespec ts;
        int stop;

        if (higher_held(lopts) == 1) {
            __atomic_store_n(&higher, 1, __ATOMIC_RELEASE);
            run_signals_wake();
            break;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += every / 1000;
        ts.tv_nsec += (long)(every % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&lmu);
        while (!lstop && pthread_cond_timedwait(&lcv, &lmu, &ts) != ETIMEDOUT)
            ;
        stop = lstop;
        pthread_mutex_unlock(&lmu);
        if (stop)
            break;
    }
    return NULL;
}

static void looks_start(const struct run_opts *o)
{
    __atomic_store_n(&higher, 0, __ATOMIC_RELEASE);
    if (looking)
        return;
    if (!lcv_made) {
        pthread_condattr_t ca;

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&lcv, &ca);
        pthread_condattr_destroy(&ca);
        lcv_made = 1;
    }
    lopts = o;
    lstop = 0;
    looking = pthread_create(&looker, NULL, look_loop, NULL) == 0;
    if (!looking)
        cli_warn("elect: warning: cannot look for candidates of higher "
                 "priority for '%s' (no thread): this leader will not yield",
                 o->name);
}

void run_elect_unlead(int join)
{
    if (!looking)
        return;
    pthread_mutex_lock(&lmu);
    lstop = 1;
    pthread_cond_signal(&lcv);
    pthread_mutex_unlock(&lmu);
    if (!join)
        return;
    /* A look still inside a store call ends by the URL's timeout. */
    pthread_join(looker, NULL);
    looking = 0;
}

/* Take this candidate's marker (priority > 1 only). */
static int take_marker(const struct run_opts *o, dlock_cancel *cancel)
{
    dlock_options opts = DLOCK_OPTIONS_INIT;
    unsigned char r[8];
    char *prefix, *name;
    int rc;

    if (o->priority <= 1 || marker != NULL)
        return DLOCK_OK;
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        return DLOCK_EINVAL;
    prefix = marker_prefix(o->name);
    name = prefix != NULL ? malloc(strlen(prefix) + 32) : NULL;
    if (name == NULL) {
        free(prefix);
        return DLOCK_ENOMEM;
    }
    sprintf(name, "%s%d/%02x%02x%02x%02x%02x%02x%02x%02x", prefix, o->priority,
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    free(prefix);
    opts.ttl_ms = o->ttl_ms;
    opts.wait_ms = 0;
    opts.cancel = cancel;
    rc = dlock_acquire(&marker, el_store, name, &opts);
    free(name);
    return rc;
}

/* Sleep ms unless a signal came first (signals before CMD set
 * run_signals_got(), on whatever thread they land). */
static void nap(int64_t ms)
{
    for (int64_t end = run_now_ms() + ms; run_signals_got() == 0;) {
        int64_t left = end - run_now_ms();

        if (left <= 0)
            return;
        (void)poll(NULL, 0, left < 50 ? (int)left : 50);
    }
}

int run_campaign(dlock_store *store, const struct run_opts *o,
                 dlock_options *opts, dlock_lock **lock)
{
    int64_t end =
        opts->wait_ms == DLOCK_WAIT_FOREVER ? -1 : run_now_ms() + opts->wait_ms;
    int rc;

    el_store = store;
    *lock = NULL;
    stepped = 0;
    fails = 0;
    next_check = -1;
    if (o->priority == 0) {
        /* A member that never leads: it holds nothing, so a signal ends
         * it at once; -w still bounds it.  nap() returns at once once a
         * signal came: the loop must look too, or it spins (it did: a
         * priority 0 member went on at full CPU after SIGTERM). */
        while ((end < 0 || run_now_ms() < end) && run_signals_got() == 0)
            nap(end < 0 ? 60000 : end - run_now_ms());
        return run_signals_got() != 0 ? DLOCK_ECANCELED : DLOCK_BUSY;
    }
    rc = take_marker(o, opts->cancel);
    if (rc != DLOCK_OK)
        return rc;
    /* While a candidate of higher priority is there, leave it the
     * election (it may be waiting for the leader that just yielded). */
    for (;;) {
        int h = higher_held(o);

        if (run_signals_got() != 0)
            return DLOCK_ECANCELED;
        /* A store that cannot tell: the campaign waits it out. */
        if (h <= 0)
            break;
        if (end >= 0 && run_now_ms() >= end)
            return DLOCK_BUSY;
        nap(end >= 0 && end - run_now_ms() < o->health_interval_ms
                ? end - run_now_ms()
                : o->health_interval_ms);
    }
    if (end >= 0) {
        opts->wait_ms = end - run_now_ms();
        if (opts->wait_ms < 0)
            opts->wait_ms = 0;
    }
    return dlock_elect(lock, store, o->name, o->value, opts);
}

void run_elect_leading(char **env, const struct run_opts *o)
{
    health_env = env;
    fails = 0;
    stepped = 0;
    run_health_pid = 0;
    next_check = run_now_ms();
    looks_start(o);
}

/* One look of the leader's: the health command's last outcome (and the
 * next one started), then a candidate of higher priority. */
static int check(const struct run_opts *o)
{
    if (o->health_cmd != NULL) {
        int failed = -1;

        if (run_health_pid > 0) {
            if (run_health_status >= 0) {
                failed = !(WIFEXITED(run_health_status) &&
                           WEXITSTATUS(run_health_status) == 0);
            } else {
                /* Still running after a whole interval: a failure, and
                 * ended with all it started. */
                run_kill_tree(run_health_pid);
                failed = 1;
            }
            run_health_pid = 0;
        }
        if (failed == 1) {
            fails++;
            cli_warn("elect: health check of '%s' failed (%d of %d in a row)",
                     o->name, fails, o->health_fails);
            if (fails >= o->health_fails)
                return RUN_UNHEALTHY;
        } else if (failed == 0) {
            fails = 0;
        }
        {
            char *argv[] = {"/bin/sh", "-c", (char *)o->health_cmd, NULL};
            pid_t p;

            run_health_status = -1;
            p = run_spawn(o->name, argv, health_env);
            if (p > 0) {
                run_health_pid = p;
            } else {
                fails++;
                if (fails >= o->health_fails)
                    return RUN_UNHEALTHY;
            }
        }
    }
    return 0;
}

int run_elect_check(const struct run_opts *o, int64_t now, int64_t *next)
{
    if (!o->elect || stepped)
        return 0;
    if (__atomic_load_n(&higher, __ATOMIC_ACQUIRE)) {
        cli_notice("elect: a candidate of higher priority than %d campaigns "
                   "for '%s': yielding",
                   o->priority, o->name);
        stepped = RUN_YIELD;
        return stepped;
    }
    if (now >= next_check) {
        stepped = check(o);
        next_check = run_now_ms() + o->health_interval_ms;
    }
    *next = next_check;
    return stepped;
}

int run_elect_stepped(void)
{
    return stepped;
}

void run_elect_end(void)
{
    run_elect_unlead(1);
    if (marker != NULL)
        (void)dlock_release(marker);
    marker = NULL;
}
