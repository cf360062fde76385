/*
 * metrics_driver.c - record one run in a metrics file, as `dlock run
 * --metrics-file` does, from the command line (tests/runs/test_metrics.sh):
 *   dlock-metrics-driver PATH NAME [KEY=VALUE...]
 * KEYs: the fields of struct cli_run_report (src/cli/cli.h): start_ms,
 * end_ms, waited_ms, ran, skipped, exited, status, signaled, sig, lost.
 * Exit 0 when recorded, 1 if not (the reason on stderr), 64 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

int main(int argc, char **argv)
{
    struct cli_run_report r;

    memset(&r, 0, sizeof(r));
    if (argc < 3) {
        fprintf(stderr, "usage: %s PATH NAME [KEY=VALUE...]\n", argv[0]);
        return 64;
    }
    r.name = argv[2];
    for (int i = 3; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        long long v;
        char *end;

        if (eq == NULL)
            goto usage;
        v = strtoll(eq + 1, &end, 10);
        if (*end != '\0' || end == eq + 1)
            goto usage;
#define KEY(k, field)                                                          \
    if (strncmp(argv[i], k "=", strlen(k) + 1) == 0) {                         \
        r.field = v;                                                           \
        continue;                                                              \
    }
        KEY("start_ms", start_ms)
        KEY("end_ms", end_ms)
        KEY("waited_ms", waited_ms)
        KEY("ran", ran)
        KEY("skipped", skipped)
        KEY("exited", exited)
        KEY("status", status)
        KEY("signaled", signaled)
        KEY("sig", sig)
        KEY("lost", lost)
#undef KEY
    usage:
        fprintf(stderr, "%s: bad argument '%s'\n", argv[0], argv[i]);
        return 64;
    }
    return cli_metrics_record(argv[1], &r) == 0 ? 0 : 1;
}
