/*
 * kill_gate.c - an LD_PRELOAD shim for tests: a client's statement that
 * starts with "KILL" waits at a gate before it is sent.  With
 * DLOCK_TEST_KILL_GATE=DIR, the shim writes the statement to DIR/at_kill
 * (then renames it into place, so a reader never sees half of it) and
 * blocks reading the FIFO DIR/kill_go until the test writes a line to it.
 * Once the KILL has been answered, DIR/kill_done holds its result (0 or
 * the error number).  It stands for a contender stopped (SIGSTOP, a long pause)
 * between its decision to KILL a session and the KILL itself.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mysql.h>

typedef int (*query_fn)(MYSQL *, const char *, unsigned long);

__attribute__((visibility("default"))) int
mysql_real_query(MYSQL *db, const char *q, unsigned long len)
{
    static query_fn next;
    const char *dir = getenv("DLOCK_TEST_KILL_GATE");

    if (next == NULL)
        next = (query_fn)(void (*)(void))dlvsym(RTLD_NEXT, "mysql_real_query",
                                                "libmysqlclient_18");
    if (next == NULL)
        next = (query_fn)(void (*)(void))dlsym(RTLD_NEXT, "mysql_real_query");
    const char *on = getenv("DLOCK_TEST_GATE_ON");
    static int gated;
    size_t plen;

    if (on == NULL)
        on = "KILL";
    plen = strlen(on);
    /* KILL: a statement that starts with it; DLOCK_TEST_GATE_ON: one
     * that holds it anywhere (q is NUL-terminated: dlock's buffers). */
    if (dir != NULL && len >= plen &&
        (getenv("DLOCK_TEST_GATE_ON") == NULL ? strncmp(q, on, plen) == 0
                                              : strstr(q, on) != NULL) &&
        !(gated && getenv("DLOCK_TEST_GATE_ON") != NULL) &&
        !(getenv("DLOCK_TEST_GATE_NOT") != NULL &&
          strstr(q, getenv("DLOCK_TEST_GATE_NOT")) != NULL)) {
        gated = 1;
        char tmp[4096], path[4096], buf[16];
        FILE *f;
        int fd;

        snprintf(tmp, sizeof(tmp), "%s/at_kill.tmp", dir);
        snprintf(path, sizeof(path), "%s/at_kill", dir);
        f = fopen(tmp, "w");
        if (f != NULL) {
            fprintf(f, "%.*s\n", (int)len, q);
            fclose(f);
            rename(tmp, path);
        }
        snprintf(path, sizeof(path), "%s/kill_go", dir);
        fd = open(path, O_RDONLY);
        if (fd >= 0) {
            (void)!read(fd, buf, sizeof(buf));
            close(fd);
        }
        {
            int rc = next(db, q, len);

            snprintf(tmp, sizeof(tmp), "%s/kill_done.tmp", dir);
            snprintf(path, sizeof(path), "%s/kill_done", dir);
            f = fopen(tmp, "w");
            if (f != NULL) {
                fprintf(f, "%u\n", rc == 0 ? 0u : mysql_errno(db));
                fclose(f);
                rename(tmp, path);
            }
            return rc;
        }
    }
    return next(db, q, len);
}
