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

enum { OPT_PRINT = 256, OPT_JSON };

/* `dlock init`'s options (its parser's, the completions'). */
const struct cli_opt cli_init_opts[] = {
    {OPT_PRINT, "print", NULL, "print the DDL instead; connects nowhere"},
    {OPT_JSON, "json", NULL, "one JSON object"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

static int take(void *ctx, int key, const char *a, const char *val)
{
    (void)a, (void)val;
    /* ctx: {print, json} */
    if (key == OPT_PRINT)
        ((int *)ctx)[0] = 1;
    else if (key == OPT_JSON)
        ((int *)ctx)[1] = 1;
    return 0;
}

int cmd_init(const struct cli *c, int argc, char **argv)
{
    dlock_store *store;
    int set[2] = {0, 0}, print, json, rc;

    static const struct cli_args args = {"init", cli_init_opts, "", NULL,
                                         0,      help};
    const char *none;

    rc = cli_args_parse(&args, argc, argv, take, set, &none);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    print = set[0];
    json = set[1];
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
