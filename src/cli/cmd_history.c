/*
 * cmd_history.c - `dlock history NAME [--json] [-n N]`: the kept runs of
 * a name, newest first.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] history NAME [--json] [-n N]\n"
    "\n"
    "The recorded runs of NAME (dlock run), newest first: how each ended\n"
    "(exited N, killed by signal N, lost the lock, abandoned: its holder\n"
    "went away, or running), host, pid, start (UTC, the store's clock),\n"
    "duration and fence.  The store keeps the last 20.\n"
    "  -n N     the newest N only (1..20)\n"
    "  --json   a JSON array of objects, as \"last_run\" in status --json\n";

struct walk {
    int json;
    unsigned n;
};

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

int cmd_history(const struct cli *c, int argc, char **argv)
{
    const char *name = NULL;
    struct walk w = {0, 0};
    unsigned max = 0;
    dlock_store *store;
    int rc;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];

        if (cli_is(a, "-h", "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (strcmp(a, "--json") == 0) {
            w.json = 1;
            cli_json = 1;
        } else if (cli_is(a, "-n", NULL) || !strncmp(a, "-n", 2)) {
            const char *v = a[2] != '\0'   ? a + 2
                            : i + 1 < argc ? argv[++i]
                                           : NULL;
            char *end;
            long n;

            if (v == NULL) {
                cli_err("history: -n needs a number");
                return EXIT_USAGE;
            }
            n = strtol(v, &end, 10);
            if (strspn(v, "0123456789") != strlen(v) || *v == '\0' ||
                *end != '\0' || n < 1 || n > DLOCK_RUNS_KEPT) {
                cli_err("history: -n must be 1..%d, not '%s'", DLOCK_RUNS_KEPT,
                        cli_arg_shown(v));
                return EXIT_USAGE;
            }
            max = (unsigned)n;
        } else if (strcmp(a, "--") == 0 && i + 1 < argc && !name) {
            name = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            if (cli_misplaced_global("history", "NAME", a))
                return EXIT_USAGE;
            cli_err("history: unknown option '%s'", cli_arg_shown(a));
            return EXIT_USAGE;
        } else if (name == NULL) {
            name = a;
        } else {
            cli_err("history: one NAME only");
            return EXIT_USAGE;
        }
    }
    if (name == NULL)
        return cli_missing_name("history", help);
    if (cli_name_secret("history", "NAME", name))
        return EXIT_USAGE;
    cli_log_name = name;
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    if (w.json)
        putchar('[');
    rc = dlock_history(store, name, max, show, &w);
    if (w.json)
        fputs(w.n ? "\n]\n" : "]\n", stdout);
    if (rc != DLOCK_OK)
        rc = cli_fail(rc, "history");
    dlock_store_close(store);
    return rc;
}
