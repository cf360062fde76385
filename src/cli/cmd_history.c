/*
 * cmd_history.c - `dlock history NAME [--json] [-n N]`: the kept runs of
 * a name, newest first; without NAME, the last run of every name.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] history [NAME] [--json] [-n N]\n"
    "\n"
    "The recorded runs of NAME (dlock run), newest first: how each ended\n"
    "(exited N, killed by signal N, lost the lock, timed out: stopped by\n"
    "--max-runtime, abandoned: its holder went away, or running), host,\n"
    "pid, start (UTC, the store's clock),\n"
    "duration and fence.  The store keeps the last 20 (run --keep-runs N\n"
    "sets it per name, up to 10000).\n"
    "Without NAME: the last run of every name that has runs, one line\n"
    "each (\"NAME: \" and the run), sorted by name.\n"
    "A suspended name (dlock suspend) comes first with a line \"suspended\n"
    "by USER@HOST at T: REASON\" (in JSON an object whose \"result\" is\n"
    "\"suspended\", with \"by\", \"since_ms\", \"since\" and \"reason\").\n"
    "  -n N     the newest N only (1..10000; with NAME only)\n"
    "  --json   a JSON array of objects, as \"last_run\" in status --json\n";

enum { OPT_JSON = 256 };

/* `dlock history`'s options (its parser's, the completions'). */
const struct cli_opt cli_history_opts[] = {
    {OPT_JSON, "json", NULL, "a JSON array of objects"},
    {'n', NULL, "N", "the newest N only (1..10000; with NAME)"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

struct walk {
    int json;
    unsigned n;
    unsigned max; /* -n; 0: all */
};

static int take(void *ctx, int key, const char *a, const char *v)
{
    struct walk *w = ctx;
    char *end;
    long n;

    (void)a;
    if (key == OPT_JSON) {
        w->json = 1;
        return 0;
    }
    n = strtol(v, &end, 10);
    if (strspn(v, "0123456789") != strlen(v) || *v == '\0' || *end != '\0' ||
        n < 1 || n > DLOCK_RUNS_KEPT_MAX) {
        cli_err("history: -n must be 1..%d, not '%s'", DLOCK_RUNS_KEPT_MAX,
                cli_arg_shown(v));
        return EXIT_USAGE;
    }
    w->max = (unsigned)n;
    return 0;
}

static int show(const dlock_run *run, void *payload)
{
    struct walk *w = payload;

    if (w->json) {
        fputs(w->n == 0 ? "\n  " : ",\n  ", stdout);
        cli_json_run(stdout, run);
    } else {
        cli_print_run(stdout, run);
        putchar('\n');
    }
    w->n++;
    return 0;
}

/* A suspension as history shows it: a line, or an object whose result
 * is "suspended" (with_name: "NAME: " before the line). */
static void show_suspension(struct walk *w, const dlock_suspension *s,
                            int with_name)
{
    if (w->json) {
        fputs(w->n == 0 ? "\n  " : ",\n  ", stdout);
        fputs("{\"name\":", stdout);
        cli_json_string(stdout, s->name);
        fputs(",\"result\":\"suspended\",\"suspension\":", stdout);
        cli_json_suspension(stdout, s);
        fputc('}', stdout);
    } else {
        if (with_name) {
            cli_print_safe(stdout, s->name);
            fputs(": ", stdout);
        }
        cli_print_suspension(stdout, s);
        putchar('\n');
    }
    w->n++;
}

/* The last run of every name, sorted by name: "NAME: " and history's
 * line, or history's JSON objects (each holds its "name"); a suspended
 * name's suspension before it. */
static int last_runs(dlock_store *store, struct walk *w)
{
    dlock_suspension *susp = NULL;
    dlock_run *runs = NULL;
    size_t n = 0, ns = 0, j = 0;
    int rc = cli_last_runs(store, NULL, &runs, &n);

    if (rc == DLOCK_OK)
        rc = cli_suspensions(store, NULL, &susp, &ns, NULL);
    /* Both sorted by name: merged. */
    for (size_t i = 0; rc == DLOCK_OK && (i < n || j < ns);) {
        int c = i == n ? 1 : j == ns ? -1 : strcmp(runs[i].name, susp[j].name);

        if (c >= 0)
            show_suspension(w, &susp[j++], 1);
        if (c > 0)
            continue;
        if (!w->json) {
            cli_print_safe(stdout, runs[i].name);
            fputs(": ", stdout);
        }
        show(&runs[i++], w);
    }
    free(runs);
    free(susp);
    return rc;
}

int cmd_history(const struct cli *c, int argc, char **argv)
{
    static const struct cli_args args = {
        "history", cli_history_opts, "NAME", "NAME", 0, help};
    const char *name = NULL;
    struct walk w = {0, 0, 0};
    dlock_store *store;
    int rc;

    rc = cli_args_parse(&args, argc, argv, take, &w, &name);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (name == NULL && w.max != 0) {
        cli_err("history: -n goes with NAME (without one: the last run of "
                "every name)");
        return EXIT_USAGE;
    }
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    if (w.json)
        putchar('[');
    if (name == NULL) {
        rc = last_runs(store, &w);
    } else {
        dlock_suspension *susp = NULL;

        rc = dlock_suspended(&susp, store, name);
        if (rc == DLOCK_ENOTSUP)
            rc = DLOCK_OK;
        if (susp != NULL)
            show_suspension(&w, susp, 0);
        dlock_suspension_free(susp);
        if (rc == DLOCK_OK)
            rc = dlock_history(store, name, w.max, show, &w);
    }
    if (w.json)
        fputs(w.n ? "\n]\n" : "]\n", stdout);
    if (rc == DLOCK_ENOMEM)
        rc = (cli_err("history: out of memory"), EXIT_INTERNAL);
    else if (rc != DLOCK_OK)
        rc = cli_fail(rc, "history");
    dlock_store_close(store);
    return rc;
}
