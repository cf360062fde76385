/*
 * cmd_init.c - `dlock init [--print]`.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] init [--print]\n"
    "\n"
    "Create the store's lock tables if they are missing (stores also do it\n"
    "on first use).\n"
    "  --print  print the DDL instead, for a DBA to run; connects nowhere\n";

enum { OPT_PRINT = 256 };

/* `dlock init`'s options (its parser's, the completions'). */
const struct cli_opt cli_init_opts[] = {
    {OPT_PRINT, "print", NULL, "print the DDL instead; connects nowhere"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

static int take(void *ctx, int key, const char *a, const char *val)
{
    (void)a, (void)val;
    if (key == OPT_PRINT)
        *(int *)ctx = 1;
    return 0;
}

int cmd_init(const struct cli *c, int argc, char **argv)
{
    dlock_store *store;
    int print = 0, rc;

    static const struct cli_args args = {"init", cli_init_opts, "", NULL,
                                         0,      help};
    const char *none;

    rc = cli_args_parse(&args, argc, argv, take, &print, &none);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (print) {
        char *ddl = NULL;

        rc = dlock_ddl(&ddl, c->url);
        if (rc != DLOCK_OK)
            return cli_fail(rc, "init");
        fputs(ddl, stdout);
        dlock_free(ddl);
        return 0;
    }
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    rc = dlock_store_init(store);
    if (rc != DLOCK_OK)
        rc = cli_fail(rc, "init");
    else
        printf("tables ready in %s\n", dlock_store_url(store));
    dlock_store_close(store);
    return rc;
}
