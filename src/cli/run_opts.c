/*
 * run_opts.c - `dlock run`'s options: their table (cli_run_opts, from
 * which getopt_long's table, the help and shell completions come), the
 * help text and cli_run_parse() (also what tests/fuzz/fuzz_cli.c feeds).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

#define DEFAULT_GRACE_MS 10000
#define DEFAULT_HEALTH_INTERVAL_MS 5000
#define DEFAULT_HEALTH_FAILS 3

/* getopt_long's value for an option with no short name. */
enum {
    OPT_TTL = 256,
    OPT_GRACE,
    OPT_ONCE,
    OPT_ONCE_PER,
    OPT_METRICS_FILE,
    OPT_VALUE,
    OPT_PRIORITY,
    OPT_HEALTH_CMD,
    OPT_HEALTH_INTERVAL,
    OPT_HEALTH_FAILS,
    OPT_MAX_RUNTIME,
    OPT_KEEP_RUNS,
    OPT_REPLACE,
    OPT_TIMEOUT,
    OPT_JSON
};

const struct cli_opt cli_run_opts[] = {
    {'w', "wait", "SEC",
     "wait up to SEC seconds for the lock (default:\n"
     "forever; fractions allowed, \"250ms\" too)"},
    {'n', "nonblock", NULL,
     "do not wait (same as -w 0); a busy lock exits\n"
     "1 without a word, as with flock -n"},
    {OPT_TIMEOUT, "timeout", "SEC", "the same as -w (flock's spelling)"},
    {'q', "quiet", NULL,
     "no line for a lock still busy after -w, a\n"
     "skip or a retry; errors still get one"},
    {'x', "exclusive", NULL, "an exclusive lock, the default (-e too)"},
    {'e', "exclusive", NULL, NULL},
    {'c', "command", "STRING",
     "run STRING with sh -c (as flock -c); no CMD\n"
     "may follow"},
    {OPT_TTL, "ttl", "SEC",
     "lease (default 30): the longest a dead or hung\n"
     "dlock can keep others out"},
    {'E', "conflict-exit-code", "CODE",
     "exit CODE (default 1) if not acquired in time"},
    {'S', "shared", NULL, "a shared (read) lock"},
    {'l', "limit", "N",
     "a semaphore: CMD runs as one of at most N\n"
     "holders of NAME (up to 1024; default 1, a\n"
     "lock); every holder must give the same N"},
    {OPT_GRACE, "grace", "SEC",
     "between SIGTERM and SIGKILL when the lock is\n"
     "lost (default 10, at most a third of --ttl)"},
    {OPT_ONCE, "once", NULL,
     "run CMD until it has succeeded once (exit 0),\n"
     "on any host: after that, skip"},
    {OPT_ONCE_PER, "once-per", "PERIOD",
     "run CMD once per PERIOD (5m, 1h, 1d, or\n"
     "seconds): skip if the last run of NAME started\n"
     "less than PERIOD/2 ago on the store's clock.\n"
     "Give the schedule's interval (1h for an hourly\n"
     "cron job)"},
    {OPT_METRICS_FILE, "metrics-file", "PATH",
     "write the run's metrics to PATH (also\n"
     "$DLOCK_METRICS_FILE)"},
    {OPT_MAX_RUNTIME, "max-runtime", "DURATION",
     "stop CMD once it has run DURATION (5m, 1h, or\n"
     "seconds): SIGTERM, SIGKILL after --grace; the\n"
     "run is recorded as timed out, exit 124"},
    {OPT_KEEP_RUNS, "keep-runs", "N",
     "keep the last N runs of NAME in the store\n"
     "(1..10000; default 20), for every host's runs"},
    {OPT_REPLACE, "replace", NULL,
     "take NAME over from the run holding it: that\n"
     "run (given --replace too) stops its CMD and\n"
     "exits 75; this CMD starts once it has let go,\n"
     "or at its lease end"},
    {OPT_JSON, "json", NULL,
     "when the run ends, one JSON object on stdout\n"
     "(after CMD's own output) saying what it did;\n"
     "errors as one JSON object on stderr"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

/* `dlock elect`: a run whose acquire is a campaign (cmd_run.c), so the
 * same parser with a table of its own; the entries it shares with run's
 * mean the same. */
const struct cli_opt cli_elect_opts[] = {
    {OPT_VALUE, "value", "TEXT",
     "the value the leader publishes (dlock leader\n"
     "shows it; CMD gets it as DLOCK_LEADER_VALUE)"},
    {'w', "wait", "SEC", "campaign up to SEC seconds (default: forever)"},
    {'q', "quiet", NULL,
     "no line for a campaign that ends with -w or a\n"
     "retry; errors still get one"},
    {OPT_TTL, "ttl", "SEC",
     "lease (default 30): the longest a dead or hung\n"
     "leader keeps the others waiting"},
    {OPT_GRACE, "grace", "SEC",
     "between SIGTERM and SIGKILL when leadership\n"
     "ends (default 10, at most a third of --ttl)"},
    {OPT_PRIORITY, "priority", "N",
     "0..1000 (default 1): a leader yields to a\n"
     "candidate of higher priority; 0 never leads"},
    {OPT_HEALTH_CMD, "health-cmd", "CMD",
     "run CMD (with /bin/sh -c) every interval while\n"
     "leading; --health-fails failures in a row\n"
     "resign: CMD is stopped, exit 75"},
    {OPT_HEALTH_INTERVAL, "health-interval", "SEC",
     "how often the leader runs --health-cmd and\n"
     "looks for a candidate of higher priority\n"
     "(default 5)"},
    {OPT_HEALTH_FAILS, "health-fails", "N",
     "failures in a row that resign (default 3)"},
    {OPT_METRICS_FILE, "metrics-file", "PATH",
     "write the leader's metrics to PATH (also\n"
     "$DLOCK_METRICS_FILE)"},
    {OPT_JSON, "json", NULL,
     "at the end, one JSON object on stdout (as\n"
     "run --json); errors as one on stderr"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

#define N_OPTS (sizeof(cli_run_opts) / sizeof(cli_run_opts[0]) - 1)
#define N_ELECT_OPTS (sizeof(cli_elect_opts) / sizeof(cli_elect_opts[0]) - 1)
#define N_MAX_OPTS (N_OPTS > N_ELECT_OPTS ? N_OPTS : N_ELECT_OPTS)

static const char help_head[] =
    "usage: dlock [-s URL] run NAME [options] [--] CMD [ARG...]\n"
    "       dlock [-s URL] run NAME [options] -c STRING\n"
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
    "options:\n";

static const char help_tail[] =
    "With --once-per and no -w, a busy lock is a skip too (the run is\n"
    "someone else's); with -w, dlock waits, then decides.  --once waits as\n"
    "a plain run (default: forever), then decides; a lock still busy at\n"
    "the end of -w is not a skip but \"not acquired\" (1 or CODE).  A skip\n"
    "exits 0 (or CODE with -E) after one line on stderr saying which run\n"
    "satisfied it.  Every run of a lock (not --shared or --limit) is\n"
    "recorded: see dlock history NAME.\n"
    "\n"
    "A lock still busy at the end of -w N gets one line on stderr (who\n"
    "holds it, since when; -q: none); -n stays silent.  CMD is looked up\n"
    "before the lock is taken: one that cannot run takes no lock.\n"
    "\n"
    "exit: CMD's status (128+N if killed by signal N), 1 or CODE if not\n"
    "acquired, 0 or CODE if skipped, 64 usage, 69 store failing (or no run\n"
    "records for --once/--once-per), 75 lock lost, 124 stopped by\n"
    "--max-runtime, 126/127 CMD not\n"
    "executable/not found.  A CMD file without \"#!\" runs with /bin/sh, as\n"
    "with execvp(3) and flock(1); a binary it cannot run exits 126.\n";

static const char elect_head[] =
    "usage: dlock [-s URL] elect NAME [options] [--] CMD [ARG...]\n"
    "\n"
    "Campaign for NAME, and while leading run CMD as dlock run does:\n"
    "leadership is holding the lock NAME, and the term (DLOCK_FENCE) is\n"
    "its fence, greater than every earlier leader's.  CMD also gets\n"
    "DLOCK_LEADER_VALUE (--value) and DLOCK_NAME, DLOCK_STORE.  When\n"
    "leadership is lost CMD is stopped before the lease ends (SIGTERM,\n"
    "SIGKILL) and dlock exits 75.  When CMD exits dlock resigns and exits\n"
    "with CMD's status.  A signal while campaigning withdraws the\n"
    "candidacy (exit 128+N); while leading it is passed on to CMD.\n"
    "\n"
    "options:\n";

static const char elect_tail[] =
    "A leader that sees a candidate of higher priority campaigning (within\n"
    "--health-interval) yields: CMD is stopped as on a loss, dlock resigns\n"
    "and campaigns again; CMD starts afresh when it leads again.\n"
    "See dlock leader NAME [--watch] [--json] for who leads.\n"
    "\n"
    "exit: CMD's status (128+N if killed by signal N), 1 if not elected\n"
    "within -w, 64 usage, 69 store failing (or no election on it), 75\n"
    "leadership lost or resigned for failed health checks, 126/127 CMD not\n"
    "executable/not found, 128+N a signal N before CMD started.\n";

/* The table being parsed (run's or elect's) and its command word. */
static const struct cli_opt *opts_in = cli_run_opts;
static const char *cmd_word = "run";

/* The options part of the help, from the table: "  -w, --wait SEC" (four
 * spaces for no short name), the help from column 24 with its further
 * lines under it; a head that reaches column 24 is followed by two
 * spaces, or, past column 26, by the help on lines of its own. */
static void print_opts(FILE *f, const struct cli_opt *table)
{
    for (const struct cli_opt *p = table; p->key != 0; p++) {
        const char *h = p->help;
        int n;

        if (h == NULL)
            continue;
        if (p->name == NULL) /* a short option only */
            n = fprintf(f, "  -%c", p->key);
        else
            n = p->key < 256 ? fprintf(f, "  -%c, --%s", p->key, p->name)
                             : fprintf(f, "      --%s", p->name);
        n += fprintf(f, "%s%s", p->arg != NULL ? " " : "",
                     p->arg != NULL ? p->arg : "");
        if (n > 26)
            fprintf(f, "\n%24s", "");
        else
            fprintf(f, "%*s", n < 24 ? 24 - n : 2, "");
        for (;;) {
            size_t len = strcspn(h, "\n");

            fprintf(f, "%.*s\n", (int)len, h);
            if (h[len] == '\0')
                break;
            h += len + 1;
            fprintf(f, "%24s", "");
        }
    }
}

void cli_run_usage(FILE *f)
{
    fputs(help_head, f);
    print_opts(f, cli_run_opts);
    fputs(help_tail, f);
}

void cli_elect_usage(FILE *f)
{
    fputs(elect_head, f);
    print_opts(f, cli_elect_opts);
    fputs(elect_tail, f);
}

static int unknown_opt(const char *a)
{
    if (cli_misplaced_global(cmd_word, "NAME -- CMD", a))
        return EXIT_USAGE;
    cli_err("%s: unknown option '%s' (see dlock %s --help)", cmd_word,
            cli_arg_shown(a), cmd_word);
    return EXIT_USAGE;
}

/* -w, --ttl, --grace: seconds into *ms; 0, or a usage exit code after
 * saying why.  a is the option as given ("-w5", "--wait", "--wait=5"). */
static int take_seconds(int64_t *ms, int is_ttl, const char *a, const char *val)
{
    /* The option's name alone ("-w5", "--ttl=x": the value is not part
     * of it). */
    int opt_len = a[1] != '-' ? 2 : (int)strcspn(a, "=");

    *ms = cli_parse_seconds(val);
    if (*ms == -2) {
        cli_err("%s: too many seconds for %s: '%s' (the maximum "
                "is 365 days, %lld)",
                cmd_word, a, val, CLI_SECONDS_MAX);
        return EXIT_USAGE;
    }
    if (*ms < 0) {
        cli_err("%s: bad number of seconds for %.*s: '%s' "
                "(decimal seconds, or a number with ms)",
                cmd_word, opt_len, a, cli_arg_shown(val));
        return EXIT_USAGE;
    }
    if (is_ttl && *ms < DLOCK_TTL_MIN_MS) {
        cli_err("%s: --ttl %s is shorter than %d ms: renewal "
                "could not keep such a lease",
                cmd_word, val, DLOCK_TTL_MIN_MS);
        return EXIT_USAGE;
    }
    return 0;
}

/* What option key (with val, NULL for none) sets; 0, or a usage exit
 * code after saying why.  a is the option as given. */
static int take_opt(struct run_opts *o, int key, const char *a, const char *val)
{
    char *end;
    long v;

    switch (key) {
    case 'w':
    case OPT_TIMEOUT:
        o->wait_given = 1;
        return take_seconds(&o->wait_ms, 0, a, val);
    case OPT_TTL:
        return take_seconds(&o->ttl_ms, 1, a, val);
    case OPT_GRACE:
        return take_seconds(&o->grace_ms, 0, a, val);
    case 'n':
        o->wait_ms = 0;
        o->wait_given = 1;
        return 0;
    case OPT_ONCE:
        o->once = 1;
        return 0;
    case 'q':
        o->quiet = 1;
        return 0;
    case 'x':
    case 'e':
        o->exclusive = 1;
        return 0;
    case 'c':
        if (*val == '\0') {
            cli_err("%s: -c needs a command", cmd_word);
            return EXIT_USAGE;
        }
        o->command = val;
        return 0;
    case OPT_JSON:
        /* From here on errors are one JSON object (cli_finish()). */
        o->json = 1;
        cli_json = 1;
        return 0;
    case 'S':
        o->shared = 1;
        return 0;
    case OPT_METRICS_FILE:
        if (*val == '\0') {
            cli_err("%s: --metrics-file needs a path", cmd_word);
            return EXIT_USAGE;
        }
        o->metrics_file = val;
        return 0;
    case OPT_VALUE:
        if (strlen(val) > DLOCK_VALUE_MAX || !cli_utf8_valid(val)) {
            cli_err("elect: --value must be valid UTF-8 of at most %d "
                    "bytes",
                    DLOCK_VALUE_MAX);
            return EXIT_USAGE;
        }
        o->value = val;
        return 0;
    case OPT_HEALTH_CMD:
        if (*val == '\0') {
            cli_err("elect: --health-cmd needs a command");
            return EXIT_USAGE;
        }
        o->health_cmd = val;
        return 0;
    case OPT_HEALTH_INTERVAL: {
        int rc = take_seconds(&o->health_interval_ms, 0, a, val);

        if (rc == 0 && o->health_interval_ms < 10) {
            cli_err("elect: --health-interval must be at least 10 ms");
            return EXIT_USAGE;
        }
        return rc;
    }
    case OPT_PRIORITY:
    case OPT_HEALTH_FAILS:
        v = strtol(val, &end, 10);
        if (strspn(val, "0123456789") != strlen(val) || *val == '\0' ||
            *end != '\0' || v < (key == OPT_PRIORITY ? 0 : 1) || v > 1000) {
            cli_err("elect: %s must be %d..1000, not '%s'",
                    key == OPT_PRIORITY ? "--priority" : "--health-fails",
                    key == OPT_PRIORITY ? 0 : 1, cli_arg_shown(val));
            return EXIT_USAGE;
        }
        if (key == OPT_PRIORITY)
            o->priority = (int)v;
        else
            o->health_fails = (int)v;
        return 0;
    case OPT_REPLACE:
        o->replace = 1;
        return 0;
    case OPT_MAX_RUNTIME:
        o->max_runtime_ms = cli_parse_duration(val);
        if (o->max_runtime_ms == -2) {
            cli_err("run: --max-runtime '%s' is longer than 365 days",
                    cli_arg_shown(val));
            return EXIT_USAGE;
        }
        if (o->max_runtime_ms <= 0) {
            /* 0 is no limit to timeout(1), a limit nothing meets here:
             * either way not what was meant. */
            cli_err("run: bad --max-runtime '%s': a time CMD may run, "
                    "above 0 (such as 90, 250ms, 5m, 1h)",
                    cli_arg_shown(val));
            return EXIT_USAGE;
        }
        return 0;
    case OPT_ONCE_PER:
        o->period_ms = cli_parse_duration(val);
        if (o->period_ms == -2) {
            cli_err("run: --once-per '%s' is longer than 365 days",
                    cli_arg_shown(val));
            return EXIT_USAGE;
        }
        if (o->period_ms <= 0) {
            cli_err("run: bad --once-per '%s': a period such as 5m, "
                    "1h, 1d or 90 (seconds), the schedule's interval",
                    cli_arg_shown(val));
            return EXIT_USAGE;
        }
        return 0;
    case OPT_KEEP_RUNS:
        v = strtol(val, &end, 10);
        if (strspn(val, "0123456789") != strlen(val) || *val == '\0' ||
            *end != '\0' || v < 1 || v > DLOCK_RUNS_KEPT_MAX) {
            /* 0 is no history at all to CronJob; here it would be no
             * record for --once to go by: refused. */
            cli_err("run: --keep-runs must be 1..%d, not '%s'",
                    DLOCK_RUNS_KEPT_MAX, cli_arg_shown(val));
            return EXIT_USAGE;
        }
        o->keep_runs = (unsigned)v;
        return 0;
    case 'l':
        v = strtol(val, &end, 10);
        /* Digits only: strtol would also take " 3", "+3" and "-0". */
        if (strspn(val, "0123456789") != strlen(val) || *val == '\0' ||
            *end != '\0' || v < 1 || v > DLOCK_LIMIT_MAX) {
            cli_err("run: the limit must be 1..%d, not '%s'", DLOCK_LIMIT_MAX,
                    cli_arg_shown(val));
            return EXIT_USAGE;
        }
        o->limit = (unsigned)v;
        return 0;
    case 'E':
        v = strtol(val, &end, 10);
        if (*val == '\0' || *end != '\0' || v < 0 || v > 255) {
            cli_err("run: the conflict exit code must be 0..255, not "
                    "'%s'",
                    cli_arg_shown(val));
            return EXIT_USAGE;
        }
        o->conflict_code = (int)v;
        o->conflict_given = 1;
        return 0;
    }
    return unknown_opt(a); /* not in the table: getopt_long never says so */
}

static int parse(struct run_opts *o, int argc, char **argv)
{
    /* getopt_long's tables, from cli_run_opts: "+" stops at the first
     * word that is no option (NAME, then CMD: CMD's own options are
     * never read), ":" tells a missing value from an unknown option. */
    struct option lo[N_MAX_OPTS + 1];
    char so[2 + 2 * N_MAX_OPTS + 1];

    cli_getopt_tables(opts_in, lo, so);
    o->wait_ms = DLOCK_WAIT_FOREVER;
    o->ttl_ms = DLOCK_DEFAULT_TTL_MS;
    o->grace_ms = DEFAULT_GRACE_MS;
    o->conflict_code = EXIT_BUSY;
    o->limit = 1;
    /* A scan of its own each call (the fuzzer parses again and again);
     * the messages are ours. */
    optind = 0;
    opterr = 0;
    for (;;) {
        /* Every call starts at a whole argv element: a short option
         * with a value takes the rest of it, one without stands alone. */
        int at = optind > 0 ? optind : 1, c, rc;
        const char *a = at < argc ? argv[at] : NULL;

        if (a != NULL && a[0] == '-' && a[1] != '\0' && strcmp(a, "--") != 0 &&
            cli_opt_of(opts_in, a) == NULL)
            return unknown_opt(a);
        c = getopt_long(argc, argv, so, lo, NULL);
        if (c == -1) {
            /* "--": NAME (if not given yet) and CMD follow it. */
            if (optind == at + 1 && strcmp(argv[at], "--") == 0) {
                /* "dlock run -- echo hi" would take echo for the lock. */
                if (o->name == NULL) {
                    cli_err("%s: NAME is missing before '--' (dlock %s NAME "
                            "[options] -- CMD [ARG...])",
                            cmd_word, cmd_word);
                    return EXIT_USAGE;
                }
                if (optind < argc)
                    o->cmd = argv + optind;
                o->dashdash = 1;
                break;
            }
            if (optind >= argc)
                break;
            if (o->name == NULL) {
                o->name = argv[optind++];
                continue;
            }
            o->cmd = argv + optind; /* flock style: the rest is the command */
            break;
        }
        if (c == 'h')
            return -1;
        if (c == ':') {
            cli_err("%s: %s needs a value", cmd_word, a);
            return EXIT_USAGE;
        }
        if (c == '?')
            return unknown_opt(a);
        rc = take_opt(o, c, a, optarg);
        if (rc != 0)
            return rc;
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
    if (o->exclusive && o->shared) {
        cli_err("%s: -x (--exclusive) and --shared conflict: a lock is one "
                "or the other",
                cmd_word);
        return EXIT_USAGE;
    }
    if (o->command != NULL) {
        if (o->cmd != NULL) {
            cli_err("%s: -c STRING and a CMD conflict: give one (-c runs "
                    "STRING with sh -c)",
                    cmd_word);
            return EXIT_USAGE;
        }
        o->sh_cmd[0] = (char *)"/bin/sh";
        o->sh_cmd[1] = (char *)"-c";
        o->sh_cmd[2] = (char *)o->command;
        o->sh_cmd[3] = NULL;
        o->cmd = o->sh_cmd;
        o->dashdash = 1;
    }
    if (o->name == NULL || o->cmd == NULL) {
        cli_err("%s: %s", cmd_word,
                o->name == NULL ? "missing NAME" : "missing CMD");
        if (cli_json || cli_log_json)
            ; /* stderr's lines are JSON only */
        else if (o->elect)
            cli_elect_usage(stderr);
        else
            cli_run_usage(stderr);
        return EXIT_USAGE;
    }
    if (cli_name_secret(cmd_word, "NAME -- CMD", o->name))
        return EXIT_USAGE;
    /* Two hosts firing the same period would each stop the other's run
     * before the record could say the period's run is on: the take-over
     * and the skip must be one decision, which the store does not offer
     * yet. */
    if (o->replace && (o->once || o->period_ms > 0)) {
        cli_err("run: --replace cannot be combined with %s yet: runs of "
                "the same period would stop each other's",
                o->once ? "--once" : "--once-per");
        return EXIT_USAGE;
    }
    if (o->replace && (o->shared || o->limit > 1)) {
        cli_err("run: --replace takes over an exclusive lock, not %s",
                o->shared ? "--shared" : "--limit");
        return EXIT_USAGE;
    }
    /* A try cannot take over: the holder lets go only after its grace
     * period, by which time the try has given up.  The request it held
     * for that moment would still have stopped the running job. */
    if (o->replace && o->wait_ms == 0) {
        cli_err("run: --replace waits for the running run to let go: not "
                "with -n or -w 0 (the request alone would stop it)");
        return EXIT_USAGE;
    }
    if (o->replace && strlen(o->name) > DLOCK_NAME_MAX - REPLACE_MARKER_EXTRA) {
        cli_err("run: NAME is too long for --replace: at most %d bytes (its "
                "request lock adds %d)",
                DLOCK_NAME_MAX - REPLACE_MARKER_EXTRA, REPLACE_MARKER_EXTRA);
        return EXIT_USAGE;
    }
    cli_log_name = o->name;
    return 0;
}

int cli_run_parse(struct run_opts *o, int argc, char **argv)
{
    opts_in = cli_run_opts;
    cmd_word = "run";
    return parse(o, argc, argv);
}

int cli_elect_parse(struct run_opts *o, int argc, char **argv)
{
    int rc;

    opts_in = cli_elect_opts;
    cmd_word = "elect";
    o->elect = 1;
    o->priority = 1;
    o->health_interval_ms = DEFAULT_HEALTH_INTERVAL_MS;
    o->health_fails = DEFAULT_HEALTH_FAILS;
    rc = parse(o, argc, argv);
    opts_in = cli_run_opts;
    cmd_word = "run";
    /* The marker of a priority above 1 is "dlock.candidates/" NAME "/"
     * P "/" 16 hex digits (run_elect.c): it must be a name too. */
    if (rc == 0 && o->priority > 1 &&
        strlen(o->name) > DLOCK_NAME_MAX - ELECT_MARKER_EXTRA) {
        cli_err("elect: NAME is too long for --priority %d: at most %d "
                "bytes (its marker lock adds %d)",
                o->priority, DLOCK_NAME_MAX - ELECT_MARKER_EXTRA,
                ELECT_MARKER_EXTRA);
        return EXIT_USAGE;
    }
    return rc;
}
