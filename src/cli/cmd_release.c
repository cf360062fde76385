/*
 * cmd_release.c - `dlock release --force NAME`.
 */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] release --force NAME [--json]\n"
    "\n"
    "Break the lock NAME whoever holds it.  For administrators: the holder\n"
    "finds out at its next renewal (a `dlock run` then stops its command\n"
    "and exits 75).  Fences are kept, so the next holder's fence is still\n"
    "higher.  Without --force nothing is done: a lock is released by its\n"
    "holder.\n"
    "  --json   one JSON object: {\"name\", \"removed\" (the holders removed,\n"
    "           0: it was not held)}; errors as one JSON object on stderr\n";

/* `dlock release`'s options (its parser's, the completions'). */
enum { OPT_JSON = 256 };

const struct cli_opt cli_release_opts[] = {
    {'f', "force", NULL, "break the lock, whoever holds it"},
    {OPT_JSON, "json", NULL, "one JSON object"},
    {'h', "help", NULL, NULL},
    {0, NULL, NULL, NULL},
};

static int take(void *ctx, int key, const char *a, const char *val)
{
    (void)a, (void)val;
    /* ctx: {force, json} */
    if (key == 'f')
        ((int *)ctx)[0] = 1;
    else if (key == OPT_JSON)
        ((int *)ctx)[1] = 1;
    return 0;
}

int cmd_release(const struct cli *c, int argc, char **argv)
{
    const char *name = NULL;
    dlock_store *store;
    unsigned removed = 0;
    int set[2] = {0, 0}, force, json, rc;

    static const struct cli_args args = {
        "release", cli_release_opts, "--force NAME", "NAME", 1, help};

    rc = cli_args_parse(&args, argc, argv, take, set, &name);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    force = set[0];
    json = set[1];
    if (!force) {
        cli_err("release: a lock is released by its holder; use --force to "
                "break '%s'",
                name);
        return EXIT_USAGE;
    }
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    rc = dlock_force_release(&removed, store, name);
    if (rc != DLOCK_OK) {
        rc = cli_fail(rc, "release");
    } else if (json) {
        fputs("{\"name\":", stdout);
        cli_json_string(stdout, name);
        printf(",\"removed\":%u}\n", removed);
    } else {
        cli_print_safe(stdout, name);
        if (removed == 0)
            printf(": was not held\n");
        else
            printf(": broken (%u holder%s removed)\n", removed,
                   removed == 1 ? "" : "s");
    }
    dlock_store_close(store);
    return rc;
}
