/*
 * run_replace.c - `dlock run --replace`: a run that takes NAME over from
 * the run holding it, as a Kubernetes CronJob's concurrencyPolicy:
 * Replace does.
 *
 * The request: while a --replace run waits for NAME it holds the lock
 * "dlock.replace/" NAME (an ordinary lock: renewed while it waits, freed
 * by its lease if it dies), and lets go of it once it holds NAME or has
 * given up.  A --replace run holding NAME looks for that lock about once
 * a second (a third of its TTL if that is less): one dlock_status().
 * When it is held the holder steps down as on a loss: CMD gets SIGTERM,
 * SIGKILL after the grace period, the run is recorded lost, dlock exits
 * 75, and its release lets the waiting run in.
 *
 * So the new run gets NAME from the store, as any acquire does: after the
 * old holder's release or at its lease's end (a holder that cannot be
 * reached, or is frozen, never releases, and its own CMD is gone by then
 * on its own count).  The new CMD never overlaps the old one, and the
 * new fence is greater.  Both runs need --replace, as both are runs of
 * one job with one policy: a run without it is never looked at, and
 * `dlock release --force` is what breaks it.
 *
 * A request is a wake-up, never a grant (threat model R1): it can only
 * make a holder let go, which anyone who may write the store can do
 * already (release --force).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

#define REPLACE_DIR "dlock.replace/"
#define REPLACE_CHECK_MS 1000

static dlock_store *rp_store;
static dlock_lock *request;
static int seen;
/* Our own request may still be held: its release failed (a lost reply,
 * the store cut off), so it stays until its lease ends. */
static int own_left;
static char who[320]; /* the replacer, "HOST pid N" (escaped) */

static char *request_name(const char *name)
{
    char *p = malloc(sizeof(REPLACE_DIR) + strlen(name));

    if (p != NULL)
        sprintf(p, "%s%s", REPLACE_DIR, name);
    return p;
}

int run_replace_request(dlock_store *store, const struct run_opts *o,
                        dlock_options *opts)
{
    dlock_options ro = *opts;
    char *name = request_name(o->name);
    int rc;

    rp_store = store;
    if (name == NULL)
        return DLOCK_ENOMEM;
    /* One request at a time: a second replacer waits for the first's,
     * then asks in its turn (the newest run wins, as Replace means). */
    ro.on_lost = NULL;
    rc = dlock_acquire(&request, store, name, &ro);
    free(name);
    /* Asked: the holder may be stepping down already, and a run that
     * gave up now would leave the job running nowhere.  -w bounds the
     * wait for the request only; NAME is waited for until it comes (the
     * holder's release, its lease's end, or, a holder without
     * --replace, its own end), a signal ending the wait as ever. */
    if (rc == DLOCK_OK)
        opts->wait_ms = DLOCK_WAIT_FOREVER;
    return rc;
}

void run_replace_done(void)
{
    if (request != NULL) {
        int rc = dlock_release(request);

        own_left = rc != DLOCK_OK && rc != DLOCK_LOST;
    }
    request = NULL;
}

/* The request info shows is our own, left over by a release that failed:
 * the same host and pid as the store shows for NAME, which we hold.  Not
 * a newer run: the holder would step down for itself, and nobody would
 * run the job. */
static int own_request(const struct run_opts *o, const dlock_info *req)
{
    dlock_info *me = NULL;
    int yes;

    if (!own_left || req->pid != (int64_t)getpid())
        return 0;
    yes = dlock_status(&me, rp_store, o->name) == DLOCK_OK && me->held &&
          !me->other_client && me->pid == req->pid &&
          strcmp(me->host, req->host) == 0;
    dlock_info_free(me);
    return yes;
}

/* 1 if a --replace run asks for o->name, 0 if none or the store cannot
 * tell ("cannot tell" is no request: the holder goes on). */
static int asked(const struct run_opts *o)
{
    char *name = request_name(o->name);
    dlock_info *info = NULL;
    int yes;

    if (name == NULL)
        return 0;
    yes = dlock_status(&info, rp_store, name) == DLOCK_OK && info->held &&
          !info->other_client && !own_request(o, info);
    if (yes) {
        /* Who asks, as the store says: escaped. */
        FILE *f = fmemopen(who, sizeof(who), "w");

        if (f != NULL) {
            cli_print_safe(f, info->host[0] ? info->host : "?");
            fprintf(f, " pid %lld", (long long)info->pid);
            fclose(f);
        }
    }
    dlock_info_free(info);
    free(name);
    return yes;
}

const char *run_replace_who(void)
{
    return who;
}

/* --- the looks, on a thread of their own ------------------------------
 *
 * Each look is a store call, which may take the URL's whole timeout on a
 * store that stopped answering (a cut, a frozen server): made by
 * run_supervise() itself, it kept the loop from stopping CMD before the
 * lease end, and CMD ran on under a lock another holder had taken.  So
 * the looks run here, and the loop only reads what they found. */

static pthread_t looker;
static int looking; /* the thread was started */
static pthread_mutex_t lmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t lcv;
static int lstop; /* under lmu */
static const struct run_opts *lopts;

static void *look_loop(void *arg)
{
    int64_t every = lopts->ttl_ms / 3 < REPLACE_CHECK_MS ? lopts->ttl_ms / 3
                                                         : REPLACE_CHECK_MS;

    (void)arg;
    for (;;) {
        int yes;

        pthread_mutex_lock(&lmu);
        if (lstop) {
            pthread_mutex_unlock(&lmu);
            break;
        }
        pthread_mutex_unlock(&lmu);
        yes = asked(lopts);
        if (yes) {
            __atomic_store_n(&seen, 1, __ATOMIC_RELEASE);
            run_signals_wake();
            break;
        }
        {
            struct timespec ts;

            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += every / 1000;
            ts.tv_nsec += (long)(every % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_mutex_lock(&lmu);
            while (!lstop &&
                   pthread_cond_timedwait(&lcv, &lmu, &ts) != ETIMEDOUT)
                ;
            pthread_mutex_unlock(&lmu);
        }
    }
    return NULL;
}

void run_replace_holding(dlock_store *store, const struct run_opts *o)
{
    pthread_condattr_t ca;

    rp_store = store;
    __atomic_store_n(&seen, 0, __ATOMIC_RELEASE);
    if (!o->replace || looking)
        return;
    lopts = o;
    lstop = 0;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&lcv, &ca);
    pthread_condattr_destroy(&ca);
    /* Without the thread there are no looks: the run goes on, as when
     * the store cannot tell. */
    looking = pthread_create(&looker, NULL, look_loop, NULL) == 0;
    if (!looking)
        cli_warn("run: warning: cannot look for --replace requests of '%s' "
                 "(no thread): this run will not step down",
                 o->name);
}

void run_replace_stop(void)
{
    if (!looking)
        return;
    pthread_mutex_lock(&lmu);
    lstop = 1;
    pthread_cond_signal(&lcv);
    pthread_mutex_unlock(&lmu);
}

void run_replace_end(void)
{
    if (!looking)
        return;
    run_replace_stop();
    /* A look still inside a store call ends by the URL's timeout. */
    pthread_join(looker, NULL);
    looking = 0;
}

int run_replace_check(const struct run_opts *o, int64_t now, int64_t *next)
{
    (void)now;
    (void)next;
    if (!o->replace)
        return 0;
    return __atomic_load_n(&seen, __ATOMIC_ACQUIRE);
}
