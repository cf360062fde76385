/*
 * adv_move_lease.c - dlock_extend() to another TTL moves the holder's key
 * to a lease of that length (store.c move_lease).  When the handle
 * already has a lease of that length (another lock of that TTL), it is
 * taken as it is if its last refresh covers now + ttl less
 * ETCD_REUSE_SLACK_MS (up to 1 s): no keepalive is sent.  The core then
 * counts the lock's lease end from the extend's start + the new TTL,
 * which is up to a second later than etcd keeps the key.
 *
 * A child holds A (10 s) and B (5 s), waits 0.9 s, extends B to 10 s,
 * reports when its lease of B ends as it counts it (dlock_lease_left),
 * and stops itself (SIGSTOP: no renewal any more).  The parent waits for
 * B; it must not get B before the child's lease end: until then the child
 * believes it holds B (two holders).
 *
 *   adv_move_lease etcd://127.0.0.1:2379
 *
 * Exit 0 pass, 1 fail, 77 no URL (1 with CI=true).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"

static int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_until(int64_t t)
{
    int64_t left;

    while ((left = t - mono_ms()) > 0) {
        struct timespec ts = {(time_t)(left / 1000),
                              (long)(left % 1000) * 1000000L};

        nanosleep(&ts, NULL);
    }
}

static void child(const char *url, const char *na, const char *nb, int wfd)
{
    dlock_store *s = NULL;
    dlock_lock *a = NULL, *b = NULL;
    dlock_options oa = DLOCK_OPTIONS_INIT, ob = DLOCK_OPTIONS_INIT;
    int64_t t_a, msg[2] = {0, 0};

    if (dlock_store_open(&s, url) != DLOCK_OK) {
        fprintf(stderr, "child: open: %s\n", dlock_errmsg());
        _exit(2);
    }
    oa.ttl_ms = 10000;
    ob.ttl_ms = 5000;
    if (dlock_acquire(&a, s, na, &oa) != DLOCK_OK) {
        fprintf(stderr, "child: acquire %s: %s\n", na, dlock_errmsg());
        _exit(2);
    }
    t_a = mono_ms();
    if (dlock_acquire(&b, s, nb, &ob) != DLOCK_OK) {
        fprintf(stderr, "child: acquire %s: %s\n", nb, dlock_errmsg());
        _exit(2);
    }
    /* Let A's lease age (not a synchronisation: the age is the case). */
    sleep_until(t_a + 900);
    if (dlock_extend(b, 10000) != DLOCK_OK) {
        fprintf(stderr, "child: extend: %s\n", dlock_errmsg());
        _exit(2);
    }
    msg[0] = mono_ms();
    msg[1] = dlock_lease_left(b);
    if (write(wfd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
        _exit(2);
    raise(SIGSTOP); /* a holder that hangs: no renewal from here on */
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : getenv("DLOCK_TEST_ETCD_URL");
    const char *ci = getenv("CI");
    char na[64], nb[64];
    int p[2], st, fail = 0;
    int64_t msg[2], end, t_acq;
    struct pollfd pfd;
    pid_t pid;
    dlock_store *s = NULL;
    dlock_lock *b = NULL;
    dlock_options o = DLOCK_OPTIONS_INIT;
    int rc;

    if (url == NULL || *url == '\0') {
        fprintf(stderr, "no etcd URL (DLOCK_TEST_ETCD_URL)\n");
        return ci != NULL && strcmp(ci, "true") == 0 ? 1 : 77;
    }
    snprintf(na, sizeof(na), "adv-move-a-%ld", (long)getpid());
    snprintf(nb, sizeof(nb), "adv-move-b-%ld", (long)getpid());
    if (pipe(p) != 0)
        return 1;
    pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(p[0]);
        child(url, na, nb, p[1]);
    }
    close(p[1]);
    pfd.fd = p[0];
    pfd.events = POLLIN;
    if (poll(&pfd, 1, 30000) != 1 ||
        read(p[0], msg, sizeof(msg)) != (ssize_t)sizeof(msg)) {
        fprintf(stderr, "FAIL: the child did not report its lease end\n");
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return 1;
    }
    end = msg[0] + msg[1];
    printf("child extended %s to 10 s: its lease ends in %" PRId64
           " ms as it counts\n",
           nb, msg[1]);
    if (dlock_store_open(&s, url) != DLOCK_OK) {
        fprintf(stderr, "FAIL: open: %s\n", dlock_errmsg());
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return 1;
    }
    o.wait_ms = 30000;
    o.ttl_ms = 5000;
    rc = dlock_acquire(&b, s, nb, &o);
    t_acq = mono_ms();
    if (rc != DLOCK_OK) {
        fprintf(stderr, "FAIL: acquire %s: %s\n", nb, dlock_errmsg());
        fail = 1;
    } else if (t_acq < end) {
        printf("FAIL: two holders of %s for %" PRId64
               " ms: the parent got it while the stopped child still "
               "counted it as held\n",
               nb, end - t_acq);
        fail = 1;
    } else {
        printf("ok: the parent got %s %" PRId64
               " ms after the child's lease end\n",
               nb, t_acq - end);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    dlock_release(b);
    dlock_store_close(s);
    return fail;
}
