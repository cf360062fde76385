/*
 * cmd_list.c - `dlock list [PREFIX] [--json]`.
 */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] list [PREFIX] [--json]\n"
    "\n"
    "List the held locks (whose names start with PREFIX), one per line.\n"
    "  --json   a JSON array of objects, as `status --json` prints\n";

struct walk {
    int json;
    unsigned n;
};

static int show(const dlock_info *info, void *payload)
{
    struct walk *w = payload;

    if (w->json) {
        fputs(w->n == 0 ? "\n  " : ",\n  ", stdout);
        cli_json_info(stdout, info);
    } else {
        cli_print_info(info);
    }
    w->n++;
    return 0;
}

int cmd_list(const struct cli *c, int argc, char **argv)
{
    const char *prefix = NULL;
    struct walk w = {0, 0};
    dlock_store *store;
    int rc;

    for (int i = 1; i < argc; i++) {
        if (cli_is(argv[i], "-h", "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            w.json = 1;
        } else if (strcmp(argv[i], "--") == 0 && i + 1 < argc && !prefix) {
            prefix = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            cli_err("list: unknown option '%s'", cli_arg_shown(argv[i]));
            return EXIT_USAGE;
        } else if (prefix == NULL) {
            prefix = argv[i];
        } else {
            cli_err("list: one PREFIX only");
            return EXIT_USAGE;
        }
    }
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    if (w.json)
        putchar('[');
    rc = dlock_list(store, prefix, show, &w);
    if (w.json)
        fputs(w.n ? "\n]\n" : "]\n", stdout);
    if (rc != DLOCK_OK)
        rc = cli_fail(rc, "list");
    dlock_store_close(store);
    return rc;
}
