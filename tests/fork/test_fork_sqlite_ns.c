/*
 * test_fork_sqlite_ns.c - an SQLite holder forked into a new pid
 * namespace is alive to its parent.
 *
 *   test_fork_sqlite_ns sqlite:///PATH
 *
 * A process that used the store forks a child into a new pid namespace
 * (which keeps the parent's /proc mount); a grandchild there, pid 99991
 * of its namespace, takes `job` and holds it.  Its row must not name the
 * parent's namespace with the new namespace's pid (the parent would look
 * up pid 99991, find nothing and break a live lock: two holders).  Found
 * by the adversarial review of issue 33.  Root only (77 otherwise; a
 * failure under CI=true).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static int holder(const char *url, int ready, int go, int go_w)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s = NULL;
    dlock_lock *lk = NULL;
    char ok = 'n', c;

    o.ttl_ms = 60000;
    o.auto_renew = 0;
    if (dlock_store_open(&s, url) == DLOCK_OK &&
        dlock_acquire(&lk, s, "job", &o) == DLOCK_OK)
        ok = 'y';
    if (write(ready, &ok, 1) != 1)
        return 4;
    close(go_w);
    while (read(go, &c, 1) > 0)
        ;
    return ok == 'y' ? 0 : 5; /* _exit: no release */
}

static void parent(const char *url)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s = NULL;
    dlock_lock *lk = NULL, *warm = NULL;
    int ready[2], go[2], rc;
    char c = 0;
    pid_t mid;

    o.ttl_ms = 60000;
    o.auto_renew = 0;
    CHECK_RC(dlock_store_open(&s, url), DLOCK_OK);
    /* The store used (and the library's threads started) first. */
    CHECK_RC(dlock_acquire(&warm, s, "warm", &o), DLOCK_OK);
    CHECK_RC(dlock_release(warm), DLOCK_OK);
    CHECK(unshare(CLONE_NEWPID) == 0 && pipe(ready) == 0 && pipe(go) == 0);
    mid = fork();
    if (mid == 0) { /* pid 1 of the new namespace */
        int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY);
        pid_t d;

        /* Our own namespace's next pid (ns_last_pid is per namespace):
         * one the parent's /proc most likely does not show. */
        if (fd < 0 || write(fd, "99990", 5) != 5)
            _exit(3);
        close(fd);
        d = fork();
        if (d == 0)
            _exit(holder(url, ready[1], go[0], go[1]));
        close(go[0]);
        close(go[1]);
        while (waitpid(d, NULL, 0) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(go[0]);
    close(ready[1]);
    EXPECT(read(ready[0], &c, 1) == 1 && c == 'y');
    o.wait_ms = 0;
    rc = dlock_acquire(&lk, s, "job", &o);
    if (rc != DLOCK_BUSY) {
        fprintf(stderr,
                "  the parent's try while the child holds: %s, "
                "want BUSY\n",
                dlock_strerror(rc));
        failures++;
        if (rc == DLOCK_OK)
            dlock_release(lk);
    }
    close(go[1]);
    while (waitpid(mid, NULL, 0) < 0 && errno == EINTR)
        ;
}

int main(int argc, char **argv)
{
    const char *ci = getenv("CI");
    pid_t p;
    int st;

    if (argc != 2) {
        fprintf(stderr, "usage: test_fork_sqlite_ns sqlite:///PATH\n");
        return 2;
    }
    if (geteuid() != 0) {
        printf("SKIP: needs root for a new pid namespace\n");
        return ci != NULL && strcmp(ci, "true") == 0 ? 1 : 77;
    }
    /* In a child: a process that moved its children to a new pid
     * namespace can no longer start threads (LeakSanitizer's included). */
    p = fork();
    if (p == 0) {
        parent(argv[1]);
        _exit(failures == 0 ? 0 : 1);
    }
    if (p < 0 || waitpid(p, &st, 0) < 0)
        return 1;
    st = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    printf("%s\n", st == 0 ? "ok" : "FAILED");
    return st;
}
