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

int cmd_release(const struct cli *c, int argc, char **argv)
{
    const char *name = NULL;
    dlock_store *store;
    unsigned removed = 0;
    int force = 0, json = 0, rc;

    for (int i = 1; i < argc; i++) {
        if (cli_is(argv[i], "-h", "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (cli_is(argv[i], "-f", "--force")) {
            force = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            cli_json = 1;
        } else if (strcmp(argv[i], "--") == 0 && i + 1 < argc && !name) {
            name = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            if (cli_misplaced_global("release", "--force NAME", argv[i]))
                return EXIT_USAGE;
            cli_err("release: unknown option '%s'", cli_arg_shown(argv[i]));
            return EXIT_USAGE;
        } else if (name == NULL) {
            name = argv[i];
        } else {
            cli_err("release: one NAME only");
            return EXIT_USAGE;
        }
    }
    if (name == NULL)
        return cli_missing_name("release", help);
    if (cli_name_secret("release", "--force NAME", name))
        return EXIT_USAGE;
    cli_log_name = name;
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
