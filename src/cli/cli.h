/*
 * cli.h - shared pieces of the dlock command.
 */
#ifndef DLOCK_CLI_H
#define DLOCK_CLI_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "dlock.h"

/* The monotonic clock in ms (waits, deadlines, a scrape's age).
 * clock_gettime() is async-signal-safe (POSIX.1-2008): signal handlers
 * may call it. */
static inline int64_t cli_mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Exit codes (sysexits.h values, as docs/cli.md's "Exit codes" lists). */
#define EXIT_BUSY 1
/* `dlock status`: the name is free (LSB's "program is not running",
 * as `systemctl is-active` exits). */
#define EXIT_FREE 3
#define EXIT_USAGE 64
#define EXIT_UNAVAILABLE 69
#define EXIT_INTERNAL 70
#define EXIT_LOST 75
#define EXIT_TIMEDOUT 124 /* --max-runtime, as timeout(1) */

struct cli {
    const char *url; /* as given: may hold a password, never printed */
    int verbose;
};

/* Messages on stderr, each one line: "dlock: <msg>" (unless cli_quiet:
 * the fuzzer), or with --log-format=json (cli_log_json) one JSON object
 * {"ts","level","pid","cmd","name","msg"}.  When stderr is the journal
 * (JOURNAL_STREAM names it) a line starts with its syslog priority,
 * "<3>" for an error, so `journalctl -p err` finds them.  Under --json
 * (cli_json) errors are not lines: cli_finish() says them as one object. */
#define CLI_LOG_ERR 3     /* what decides a failure's exit */
#define CLI_LOG_WARNING 4 /* something went wrong, dlock goes on */
#define CLI_LOG_NOTICE                                                         \
    5 /* worth knowing: a run skipped, a leader steps down                     \
       */
#define CLI_LOG_INFO 6
#define CLI_LOG_DEBUG 7 /* -v's lines */
extern int cli_quiet;
extern int cli_json;     /* a command's --json was seen */
extern int cli_log_json; /* --log-format=json / DLOCK_LOG_FORMAT=json */
/* What a JSON log line names: the command and the lock (NULL: none). */
extern const char *cli_log_cmd;
extern const char *cli_log_name;
void cli_log(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define cli_warn(...) cli_log(CLI_LOG_WARNING, __VA_ARGS__)
#define cli_notice(...) cli_log(CLI_LOG_NOTICE, __VA_ARGS__)
#define cli_debug(...) cli_log(CLI_LOG_DEBUG, __VA_ARGS__)
/* A message made of parts already escaped (cli_print_safe()), said as
 * cli_log() says one. */
void cli_log_safe(int prio, const char *msg);
/* A message written in parts: cli_msg_open() gives the FILE to write it
 * to (NULL: out of memory), cli_msg_say() says it at prio and frees it. */
struct cli_msg {
    FILE *f;
    char *text;
    size_t len;
};
FILE *cli_msg_open(struct cli_msg *m);
void cli_msg_say(struct cli_msg *m, int prio);
/* "text" or "json" into cli_log_json: 0, or -1 for another word. */
int cli_log_format(const char *word);
/* Under --json: the errors said so far (0: none), and them as the value
 * of "error": {"exit_code","code" (the library's DLOCK_* of the first,
 * null if it was dlock's own),"message" (the first),"messages" (all, when
 * more than one)}, or null. */
int cli_json_errors(void);
void cli_json_error(FILE *f, int exit_code);
/* At exit (main): under --json the errors as one line on stderr,
 * {"error":{...}} (with --log-format=json a log line holding "error"). */
void cli_finish(int exit_code);
/* arg as a usage error may show it: what follows "--opt=" or "-x" (or
 * the whole) as dlock_url_redact() shows it, cut to 200 bytes.  A
 * misplaced or misspelt -s URL is echoed by "unknown option" otherwise.
 * The text is in a static buffer, valid until the next call. */
const char *cli_arg_shown(const char *arg);
/* Report a library failure and return the exit code it maps to. */
int cli_fail(int rc, const char *what);
int cli_exit_code(int rc);
/* Open the store (reporting failures); 0 or an exit code. */
int cli_open(const struct cli *c, dlock_store **out);
/* cli_open() for a waiter (dlock run -w): a store not reachable yet is
 * tried again within *wait_ms, which is left as the rest of the wait. */
int cli_open_waiting(const struct cli *c, dlock_store **out, int64_t *wait_ms);
/* cli_open()'s exit code for dlock_store_open()'s rc (0 when opened). */
int cli_open_result(int rc);
/* The longest time an option takes: 365 days, the longest lease. */
#define CLI_SECONDS_MAX (365LL * 24 * 3600)
/* Parse seconds ("10", "0.25", "1.5s", "250ms") into ms; -1 if it is not
 * such a number, -2 if it is over CLI_SECONDS_MAX. */
int64_t cli_parse_seconds(const char *s);
/* Is s valid UTF-8? */
int cli_utf8_valid(const char *s);
/* Write s for a terminal: controls, bidi overrides, backslashes and bytes
 * that are not UTF-8 as \xNN escapes (names and hosts come from a store
 * anyone with access may have written). */
void cli_print_safe(FILE *f, const char *s);
/* Write s as a Prometheus label value (text format 0.0.4) without the
 * quotes: backslash, double quote and newline escaped.  What both the
 * metrics file (metrics.c) and `dlock metrics` (fleet.c) write. */
void cli_prom_escape(FILE *f, const char *s);
/* Write s as a JSON string (with quotes), always valid JSON: bytes that
 * are not UTF-8 become U+FFFD. */
void cli_json_string(FILE *f, const char *s);
/* Print info as one JSON object. */
void cli_json_info(FILE *f, const dlock_info *info);
/* Print info as one human-readable line. */
void cli_print_info(const dlock_info *info);
/* " by another client (not dlock)" and what its server says of it (login,
 * address, session), escaped (cmd_status.c). */
void cli_print_other(FILE *f, const dlock_info *info);
/* Nonzero for a holder that holds only the name's key on the server (no
 * row): then CLI_KEY_ONLY_HINT says what to do. */
int cli_other_key_only(const dlock_info *info);
#define CLI_KEY_ONLY_HINT                                                      \
    "(a session that holds only the name's key, as any login of the "          \
    "server may; ?mode=lease cannot be blocked that way)"
/* Whether a Unix ms time (from a store) is one to show: after the epoch,
 * before year 10000.  cli_time_utc() says "unknown" else. */
int cli_time_ok(int64_t unix_ms);
/* A Unix ms time as dlock shows every time, in text and JSON: RFC 3339
 * in UTC with milliseconds, 2026-11-27T12:00:00.123Z. */
const char *cli_time_utc(int64_t unix_ms, char *buf, size_t len);
/* Parse a duration: what cli_parse_seconds() takes, or a number with m,
 * h or d ("5m", "1h", "1.5h", "1d"); ms, -1 if not one, -2 if over
 * CLI_SECONDS_MAX. */
int64_t cli_parse_duration(const char *s);

/* Run records (dlock_run), shared by status, list, history and run. */
/* The result as a word: running, exited, signaled, lost, abandoned. */
const char *cli_run_word(int result);
/* One JSON object for run (fence as a string, times as ms and ISO). */
void cli_json_run(FILE *f, const dlock_run *run);
/* One line's worth for run, without the name: "exited 0 on host h pid
 * 42, started ..., took 1.234 s, fence 7" (host escaped). */
void cli_print_run(FILE *f, const dlock_run *run);
/* cmd_status.c: the last run of name (out->fence 0: none; a store
 * without run records has none): 0 or an exit code after saying why. */
int cli_last_run(dlock_store *store, const char *name, dlock_run *out);
/* cmd_status.c: the last run of every name under prefix (NULL: all),
 * sorted by name, into *runs (malloc'd, *n of them; none from a store
 * without run records).  DLOCK_OK, or the failing rc (DLOCK_ENOMEM too),
 * nothing said. */
int cli_last_runs(dlock_store *store, const char *prefix, dlock_run **runs,
                  size_t *n);
/* Suspensions (cmd_suspend.c), shared by status, list, history, run and
 * metrics.  "suspended by WHO at T: REASON" (escaped; ": REASON" only
 * when there is one), and as one JSON object (null for NULL). */
void cli_print_suspension(FILE *f, const dlock_suspension *s);
void cli_json_suspension(FILE *f, const dlock_suspension *s);
/* name's suspension into *out (NULL: none, or a store that cannot
 * suspend): 0, or an exit code after saying why. */
int cli_suspension(dlock_store *store, const char *name,
                   dlock_suspension **out);
/* Every suspension under prefix, sorted by name, into *out (malloc'd, *n;
 * none from a store that cannot suspend: then *kept is 0, if not NULL):
 * DLOCK_OK or the failing rc, nothing said; cli_suspension_find() looks a
 * name up in them. */
int cli_suspensions(dlock_store *store, const char *prefix,
                    dlock_suspension **out, size_t *n, int *kept);
const dlock_suspension *cli_suspension_find(const dlock_suspension *v, size_t n,
                                            const char *name);
/* cli_print_info() / cli_json_info() with the last run (NULL or fence 0:
 * none; JSON "last_run": null) and the suspension (NULL: none; JSON
 * "suspended": null). */
void cli_print_info_run(const dlock_info *info, const dlock_run *last,
                        const dlock_suspension *susp);
void cli_json_info_run(FILE *f, const dlock_info *info, const dlock_run *last,
                       const dlock_suspension *susp);
/* cli_json_info() without the closing brace, for a caller adding keys. */
void cli_json_info_open(FILE *f, const dlock_info *info);
/* Is arg one of the names (e.g. "-h", "--help")? */
int cli_is(const char *arg, const char *a, const char *b);
/* Is arg a global option (-s, --store, --store-file, -v, --verbose,
 * --version) given after the command cmd?  Then say so and where it goes,
 * as in "dlock -s URL <cmd> <rest>", and return 1; else 0.  The option's
 * value is never shown (a URL may hold a password). */
int cli_misplaced_global(const char *cmd, const char *rest, const char *arg);
/* Is name a URL holding a password ("dlock status redis://u:pw@h": a
 * store URL where NAME goes)?  Then say so, redacted, with where a store
 * goes ("dlock -s URL <cmd> <rest>"), and return 1: as a lock name it
 * would be printed, put in CMD's environment and written into the store
 * for every client to list.  A URL-like name without one is a name. */
int cli_name_secret(const char *cmd, const char *rest, const char *name);

/* A command's NAME is missing: its help on stderr (under --json or
 * --log-format=json one error saying so instead); EXIT_USAGE. */
int cli_missing_name(const char *cmd, const char *help);

/* One option of a command, in the table its parser, its --help and the
 * shell completions are made from (run.h: cli_run_opts; commands.c:
 * cli_cmds).  key: the short letter, or from 256 up for an option with a
 * long name only; name: the long name, without "--" (NULL: a short option
 * only); arg: the value's name in the help (SEC, N), NULL for an option
 * without one; help: its lines in --help (run, elect) and the completions'
 * description (its first line), NULL for one not listed there (-h,
 * --help).  A table ends with an entry of key 0.  The completions complete
 * a value named FILE or PATH as a file name, CMD as a command, URL as a
 * store URL (dlock_schemes()), any other not at all. */
struct cli_opt {
    int key;
    const char *name;
    const char *arg;
    const char *help;
};

/* The option tables of the commands (cmd_*.c) and the global options
 * (commands.c), each ended by {0}. */
extern const struct cli_opt cli_global_opts[];
extern const struct cli_opt cli_status_opts[];
extern const struct cli_opt cli_list_opts[];
extern const struct cli_opt cli_history_opts[];
extern const struct cli_opt cli_leader_opts[];
extern const struct cli_opt cli_release_opts[];
extern const struct cli_opt cli_suspend_opts[];
extern const struct cli_opt cli_resume_opts[];
extern const struct cli_opt cli_init_opts[];
extern const struct cli_opt cli_completion_opts[];
extern const struct cli_opt cli_check_opts[];
extern const struct cli_opt cli_metrics_opts[];

/* getopt_long's values for the global options without a short name. */
enum { CLI_OPT_STORE_FILE = 256, CLI_OPT_VERSION, CLI_OPT_LOG_FORMAT };

/* How many entries table has (before its {0}). */
size_t cli_opts_count(const struct cli_opt *table);
/* getopt_long's tables from table: lo (cli_opts_count() + 1 entries) and
 * so (2 * cli_opts_count() + 3 bytes), so starting with "+:" (stop at the
 * first word that is no option; ':' tells a missing value from an unknown
 * option). */
void cli_getopt_tables(const struct cli_opt *table, struct option *lo,
                       char *so);
/* The entry of the option at argv element a ("-w5", "--wait=5", "-n"),
 * or NULL for none.  getopt_long would also take "--wai" for --wait and
 * "-nS" for -n -S; dlock never has, so only a whole name counts, and a
 * short option without a value stands alone. */
const struct cli_opt *cli_opt_of(const struct cli_opt *table, const char *a);

/* A command that takes options from its table and at most one operand
 * (status, list, history, leader, release, init), parsed by
 * cli_args_parse() with getopt_long over the table.  Options and the
 * operand come in any order; "--" makes the next word the operand even
 * if it starts with '-'. */
struct cli_args {
    const char *cmd;            /* "status" */
    const struct cli_opt *opts; /* its table (cli_status_opts) */
    const char *rest; /* what follows cmd in a hint: "NAME", "--force NAME" */
    const char *operand; /* its operand's name (NAME, PREFIX); NULL: none */
    int required;        /* the operand must be given */
    const char *help;    /* its --help */
};
/* Parse argv[1..argc-1]: each option goes to take(ctx, key, a, val) (a:
 * the option as given; val: its value, NULL for none), which returns 0 or
 * a usage exit code after saying why; the operand to *operand (NULL: not
 * given).  0 to go on, -1 after printing help (-h, --help: exit 0), else
 * a usage exit code after saying why (the help on stderr for a missing
 * operand).  A NAME that is a URL with a password is refused
 * (cli_name_secret()). */
int cli_args_parse(const struct cli_args *d, int argc, char **argv,
                   int (*take)(void *ctx, int key, const char *a,
                               const char *val),
                   void *ctx, const char **operand);
/* A take() for tables of flags only: ctx is an int array, set[i] = 1 for
 * the table's entry i. */
int cli_take_flag(void *ctx, int key, const char *a, const char *val);

/* One command: its word, what runs it, its options, the operands that
 * follow (for the completions: "NAME -- CMD" completes a command after
 * "--"), one line for the completions, and hidden: not offered by the
 * completions' first word (none yet).  cli_cmds ends with a NULL name.
 * Adding a command is one entry there. */
struct cli_cmd {
    const char *name;
    int (*fn)(const struct cli *c, int argc, char **argv);
    const struct cli_opt *opts;
    const char *operands;
    const char *summary;
    int hidden;
};
extern const struct cli_cmd cli_cmds[];
/* The command named word, NULL for none. */
const struct cli_cmd *cli_cmd_find(const char *word);
/* completion.c: the completion script of shell ("bash", "zsh", "fish")
 * for the commands cmds (cli_cmds) and cli_global_opts, to f; 0, or -1
 * for another shell. */
int cli_completion_write(FILE *f, const char *shell,
                         const struct cli_cmd *cmds);

/* `dlock run` options, parsed by cli_run_parse(): 0 to go on, -1 for
 * --help, else a usage exit code (after printing why). */
struct run_opts {
    const char *name;
    char **cmd;
    int64_t wait_ms;
    int64_t ttl_ms;
    int64_t grace_ms;
    int conflict_code;
    int shared;
    unsigned limit;     /* 1: a lock; N > 1: one of N holders (semaphore) */
    int wait_given;     /* -w or -n was given */
    int conflict_given; /* -E was given */
    int once;           /* --once */
    int64_t period_ms;  /* --once-per DURATION; 0: none */
    const char *metrics_file; /* --metrics-file, else $DLOCK_METRICS_FILE */
    int64_t max_runtime_ms;   /* --max-runtime DURATION; 0: none */
    unsigned keep_runs;       /* --keep-runs N; 0: not given */
    int replace;              /* --replace: take over a running run */
    int quiet;                /* -q: no busy, timeout or retry lines */
    int exclusive;            /* -x / -e / --exclusive (the default) */
    int dashdash;             /* CMD came after "--" */
    const char *command;      /* -c STRING: CMD is sh_cmd, sh -c STRING */
    char *sh_cmd[4];
    int json; /* --json: one object on stdout at the end */
    /* dlock elect (cli_elect_parse()): the acquire is a campaign. */
    int elect;
    const char *value;          /* --value; NULL: none */
    int priority;               /* --priority, default 1; 0 never leads */
    const char *health_cmd;     /* --health-cmd; NULL: none */
    int64_t health_interval_ms; /* --health-interval */
    int health_fails;           /* --health-fails */
};

/* What one `dlock run` did, for the metrics file (src/cli/metrics.c,
 * filled by t35-extra).  Times are the host's wall clock, ms since the
 * Unix epoch. */
struct cli_run_report {
    const char *name;         /* the lock name */
    const char *metrics_file; /* --metrics-file PATH or $DLOCK_METRICS_FILE;
                               * NULL: none */
    int64_t start_ms;         /* when CMD started; 0 if it did not run */
    int64_t end_ms;           /* when it ended (or dlock skipped / gave up) */
    int64_t waited_ms;        /* time spent acquiring the lock */
    int ran;                  /* CMD ran */
    int skipped; /* not run: --once/--once-per satisfied, or the lock
                  * busy with either */
    int exited;  /* CMD exited, with status */
    int status;
    int signaled; /* CMD died of signal sig */
    int sig;
    int lost;      /* the lock was lost while CMD ran */
    int exit_code; /* what dlock exits with */
    /* dlock elect: the leader families too (metrics.c); leader_only:
     * only they (the report of a term's start). */
    int elect;
    int leader_only;
    int leader;     /* 1 while leading */
    int transition; /* leadership came or went since the last report */
    uint64_t term;  /* the term led last (0: none yet) */
};
/* Called once by cmd_run() just before it returns (after its options
 * were parsed).  metrics: filled by t35-extra. */
void run_report(const struct cli_run_report *r);
int cli_run_parse(struct run_opts *o, int argc, char **argv);
/* `dlock elect`'s options, the same way (o->elect set). */
int cli_elect_parse(struct run_opts *o, int argc, char **argv);

int cmd_run(const struct cli *c, int argc, char **argv);
int cmd_elect(const struct cli *c, int argc, char **argv);
int cmd_leader(const struct cli *c, int argc, char **argv);
int cmd_status(const struct cli *c, int argc, char **argv);
int cmd_list(const struct cli *c, int argc, char **argv);
int cmd_release(const struct cli *c, int argc, char **argv);
int cmd_suspend(const struct cli *c, int argc, char **argv);
int cmd_resume(const struct cli *c, int argc, char **argv);
int cmd_init(const struct cli *c, int argc, char **argv);
int cmd_history(const struct cli *c, int argc, char **argv);
int cmd_check(const struct cli *c, int argc, char **argv);
/* `dlock metrics [PREFIX]` (cmd_metrics.c, its text from fleet.c). */
int cmd_metrics(const struct cli *c, int argc, char **argv);
/* `dlock completion bash|zsh|fish` (commands.c): the script, made from
 * cli_cmds and the option tables (completion.c). */
int cmd_completion(const struct cli *c, int argc, char **argv);

#endif
