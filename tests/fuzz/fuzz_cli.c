/* libFuzzer: `dlock run` argument parsing.  The input is split on NUL
 * bytes into argv.  The parser must not crash, and what it accepts must be
 * coherent: a name, a command, sane numbers. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1), *argv[66];
    struct run_opts o;
    int argc = 1, rc;
    size_t i = 0;

    if (buf == NULL)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[0] = "run";
    while (i <= size && argc < 64) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    memset(&o, 0, sizeof(o));
    cli_quiet = 1;
    rc = cli_run_parse(&o, argc, argv);
    if (rc == 0) {
        if (o.name == NULL || o.cmd == NULL || o.cmd[0] == NULL)
            abort();
        if (o.ttl_ms <= 0 || o.grace_ms < 0 ||
            (o.wait_ms < 0 && o.wait_ms != DLOCK_WAIT_FOREVER) ||
            o.conflict_code < 0 || o.conflict_code > 255)
            abort();
    }
    free(buf);
    return 0;
}
