/*
 * run_records.c - `dlock run`'s run records (dlock_run_begin() /
 * dlock_run_end()): --once and --once-per decide from them whether CMD
 * runs or is skipped (and say which run satisfied the rule, or who holds
 * the lock now), and every plain run of a lock is recorded.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

/* -q: no busy, skip, timeout or retry lines (set by cmd_run.c). */
int run_quiet;

/* The holder's fence as dlock_status() tells it: the highest handed out.
 * A notice: a busy --once / --once-per run is not dlock failing. */
void run_say_busy(dlock_store *store, const char *name)
{
    dlock_info *info = NULL;
    struct cli_msg m;
    FILE *f;

    if (cli_quiet || run_quiet || (f = cli_msg_open(&m)) == NULL)
        return;
    fputs("run: '", f);
    cli_print_safe(f, name);
    if (dlock_status(&info, store, name) != DLOCK_OK || !info->held) {
        fputs("' is running now (its holder could not be told)", f);
    } else if (info->other_client) {
        /* Its session as the server reports it: escaped. */
        fputs("' is held now", f);
        cli_print_other(f, info);
        if (cli_other_key_only(info))
            fprintf(f, " %s", CLI_KEY_ONLY_HINT);
    } else {
        fputs("' is running now on host ", f);
        cli_print_safe(f, info->host[0] ? info->host : "?");
        fprintf(f, " (pid %lld, fence %llu)", (long long)info->pid,
                (unsigned long long)info->fence);
    }
    cli_msg_say(&m, CLI_LOG_NOTICE);
    dlock_info_free(info);
}

/* The skip line: which run satisfied the rule (a notice). */
static void say_ran(const char *name, const dlock_run *last)
{
    struct cli_msg m;
    FILE *f;
    char iso[64];

    if (cli_quiet || run_quiet || (f = cli_msg_open(&m)) == NULL)
        return;
    fputs("run: '", f);
    cli_print_safe(f, name);
    if (last == NULL) {
        fputs("' already ran (its record is no longer kept)", f);
        cli_msg_say(&m, CLI_LOG_NOTICE);
        return;
    }
    fprintf(f, "' already ran at %s on host ",
            cli_time_utc(last->start_ms, iso, sizeof(iso)));
    cli_print_safe(f, last->host[0] ? last->host : "?");
    fprintf(f, " (fence %llu; ", (unsigned long long)last->fence);
    switch (last->result) {
    case DLOCK_RUN_EXITED:
        fprintf(f, "exit %d)", last->status);
        break;
    case DLOCK_RUN_SIGNALED:
        fprintf(f, "signal %d)", last->status);
        break;
    case DLOCK_RUN_RUNNING:
        /* We hold the lock: whoever ran it does not, so it will never
         * record an end (cut off, killed); the next run that goes ahead
         * marks it abandoned. */
        fputs("no end recorded: its holder is gone)", f);
        break;
    default:
        fprintf(f, "%s)", cli_run_word(last->result));
    }
    cli_msg_say(&m, CLI_LOG_NOTICE);
}

/* The skip line of a suspended name: "suspended by WHO at T: REASON".
 * A notice, as the other skips. */
static void say_suspension(const char *name, const dlock_suspension *sus)
{
    struct cli_msg m;
    FILE *f;

    if (cli_quiet || run_quiet || (f = cli_msg_open(&m)) == NULL)
        return;
    fputs("run: '", f);
    cli_print_safe(f, name);
    fputs("' is ", f);
    cli_print_suspension(f, sus);
    fputs("; not running the command (dlock resume lifts it)", f);
    cli_msg_say(&m, CLI_LOG_NOTICE);
}

/* The same after dlock_run_begin() skipped: it said who and since when;
 * the reason is read now (a suspension lifted meanwhile is said without
 * one). */
static void say_suspended(dlock_store *store, const char *name,
                          const dlock_run *last)
{
    dlock_suspension *now = NULL, said;

    if (cli_quiet || run_quiet)
        return;
    if (dlock_suspended(&now, store, name) != DLOCK_OK || now == NULL) {
        memset(&said, 0, sizeof(said));
        snprintf(said.by, sizeof(said.by), "%s", last->host);
        said.since_ms = last->start_ms;
    }
    say_suspension(name, now != NULL ? now : &said);
    dlock_suspension_free(now);
}

/* --keep-runs N: the name's setting, written only when it differs (the
 * write may count the runs kept; the read is one small round trip).  A
 * failure is a warning: the run's record goes on with the old setting. */
static void keep_runs(const struct run_opts *o, dlock_store *store)
{
    unsigned now = 0;
    int rc = dlock_kept_runs(&now, store, o->name);

    if (rc == DLOCK_OK && now == o->keep_runs)
        return;
    if (rc == DLOCK_OK)
        rc = dlock_keep_runs(store, o->name, o->keep_runs);
    if (rc != DLOCK_OK)
        cli_warn("run: warning: cannot keep %u runs of '%s': %s", o->keep_runs,
                 o->name, dlock_errmsg());
}

int run_suspended(const struct run_opts *o, dlock_store *store)
{
    dlock_suspension *now = NULL;
    int rc = dlock_suspended(&now, store, o->name);

    if (rc == DLOCK_ENOTSUP || (rc == DLOCK_OK && now == NULL))
        return -1;
    if (rc != DLOCK_OK) {
        /* Fail closed, as a ruled run does: it may be suspended. */
        cli_err("run: cannot tell whether '%s' is suspended (%s); not "
                "running the command",
                o->name, dlock_errmsg());
        return cli_exit_code(rc);
    }
    /* Said from the record just read: no second read of it. */
    say_suspension(o->name, now);
    dlock_suspension_free(now);
    return o->conflict_given ? o->conflict_code : 0;
}

/* Decide and record the run's start (dlock_run_begin()).  -1: go on
 * (with *recorded set when the run is recorded); else the exit code (a
 * skip, 0 by default, or a failure). */
int run_begin(const struct run_opts *o, dlock_store *store, dlock_lock *lock,
              int *recorded, struct cli_run_report *rep)
{
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    dlock_run *last = NULL;
    int ruled = o->once || o->period_ms > 0, go = 0, rc;

    rule.once = o->once;
    rule.period_ms = o->period_ms;
    if (o->keep_runs != 0)
        keep_runs(o, store);
    rc = dlock_run_begin(lock, &rule, &go, &last);
    if (rc == DLOCK_OK && go) {
        *recorded = 1;
        dlock_run_free(last);
        return -1;
    }
    if (rc == DLOCK_OK && last != NULL && last->result == DLOCK_RUN_SUSPENDED) {
        say_suspended(store, o->name, last);
        dlock_run_free(last);
        rep->skipped = 1;
        return o->conflict_given ? o->conflict_code : 0;
    }
    if (rc == DLOCK_OK) {
        say_ran(o->name, last);
        dlock_run_free(last);
        rep->skipped = 1;
        return o->conflict_given ? o->conflict_code : 0;
    }
    if (rc == DLOCK_LOST)
        return cli_fail(rc, "run");
    if (ruled) {
        /* Fail closed: without a decision the job must not run. */
        if (rc == DLOCK_ENOTSUP)
            cli_err("run: %s: --once and --once-per need run records; "
                    "not running the command",
                    dlock_errmsg());
        else
            cli_err("run: cannot decide whether '%s' runs (%s); not "
                    "running the command",
                    o->name, dlock_errmsg());
        return rc == DLOCK_ENOTSUP ? EXIT_UNAVAILABLE : cli_exit_code(rc);
    }
    /* A plain run goes ahead unrecorded: quietly on a store without
     * records, with a warning when the store failed to write one, and
     * only once the store says the name is not suspended (the begin that
     * failed would have said so): cannot tell is not "not suspended". */
    if (rc == DLOCK_ENOTSUP)
        return -1;
    cli_warn("run: warning: the run of '%s' is not recorded: %s", o->name,
             dlock_errmsg());
    rc = run_suspended(o, store);
    if (rc >= 0 && rc != EXIT_UNAVAILABLE && rc != EXIT_INTERNAL)
        rep->skipped = 1;
    return rc;
}

/* Wait up to ms on the self-pipe: 1 if SIGHUP, SIGINT, SIGQUIT or SIGTERM
 * came meanwhile (whoever sent it wants dlock gone; CMD has exited, so
 * there is nobody to pass it on to).  The lock's loss (EV_LOST) ends the
 * wait too: dlock_lease_left() is 0 then. */
static int stop_asked(int rfd, int64_t ms)
{
    int64_t until = run_now_ms() + ms;

    for (;;) {
        struct pollfd p = {rfd, POLLIN, 0};
        int64_t left = until - run_now_ms();
        unsigned char buf[64];
        ssize_t n;

        if (left <= 0)
            return 0;
        if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
            return 0;
        n = read(rfd, buf, sizeof(buf));
        for (ssize_t i = 0; i < n; i++) {
            int sig =
                buf[i] == EV_CHILD || buf[i] == EV_LOST || buf[i] == EV_WAKE
                    ? 0
                    : buf[i] & 0x7f;

            if (buf[i] == EV_LOST || sig == SIGHUP || sig == SIGINT ||
                sig == SIGQUIT || sig == SIGTERM)
                return 1;
        }
    }
}

/* dlock_run_end(), tried again while the store cannot be reached and the
 * lock is still ours.  A store that blinks as the run ends (a restart, an
 * election: outages the lock itself survives) and is back within the
 * lease must get the end, or --once runs again a job that succeeded.
 * Only DLOCK_EUNAVAIL is tried again: refused, timed out, no leader, a
 * server starting or shutting down, a member cut off.  Every other
 * answer is final: LOST (the lock is not ours any more); EINVAL,
 * ESTORE, ENOTSUP, ENOMEM (asking again gets the same).  The tries stop
 * when the lease left as dlock counts it falls to the release's margin
 * (a loss the renew thread finds makes it 0), after one TTL since the
 * first (an outage longer than a lease would have cost a running command
 * its lock), or when a signal asks dlock to go.  Pauses of 50 ms,
 * doubling, at most a tenth of the TTL and 1 s.  Each try's I/O ends by
 * the lease end (dlock__lock_call()), so no try outlives the lease. */
static int end_tries(const struct run_opts *o, dlock_lock *lock, int rfd,
                     int result, int status, int *outage)
{
    int64_t give_up = run_now_ms() + o->ttl_ms;
    int64_t reserve = run_kill_margin(o->ttl_ms);
    int64_t cap = o->ttl_ms / 10, pause = 50;
    int rc;

    if (cap > 1000)
        cap = 1000;
    if (cap < pause)
        cap = pause;
    for (;;) {
        int64_t wait = pause, left, now;

        rc = dlock_run_end(lock, result, status);
        if (rc != DLOCK_EUNAVAIL)
            return rc;
        *outage = 1;
        left = dlock_lease_left(lock) - reserve;
        now = run_now_ms();
        if (wait > left)
            wait = left;
        if (wait > give_up - now)
            wait = give_up - now;
        if (wait <= 0 || stop_asked(rfd, wait) ||
            dlock_lease_left(lock) <= reserve)
            return rc;
        pause = pause * 2 < cap ? pause * 2 : cap;
    }
}

/* Record how the run ended (before the release: the record is found by
 * the lock's fence).  The end that cannot be written leaves the run's
 * record RUNNING: the next --once that goes ahead runs the job again
 * (and marks that record ABANDONED); a --once-per of the same period
 * still skips, by the start. */
int run_end(const struct run_opts *o, dlock_lock *lock, int rfd, int raw,
            int lost, int timedout, int *outage)
{
    int result, status = -1, rc;
    int64_t t0 = run_now_ms();

    *outage = 0;
    if (lost || dlock_lease_left(lock) == 0) {
        result = DLOCK_RUN_LOST;
        if (raw >= 0 && WIFEXITED(raw))
            status = WEXITSTATUS(raw);
    } else if (timedout) {
        /* What it ended with, as a shell says it: 143 for SIGTERM. */
        result = DLOCK_RUN_TIMEDOUT;
        status = raw < 0            ? -1
                 : WIFEXITED(raw)   ? WEXITSTATUS(raw)
                 : WIFSIGNALED(raw) ? 128 + WTERMSIG(raw)
                                    : -1;
    } else if (raw >= 0 && WIFSIGNALED(raw)) {
        result = DLOCK_RUN_SIGNALED;
        status = WTERMSIG(raw);
    } else {
        result = DLOCK_RUN_EXITED;
        status = raw >= 0 ? WEXITSTATUS(raw) : -1;
    }
    rc = end_tries(o, lock, rfd, result, status, outage);
    if (rc != DLOCK_OK) {
        char tried[64] = "";

        if (*outage)
            snprintf(tried, sizeof(tried), " (tried for %lld ms)",
                     (long long)(run_now_ms() - t0));
        cli_warn("run: warning: the end of the run of '%s' is not "
                 "recorded: %s%s%s",
                 o->name, dlock_errmsg(), tried,
                 o->once && result == DLOCK_RUN_EXITED && status == 0
                     ? " (--once will run it again)"
                     : "");
    }
    return rc;
}
