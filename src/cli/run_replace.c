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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"

#define REPLACE_DIR "dlock.replace/"
#define REPLACE_CHECK_MS 1000

static dlock_store *rp_store;
static dlock_lock *request;
static int64_t next_check = -1;
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
    int64_t t0 = run_now_ms();
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
    if (rc == DLOCK_OK && opts->wait_ms != DLOCK_WAIT_FOREVER) {
        opts->wait_ms -= run_now_ms() - t0;
        if (opts->wait_ms < 0)
            opts->wait_ms = 0;
    }
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

void run_replace_holding(dlock_store *store)
{
    rp_store = store;
    seen = 0;
    next_check = run_now_ms();
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

int run_replace_check(const struct run_opts *o, int64_t now, int64_t *next)
{
    int64_t every =
        o->ttl_ms / 3 < REPLACE_CHECK_MS ? o->ttl_ms / 3 : REPLACE_CHECK_MS;

    if (!o->replace || seen || next_check < 0)
        return 0;
    if (now >= next_check) {
        seen = asked(o);
        next_check = run_now_ms() + every;
    }
    *next = next_check;
    return seen;
}
