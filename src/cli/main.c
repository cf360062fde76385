/*
 * main.c - `dlock`: global options and dispatch to one cmd_*.c per
 * subcommand.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage_fmt[] =
    "usage: dlock [-s URL] [-v] COMMAND [ARGS]\n"
    "\n"
    "Named locks kept in a database: SQLite (default), Redis, PostgreSQL,\n"
    "MySQL/MariaDB.\n"
    "\n"
    "commands:\n"
    "  run NAME [-w SEC | -n] [--ttl SEC] [-E CODE] [--shared] [--] CMD...\n"
    "                      run CMD while holding the lock NAME\n"
    "  status NAME [--json]  who holds NAME\n"
    "  list [PREFIX] [--json]  held locks\n"
    "  release --force NAME  break a stuck lock (administration)\n"
    "  init [--print]      create the store's tables (or print the DDL)\n"
    "\n"
    "options:\n"
    "  -s, --store URL     the store (default: $DLOCK_STORE, else\n"
    "                      %s,\n"
    "                      private to your user)\n"
    "  -v, --verbose       say more (who holds a lock while waiting)\n"
    "  -h, --help          this help; `dlock COMMAND --help` for a command\n"
    "      --version       the version and the stores compiled in\n"
    "\n"
    "exit codes: the command's own (128+N if it died of signal N); 1 (or\n"
    "-E CODE) not acquired in time; 64 usage; 69 store unreachable or\n"
    "failing; 70 internal error; 75 lock lost while the command ran.\n";

static void usage(FILE *f)
{
    fprintf(f, usage_fmt, dlock_default_url());
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*fn)(const struct cli *, int, char **);
    } cmds[] = {
        {"run", cmd_run},         {"status", cmd_status},
        {"list", cmd_list},       {"release", cmd_release},
        {"init", cmd_init},
    };
    struct cli c = {NULL, 0};
    int i;

    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];

        if (cli_is(a, "-h", "--help")) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--version") == 0) {
            printf("dlock %s (stores: %s)\n", dlock_version(),
                   dlock_schemes());
            return 0;
        } else if (cli_is(a, "-v", "--verbose")) {
            c.verbose = 1;
        } else if (cli_is(a, "-s", "--store")) {
            if (++i == argc) {
                cli_err("%s needs a URL", a);
                return EXIT_USAGE;
            }
            c.url = argv[i];
        } else if (strncmp(a, "--store=", 8) == 0) {
            c.url = a + 8;
        } else if (strncmp(a, "-s", 2) == 0) {
            c.url = a + 2;
        } else {
            cli_err("unknown option '%s' (see dlock --help)", a);
            return EXIT_USAGE;
        }
    }
    if (i == argc) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (c.url == NULL)
        c.url = getenv("DLOCK_STORE");
    if (c.url == NULL || c.url[0] == '\0')
        c.url = dlock_default_url();
    for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++)
        if (strcmp(argv[i], cmds[k].name) == 0)
            return cmds[k].fn(&c, argc - i, argv + i);
    cli_err("unknown command '%s' (see dlock --help)", argv[i]);
    return EXIT_USAGE;
}
