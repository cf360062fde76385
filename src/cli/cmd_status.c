/*
 * cmd_status.c - `dlock status NAME [--json]`.
 */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: dlock [-s URL] status NAME [--json]\n"
    "\n"
    "Show whether NAME is held, by whom (host, pid, since when), how much\n"
    "lease is left and the highest fence handed out.  Exit 0 either way.\n"
    "A semaphore (run --limit N) shows how many of its N slots are taken\n"
    "and the holder whose lease lasts longest.\n"
    "  --json   one JSON object\n";

void cli_print_info(const dlock_info *in)
{
    char when[64];

    cli_print_safe(stdout, in->name);
    printf(": %s", in->held ? "held" : "free");
    if (in->other_client) {
        /* Seen only by the server: nothing more is known of it. */
        printf(" by another client (not dlock)");
    } else if (in->held) {
        if (in->limit > 1)
            printf(" by %u of %u (semaphore), the longest lease", in->holders,
                   in->limit);
        else if (in->shared)
            printf(" (shared, %u holder%s)", in->holders,
                   in->holders == 1 ? "" : "s");
        fputs(" by ", stdout);
        cli_print_safe(stdout, in->host[0] ? in->host : "?");
        printf(" pid %lld since %s", (long long)in->pid,
               cli_time(in->since_ms, when, sizeof(when)));
        if (in->ttl_ms >= 0)
            printf(", lease %lld ms left", (long long)in->ttl_ms);
        else
            printf(", lease unknown");
    }
    printf(", fence %llu\n", (unsigned long long)in->fence);
}

int cmd_status(const struct cli *c, int argc, char **argv)
{
    const char *name = NULL;
    dlock_store *store;
    dlock_info *info = NULL;
    int json = 0, rc;

    for (int i = 1; i < argc; i++) {
        if (cli_is(argv[i], "-h", "--help")) {
            fputs(help, stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--") == 0 && i + 1 < argc && !name) {
            name = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            cli_err("status: unknown option '%s'", cli_arg_shown(argv[i]));
            return EXIT_USAGE;
        } else if (name == NULL) {
            name = argv[i];
        } else {
            cli_err("status: one NAME only");
            return EXIT_USAGE;
        }
    }
    if (name == NULL) {
        fputs(help, stderr);
        return EXIT_USAGE;
    }
    rc = cli_open(c, &store);
    if (rc != 0)
        return rc;
    rc = dlock_status(&info, store, name);
    if (rc != DLOCK_OK) {
        rc = cli_fail(rc, "status");
    } else if (json) {
        cli_json_info(stdout, info);
        putchar('\n');
    } else {
        cli_print_info(info);
    }
    dlock_info_free(info);
    dlock_store_close(store);
    return rc;
}
