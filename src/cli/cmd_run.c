/*
 * cmd_run.c - `dlock run NAME [options] [--] CMD [ARG...]`.
 *
 * Acquire, start CMD, keep the lock renewed while CMD runs, release when it
 * exits, and pass its exit status on.  Everything asynchronous (signals to
 * forward, the child's exit, the lock being lost on the renew thread) is
 * turned into bytes on one self-pipe, so the main loop is a plain poll()
 * with no work done in signal handlers.  Before CMD starts a signal
 * cancels the wait instead (dlock_cancel, run_signals.c) and dlock exits
 * 128+N without running CMD.
 *
 * This file is the command's course (open, acquire, decide, start, wait,
 * release, report); its parts are in run_*.c (see run.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

/* The host's wall clock, for the metrics file only. */
static int64_t cli_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* -v: who holds the lock the run waits for (a debug line). */
static void say_holder(dlock_store *store, const char *name)
{
    dlock_info *info = NULL;
    struct cli_msg m;
    FILE *f;
    char when[64];

    if (cli_quiet || dlock_status(&info, store, name) != DLOCK_OK ||
        !info->held || (f = cli_msg_open(&m)) == NULL) {
        dlock_info_free(info);
        return;
    }
    fputs("waiting for '", f);
    cli_print_safe(f, name);
    if (info->other_client) {
        /* Its session as the server reports it: escaped. */
        fputs("': held", f);
        cli_print_other(f, info);
        if (cli_other_key_only(info))
            fprintf(f, " %s", CLI_KEY_ONLY_HINT);
    } else {
        /* The host comes from the store: escaped, never raw. */
        fputs("': held by ", f);
        if (info->limit > 1)
            fprintf(f, "%u of %u (semaphore), the longest lease by ",
                    info->holders, info->limit);
        cli_print_safe(f, info->host[0] ? info->host : "?");
        fprintf(f, " pid %lld since %s (lease %lld ms left)",
                (long long)info->pid,
                cli_time_utc(info->since_ms, when, sizeof(when)),
                (long long)info->ttl_ms);
    }
    cli_msg_say(&m, CLI_LOG_DEBUG);
    dlock_info_free(info);
}

/* Seconds as "5 s" or "0.250 s". */
static const char *seconds(int64_t ms, char *buf, size_t len)
{
    if (ms % 1000 == 0)
        snprintf(buf, len, "%lld s", (long long)(ms / 1000));
    else
        snprintf(buf, len, "%lld.%03lld s", (long long)(ms / 1000),
                 (long long)(ms % 1000));
    return buf;
}

/* The one line of a -w that ended with the lock still busy: who holds
 * it and since when (the store's view after the wait), so that a cron
 * job that gave up leaves a trace. */
static void say_still_held(dlock_store *store, const struct run_opts *o,
                           int64_t wait_ms)
{
    dlock_info *info = NULL;
    char when[64], secs[32];
    const char *what = o->elect ? "not elected" : "still held";
    int rc = dlock_status(&info, store, o->name);

    if (wait_ms == DLOCK_WAIT_FOREVER)
        snprintf(secs, sizeof(secs), "the wait");
    else
        seconds(wait_ms, secs, sizeof(secs));
    if (rc != DLOCK_OK) {
        cli_err("lock '%s' %s after %s (who holds it could not be told: %s)",
                o->name, what, secs, dlock_errmsg());
    } else if (!info->held) {
        cli_err("lock '%s' %s after %s (free now)", o->name,
                o->elect ? "not elected" : "not acquired", secs);
    } else if (info->other_client) {
        /* Its session as the server reports it: escaped.  Said as every
         * error is (an error object under --json, a JSON line under
         * --log-format json, the journal's priority), never straight to
         * stderr. */
        struct cli_msg m;
        FILE *f = cli_msg_open(&m);

        if (f != NULL) {
            fputs("lock '", f);
            cli_print_safe(f, o->name);
            fprintf(f, "' %s after %s: held", what, secs);
            cli_print_other(f, info);
            cli_msg_say(&m, CLI_LOG_ERR);
        }
    } else {
        char held[128] = "";

        if (info->limit > 1)
            snprintf(held, sizeof(held),
                     " by %u of %u holders (semaphore), the longest lease",
                     info->holders, info->limit);
        else if (info->shared)
            snprintf(held, sizeof(held), " shared by %u holders, one",
                     info->holders);
        /* The host comes from the store: cli_err() escapes it. */
        cli_err("lock '%s' %s after %s:%s by host %s pid %lld since %s "
                "(%s %llu)",
                o->name, what, secs, held, info->host[0] ? info->host : "?",
                (long long)info->pid,
                cli_time_utc(info->since_ms, when, sizeof(when)),
                o->elect ? "term" : "fence", (unsigned long long)info->fence);
    }
    dlock_info_free(info);
}

static int acquire(const struct cli *c, const struct run_opts *o,
                   dlock_store *store, dlock_lock **lock)
{
    dlock_options opts = DLOCK_OPTIONS_INIT;
    int rc;

    opts.ttl_ms = o->ttl_ms;
    opts.shared = o->shared;
    opts.limit = o->limit;
    opts.on_lost = run_on_lost;
    opts.wait_ms = o->wait_ms;
    /* A signal from here on gives up the wait (run_signals.c). */
    opts.cancel = run_signals_cancel();
    if (o->elect)
        return run_campaign(store, o, &opts, lock);
    if (o->replace) {
        /* The request first, held while NAME is waited for: the holder
         * steps down when it sees it (run_replace.c). */
        rc = run_replace_request(store, o, &opts);
        if (rc == DLOCK_OK)
            rc = dlock_acquire(lock, store, o->name, &opts);
        run_replace_done();
        return rc;
    }
    if (c->verbose && o->wait_ms != 0) {
        opts.wait_ms = 0;
        rc = dlock_acquire(lock, store, o->name, &opts);
        if (rc != DLOCK_BUSY || run_signals_got() != 0)
            return rc;
        say_holder(store, o->name);
        opts.wait_ms = o->wait_ms;
    }
    return dlock_acquire(lock, store, o->name, &opts);
}

/* A signal came before CMD started: CMD is not run, and dlock exits
 * 128+N as a shell reports a command the signal ended. */
static int stopped_by_signal(const struct run_opts *o)
{
    int sig = run_signals_got();

    cli_err("%s: signal %d (%s) before the command started: '%s' not run",
            o->elect ? "elect" : "run", sig, strsignal(sig), o->name);
    return 128 + sig;
}

/* dlock elect: leadership came (leader 1) or went, into the metrics
 * file's leader families. */
static void leader_report(const struct cli_run_report *rep, int leader,
                          uint64_t term)
{
    struct cli_run_report r = *rep;

    r.elect = 1;
    r.leader_only = 1;
    r.leader = leader;
    r.transition = 1;
    r.term = term;
    run_report(&r);
}

static int run_course(const struct cli *c, struct run_opts *o);

/* What a run did, for --json. */
struct run_json {
    int acquired; /* the lock was held (a leader: led) */
    uint64_t fence;
    int busy; /* not acquired in time */
    int lost; /* lost while CMD ran (elect: or stepped down) */
};

/* --json: the run as one object on stdout, after CMD's own output
 * (docs/cli.md "dlock run --json").  Times are the host's clock. */
static void print_run_json(const struct run_opts *o,
                           const struct cli_run_report *rep,
                           const struct run_json *j, int exit_code)
{
    const char *result;
    char iso[64];

    if (rep->skipped)
        result = "skipped";
    else if (rep->ran && exit_code == EXIT_LOST &&
             (j->lost || !(rep->exited && rep->status == EXIT_LOST)))
        /* Seen while CMD ran, or at the release after it (CMD's own
         * exit 75 is CMD's). */
        result = "lost";
    else if (rep->ran && rep->signaled)
        result = "signaled";
    else if (rep->ran)
        result = "exited";
    else if (j->busy)
        result = "busy";
    else
        result = "error"; /* not run: see "error" */
    fputs("{\"name\":", stdout);
    cli_json_string(stdout, o->name);
    fprintf(stdout, ",\"command\":\"%s\",\"acquired\":%s,\"fence\":",
            o->elect ? "elect" : "run", j->acquired ? "true" : "false");
    /* A string, as everywhere (cli_json_info()); null: never held. */
    if (j->acquired)
        fprintf(stdout, "\"%llu\"", (unsigned long long)j->fence);
    else
        fputs("null", stdout);
    fprintf(stdout,
            ",\"skipped\":%s,\"ran\":%s,\"result\":\"%s\",\"exit_code\":%d",
            rep->skipped ? "true" : "false", rep->ran ? "true" : "false",
            result, exit_code);
    if (rep->ran && rep->exited)
        fprintf(stdout, ",\"status\":%d,\"signal\":null", rep->status);
    else if (rep->ran && rep->signaled)
        fprintf(stdout, ",\"status\":null,\"signal\":%d", rep->sig);
    else
        fputs(",\"status\":null,\"signal\":null", stdout);
    if (rep->ran && cli_time_ok(rep->start_ms))
        fprintf(stdout, ",\"start_ms\":%lld,\"start\":\"%s\"",
                (long long)rep->start_ms,
                cli_time_utc(rep->start_ms, iso, sizeof(iso)));
    else
        fputs(",\"start_ms\":null,\"start\":null", stdout);
    if (rep->ran && cli_time_ok(rep->end_ms))
        fprintf(stdout, ",\"end_ms\":%lld,\"end\":\"%s\"",
                (long long)rep->end_ms,
                cli_time_utc(rep->end_ms, iso, sizeof(iso)));
    else
        fputs(",\"end_ms\":null,\"end\":null", stdout);
    fprintf(stdout, ",\"waited_ms\":%lld,\"pid\":%ld,\"error\":",
            (long long)rep->waited_ms, (long)getpid());
    cli_json_error(stdout, exit_code);
    fputs("}\n", stdout);
    fflush(stdout);
}

int cmd_run(const struct cli *c, int argc, char **argv)
{
    struct run_opts o = {0};
    int rc = cli_run_parse(&o, argc, argv);

    if (rc != 0) {
        if (rc < 0) {
            cli_run_usage(stdout);
            return 0;
        }
        return rc;
    }
    return run_course(c, &o);
}

/* `dlock elect`: a run whose acquire is a campaign (run_campaign()). */
int cmd_elect(const struct cli *c, int argc, char **argv)
{
    struct run_opts o = {0};
    int rc = cli_elect_parse(&o, argc, argv);

    if (rc != 0) {
        if (rc < 0) {
            cli_elect_usage(stdout);
            return 0;
        }
        return rc;
    }
    return run_course(c, &o);
}

static int run_course(const struct cli *given_cli, struct run_opts *given)
{
    struct run_opts o = *given;
    /* -q: no retry or -v lines either. */
    struct cli quiet_cli = *given_cli;
    const struct cli *c = &quiet_cli;
    struct run_json j = {0, 0, 0, 0};
    struct cli_run_report rep;
    dlock_store *store = NULL;
    dlock_lock *lock = NULL;
    char **env = NULL;
    int pfd[2] = {-1, -1}, rc, lost = 0, recorded = 0, raw = -1, timedout = 0;
    int outage = 0;
    int64_t t0;
    pid_t child;

    memset(&rep, 0, sizeof(rep));
    rep.name = o.name;
    rep.metrics_file = o.metrics_file;
    if (o.quiet) {
        quiet_cli.verbose = 0;
        run_quiet = 1;
    }
    /* A CMD that cannot run ("dlock run echo hi": the lock echo, the
     * command hi) takes no lock and records no run. */
    rc = run_check_cmd(o.name, o.cmd, o.dashdash);
    if (rc != 0)
        goto out;
    /* The pipe first: the on_lost callback may fire as soon as the lock is
     * held. */
    if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) != 0) {
        cli_err("run: pipe: %s", strerror(errno));
        rc = EXIT_INTERNAL;
        goto out;
    }
    run_signals_pipe(pfd[1]);
    run_scan_fds(0);
    /* Signals before CMD starts end the run, the wait given up. */
    rc = run_signals_early();
    if (rc != DLOCK_OK) {
        cli_err("run: %s", dlock_errmsg());
        rc = EXIT_INTERNAL;
        goto out;
    }
    t0 = run_now_ms();
    rc = cli_open_waiting(c, &store, &o.wait_ms);
    if (rc != 0)
        goto out;
    /* A shared or semaphore run records no run (run_begin() is for locks
     * only, below), so its suspension is read first, on its own. */
    if ((o.shared || o.limit > 1) && !o.elect) {
        rc = run_suspended(&o, store);
        if (rc >= 0) {
            rep.skipped =
                rc == 0 || (o.conflict_given && rc == o.conflict_code);
            goto out;
        }
    }
again:
    rc = acquire(c, &o, store, &lock);
    rep.waited_ms = run_now_ms() - t0;
    if (run_signals_got() != 0) {
        /* The wait was cancelled (or ended as the signal came): what
         * it holds is let go at out. */
        rc = stopped_by_signal(&o);
        goto out;
    }
    if (rc == DLOCK_BUSY) {
        j.busy = 1;
        if (o.period_ms > 0) {
            /* Someone else's run of it: a skip, not a failure. */
            if (!o.quiet)
                run_say_busy(store, o.name);
            rep.skipped = 1;
            rc = o.conflict_given ? o.conflict_code : 0;
            goto out;
        }
        if (o.once) {
            /* Not a skip: that run has not succeeded (yet), and exit 0
             * would tell `dlock run --once m -- ./migrate && ./app` that
             * the migration is done. */
            if (!o.quiet)
                run_say_busy(store, o.name);
            rc = o.conflict_code;
            goto out;
        }
        /* A -w that ran out says who holds it (cron leaves a trace);
         * -n stays silent, as flock -n does. */
        if ((given->wait_ms != 0 || o.elect) && !o.quiet)
            say_still_held(store, &o, given->wait_ms);
        else if (c->verbose)
            cli_err("%s: '%s' not %s in time", o.elect ? "elect" : "run",
                    o.name, o.elect ? "elected" : "acquired");
        rc = o.conflict_code;
        goto out;
    }
    if (rc != DLOCK_OK) {
        rc = cli_fail(rc, o.elect ? "elect" : "run");
        goto out;
    }
    j.acquired = 1;
    j.fence = dlock_fence(lock);
    if (c->verbose)
        cli_debug("%s: %s '%s' (%s %llu, lease %lld ms left)",
                  o.elect ? "elect" : "run", o.elect ? "leading" : "acquired",
                  o.name, o.elect ? "term" : "fence",
                  (unsigned long long)dlock_fence(lock),
                  (long long)dlock_lease_left(lock));
    /* Shared holders and a semaphore's run side by side: a record of
     * each would mark the others' as abandoned.  Locks only.  The others
     * read the suspension again now that they hold: one made while they
     * waited counts (the check before the wait only spared the wait). */
    if ((o.shared || o.limit > 1) && !o.elect) {
        rc = run_suspended(&o, store);
        if (rc >= 0) {
            rep.skipped =
                rc == 0 || (o.conflict_given && rc == o.conflict_code);
            goto out;
        }
    }
    if (!o.shared && o.limit == 1) {
        rc = run_begin(&o, store, lock, &recorded, &rep);
        if (rc >= 0) {
            if (run_signals_got() != 0)
                rc = stopped_by_signal(&o);
            goto out;
        }
    }
    env = run_child_env(o.name, dlock_fence(lock), dlock_store_url(store),
                        o.elect ? (o.value != NULL ? o.value : "") : NULL);
    if (env == NULL) {
        cli_err("run: out of memory");
        rc = EXIT_INTERNAL;
        goto out;
    }
    /* From here on signals are CMD's (passed on); one that came before
     * (while the start was recorded) ends the run unstarted: recorded
     * as ended by that signal, so --once runs it again. */
    run_signals_catch();
    if (run_signals_got() != 0) {
        if (recorded)
            (void)run_end(&o, lock, pfd[0], run_signals_got(), 0, 0, &outage);
        rc = stopped_by_signal(&o);
        goto out;
    }
    run_scan_fds(1);
    /* Whatever CMD starts stays dlock's descendant (see run_signal_cmd()). */
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
    rep.start_ms = cli_wall_ms();
    if (o.elect) {
        run_elect_leading(env, &o);
        leader_report(&rep, 1, dlock_fence(lock));
    }
    if (o.replace)
        run_replace_holding(store, &o);
    child = run_spawn(o.name, o.cmd, env);
    if (child < 0) {
        rc = -child;
        /* CMD not found / not executable: the run ended so. */
        raw = rc == 126 || rc == 127 ? (rc << 8) : -1;
    } else {
        rep.ran = 1;
        rc = run_supervise(child, pfd[0], &o, lock, &lost, &timedout, &raw);
        j.lost = lost; /* or stepped down (elect) */
    }
    /* No more looks; the one under way, if any, is waited for before
     * the store is closed, not before the end and the release. */
    if (o.replace)
        run_replace_stop();
    if (o.elect)
        run_elect_unlead(0);
    rep.end_ms = cli_wall_ms();
    if (raw >= 0 && WIFEXITED(raw)) {
        rep.exited = 1;
        rep.status = WEXITSTATUS(raw);
    } else if (raw >= 0 && WIFSIGNALED(raw)) {
        rep.signaled = 1;
        rep.sig = WTERMSIG(raw);
    }
    if (recorded)
        (void)run_end(&o, lock, pfd[0], raw, lost, timedout, &outage);
    if (o.elect) {
        rep.elect = 1;
        rep.transition = 1;
        rep.term = dlock_fence(lock);
    }
    if (lost && o.elect && run_elect_stepped() != 0) {
        /* A leader that stepped down resigns; one that yielded
         * campaigns again (CMD starts afresh when it leads again). */
        int why = run_elect_stepped();

        (void)dlock_release(lock);
        lock = NULL;
        rep.exit_code = EXIT_LOST;
        rep.lost = 0;
        run_report(&rep);
        if (why == RUN_YIELD) {
            run_elect_unlead(1); /* before its next term's looks */
            run_free_env(env);
            env = NULL;
            memset(&rep, 0, sizeof(rep));
            memset(&j, 0, sizeof(j));
            rep.name = o.name;
            rep.metrics_file = o.metrics_file;
            recorded = 0;
            lost = 0;
            raw = -1;
            outage = 0;
            /* Signals end the campaign again, as before CMD. */
            rc = run_signals_early();
            if (rc != DLOCK_OK) {
                cli_err("elect: %s", dlock_errmsg());
                rc = EXIT_INTERNAL;
                goto out;
            }
            t0 = run_now_ms();
            goto again;
        }
        cli_err("elect: resigned '%s' after %d failed health checks", o.name,
                o.health_fails);
        rc = EXIT_LOST;
        rep.name = NULL; /* reported */
        goto out;
    }
    if (lost) {
        rc = EXIT_LOST;
    } else if (child >= 0) {
        rc = run_release_after(lock, &o, rc, outage);
        lock = NULL;
        /* Stopped for its time limit, whatever it ended with: 124, as
         * timeout(1) exits (a loss before the end is still 75). */
        if (timedout && rc != EXIT_LOST)
            rc = EXIT_TIMEDOUT;
    }
    rep.lost = rc == EXIT_LOST && rep.ran;
out:
    if (o.replace)
        run_replace_end(); /* before the store goes */
    if (lock != NULL)
        (void)dlock_release(lock);
    if (o.elect)
        run_elect_end();
    dlock_store_close(store);
    run_free_env(env);
    if (pfd[0] >= 0) {
        close(pfd[0]);
        close(pfd[1]);
    }
    if (rep.end_ms == 0)
        rep.end_ms = cli_wall_ms();
    rep.exit_code = rc;
    if (rep.name != NULL)
        run_report(&rep);
    if (o.json)
        print_run_json(&o, &rep, &j, rc);
    return rc;
}
