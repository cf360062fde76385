/*
 * run_opts.c - `dlock run`'s options: its help text and cli_run_parse()
 * (also what tests/fuzz/fuzz_cli.c feeds).
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define DEFAULT_GRACE_MS 10000

const char cli_run_help[] =
    "usage: dlock [-s URL] run NAME [options] [--] CMD [ARG...]\n"
    "\n"
    "Run CMD while holding the lock NAME.  The lease is renewed while CMD\n"
    "runs and the lock is released when it exits.  CMD gets DLOCK_NAME,\n"
    "DLOCK_FENCE and DLOCK_STORE (password hidden) in its environment.\n"
    "Signals sent to dlock (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, ...)\n"
    "are passed on to CMD.  If dlock itself dies (even by SIGKILL), CMD is\n"
    "killed with it, so it never runs on without the lock.\n"
    "CMD is gone before the lease ends: if no renewal has confirmed the\n"
    "lease when only the grace period and a kill margin (ttl/20, 20 ms..1 s)\n"
    "are left of it, CMD gets SIGTERM, and SIGKILL at the kill margin before\n"
    "the lease end.  If the lock is lost sooner (broken, taken over), CMD "
    "gets\n"
    "SIGTERM at once, SIGKILL after the grace period.  Either way dlock\n"
    "exits 75.\n"
    "\n"
    "options:\n"
    "  -w, --wait SEC        wait up to SEC seconds for the lock (default:\n"
    "                        forever; fractions allowed, \"250ms\" too)\n"
    "  -n, --nonblock        do not wait (same as -w 0)\n"
    "      --ttl SEC         lease (default 30): the longest a dead or hung\n"
    "                        dlock can keep others out\n"
    "  -E, --conflict-exit-code CODE\n"
    "                        exit CODE (default 1) if not acquired in time\n"
    "  -S, --shared          a shared (read) lock\n"
    "  -l, --limit N         a semaphore: CMD runs as one of at most N\n"
    "                        holders of NAME (up to 1024; default 1, a\n"
    "                        lock); every holder must give the same N\n"
    "      --grace SEC       between SIGTERM and SIGKILL when the lock is\n"
    "                        lost (default 10, at most a third of --ttl)\n"
    "      --once            run CMD until it has succeeded once (exit 0),\n"
    "                        on any host: after that, skip\n"
    "      --once-per PERIOD run CMD once per PERIOD (5m, 1h, 1d, or\n"
    "                        seconds): skip if the last run of NAME started\n"
    "                        less than PERIOD/2 ago on the store's clock.\n"
    "                        Give the schedule's interval (1h for an hourly\n"
    "                        cron job)\n"
    "      --metrics-file PATH  write the run's metrics to PATH (also\n"
    "                        $DLOCK_METRICS_FILE)\n"
    "With --once-per and no -w, a busy lock is a skip too (the run is\n"
    "someone else's); with -w, dlock waits, then decides.  --once waits as\n"
    "a plain run (default: forever), then decides; a lock still busy at\n"
    "the end of -w is not a skip but \"not acquired\" (1 or CODE).  A skip\n"
    "exits 0 (or CODE with -E) after one line on stderr saying which run\n"
    "satisfied it.  Every run of a lock (not --shared or --limit) is\n"
    "recorded: see dlock history NAME.\n"
    "\n"
    "exit: CMD's status (128+N if killed by signal N), 1 or CODE if not\n"
    "acquired, 0 or CODE if skipped, 64 usage, 69 store failing (or no run\n"
    "records for --once/--once-per), 75 lock lost, 126/127 CMD not\n"
    "executable/not found.  A CMD file without \"#!\" runs with /bin/sh, as\n"
    "with execvp(3) and flock(1); a binary it cannot run exits 126.\n";

int cli_run_parse(struct run_opts *o, int argc, char **argv)
{
    o->wait_ms = DLOCK_WAIT_FOREVER;
    o->ttl_ms = DLOCK_DEFAULT_TTL_MS;
    o->grace_ms = DEFAULT_GRACE_MS;
    o->conflict_code = EXIT_BUSY;
    o->limit = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        int64_t *ms = NULL;
        int is_limit = 0, opt_len;

        if (strcmp(a, "--") == 0) {
            if (o->name == NULL && i + 1 < argc)
                o->name = argv[++i];
            if (i + 1 < argc)
                o->cmd = argv + i + 1;
            break;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (o->name == NULL) {
                o->name = a;
                continue;
            }
            o->cmd = argv + i; /* flock style: the rest is the command */
            break;
        }
        if (cli_is(a, "-h", "--help"))
            return -1;
        if (cli_is(a, "-n", "--nonblock")) {
            o->wait_ms = 0;
            o->wait_given = 1;
            continue;
        }
        if (cli_is(a, "--once", NULL)) {
            o->once = 1;
            continue;
        }
        if (cli_is(a, "--once-per", "--metrics-file") ||
            !strncmp(a, "--once-per=", 11) ||
            !strncmp(a, "--metrics-file=", 15)) {
            int per = a[2] == 'o';
            const char *v = strchr(a, '=') ? strchr(a, '=') + 1
                            : i + 1 < argc ? argv[++i]
                                           : NULL;

            if (v == NULL) {
                cli_err("run: %s needs a value", a);
                return EXIT_USAGE;
            }
            if (!per) {
                if (*v == '\0') {
                    cli_err("run: --metrics-file needs a path");
                    return EXIT_USAGE;
                }
                o->metrics_file = v;
                continue;
            }
            o->period_ms = cli_parse_duration(v);
            if (o->period_ms == -2) {
                cli_err("run: --once-per '%s' is longer than 365 days",
                        cli_arg_shown(v));
                return EXIT_USAGE;
            }
            if (o->period_ms <= 0) {
                cli_err("run: bad --once-per '%s': a period such as 5m, "
                        "1h, 1d or 90 (seconds), the schedule's interval",
                        cli_arg_shown(v));
                return EXIT_USAGE;
            }
            continue;
        }
        if (cli_is(a, "-S", "--shared")) {
            o->shared = 1;
            continue;
        }
        /* Options with a value: "-w 5", "-w5", "--wait 5", "--wait=5". */
        if (cli_is(a, "-w", "--wait") || !strncmp(a, "--wait=", 7) ||
            (!strncmp(a, "-w", 2) && a[2]))
            ms = &o->wait_ms;
        else if (cli_is(a, "--ttl", NULL) || !strncmp(a, "--ttl=", 6))
            ms = &o->ttl_ms;
        else if (cli_is(a, "--grace", NULL) || !strncmp(a, "--grace=", 8))
            ms = &o->grace_ms;
        else if (cli_is(a, "-l", "--limit") || !strncmp(a, "--limit=", 8) ||
                 (!strncmp(a, "-l", 2) && a[2]))
            is_limit = 1;
        else if (!(cli_is(a, "-E", "--conflict-exit-code") ||
                   !strncmp(a, "--conflict-exit-code=", 21) ||
                   (!strncmp(a, "-E", 2) && a[2]))) {
            if (cli_misplaced_global("run", "NAME -- CMD", a))
                return EXIT_USAGE;
            cli_err("run: unknown option '%s' (see dlock run --help)",
                    cli_arg_shown(a));
            return EXIT_USAGE;
        }
        if (a[1] != '-' && a[2] != '\0')
            val = a + 2;
        else if (strchr(a, '=') != NULL && a[1] == '-')
            val = strchr(a, '=') + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        /* The option's name alone ("-w5", "--ttl=x": the value is not
         * part of it). */
        opt_len = a[1] != '-' ? 2 : (int)strcspn(a, "=");
        if (val == NULL) {
            cli_err("run: %s needs a value", a);
            return EXIT_USAGE;
        }
        if (ms == &o->wait_ms)
            o->wait_given = 1;
        if (ms != NULL) {
            *ms = cli_parse_seconds(val);
            if (*ms == -2) {
                cli_err("run: too many seconds for %s: '%s' (the maximum "
                        "is 365 days, %lld)",
                        a, val, CLI_SECONDS_MAX);
                return EXIT_USAGE;
            }
            if (*ms < 0) {
                cli_err("run: bad number of seconds for %.*s: '%s' "
                        "(decimal seconds, or a number with ms)",
                        opt_len, a, cli_arg_shown(val));
                return EXIT_USAGE;
            }
            if (ms == &o->ttl_ms && *ms < DLOCK_TTL_MIN_MS) {
                cli_err("run: --ttl %s is shorter than %d ms: renewal "
                        "could not keep such a lease",
                        val, DLOCK_TTL_MIN_MS);
                return EXIT_USAGE;
            }
        } else if (is_limit) {
            char *end;
            long v = strtol(val, &end, 10);

            /* Digits only: strtol would also take " 3", "+3" and "-0". */
            if (strspn(val, "0123456789") != strlen(val) || *val == '\0' ||
                *end != '\0' || v < 1 || v > DLOCK_LIMIT_MAX) {
                cli_err("run: the limit must be 1..%d, not '%s'",
                        DLOCK_LIMIT_MAX, cli_arg_shown(val));
                return EXIT_USAGE;
            }
            o->limit = (unsigned)v;
        } else {
            char *end;
            long v = strtol(val, &end, 10);

            if (*val == '\0' || *end != '\0' || v < 0 || v > 255) {
                cli_err("run: the conflict exit code must be 0..255, not "
                        "'%s'",
                        cli_arg_shown(val));
                return EXIT_USAGE;
            }
            o->conflict_code = (int)v;
            o->conflict_given = 1;
        }
    }
    if (o->metrics_file == NULL) {
        const char *env = getenv("DLOCK_METRICS_FILE");

        if (env != NULL && env[0] != '\0')
            o->metrics_file = env;
    }
    /* The decision is serialised by the lock: one holder at a time. */
    if ((o->once || o->period_ms > 0) && (o->shared || o->limit > 1)) {
        cli_err("run: --once and --once-per need an exclusive lock, not "
                "%s",
                o->shared ? "--shared" : "--limit");
        return EXIT_USAGE;
    }
    /* With --once-per and no -w, a busy lock is this period's run on
     * another host: a try.  --once alone waits as a plain run does: a
     * busy lock is a run that has not succeeded yet (it may fail), so
     * only its end can tell whether to skip. */
    if (o->period_ms > 0 && !o->wait_given)
        o->wait_ms = 0;
    if (o->name == NULL || o->cmd == NULL) {
        cli_err("run: %s", o->name == NULL ? "missing NAME" : "missing CMD");
        fputs(cli_run_help, stderr);
        return EXIT_USAGE;
    }
    if (cli_name_secret("run", "NAME -- CMD", o->name))
        return EXIT_USAGE;
    return 0;
}
