/*
 * cmd_init.c - `dlock init [--print]`.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] init [--print] [--json]\n"
    "\n"
    "Create the store's lock tables if they are missing (stores also do it\n"
    "on first use).\n"
    "  --print  print the DDL instead, for a DBA to run; connects nowhere\n"
    "  --json   one JSON object: {\"url\" (password hidden), \"ready\": true}, "
    "or\n"
    "           with --print {\"url\", \"ddl\"}; errors as one on stderr\n";

int cmd_init(const struct cli *c, int argc, char **argv)
{
    dlock_store *store;
    int print = 0, json = 0, rc;

    for (int i = 1; i < argc; i++) {
        if (cli_is(argv[i], "-h", "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (strcmp(argv[i], "--print") == 0) {
            print = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            cli_json = 1;
        } else {
            if (cli_misplaced_global("init", "", argv[i]))
                return EXIT_USAGE;
            cli_err("init: unexpected argument '%s'", cli_arg_shown(argv[i]));
            return EXIT_USAGE;
        }
    }
    if (print) {
        char *ddl = NULL;

        rc = dlock_ddl(&ddl, c->url);
        if (rc != DLOCK_OK)
            return cli_fail(rc, "init");
        if (json) {
            char *red = NULL;

            /* The URL as dlock_store_url() would show it: no password. */
            rc = dlock_url_redact(&red, c->url);
            if (rc != DLOCK_OK) {
                dlock_free(ddl);
                return cli_fail(rc, "init");
            }
            fputs("{\"url\":", stdout);
            cli_json_string(stdout, red);
            fputs(",\"ddl\":", stdout);
            cli_json_string(stdout, ddl);
            fputs("}\n", stdout);
            dlock_free(red);
        } else {
            fputs(ddl, stdout);
        }
        dlock_free(ddl);
        return 0;
    }
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    rc = dlock_store_init(store);
    if (rc != DLOCK_OK)
        rc = cli_fail(rc, "init");
    else if (json) {
        fputs("{\"url\":", stdout);
        cli_json_string(stdout, dlock_store_url(store));
        fputs(",\"ready\":true}\n", stdout);
    } else
        printf("tables ready in %s\n", dlock_store_url(store));
    dlock_store_close(store);
    return rc;
}
