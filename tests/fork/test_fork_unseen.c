/*
 * test_fork_unseen.c - a child made without the fork handlers must not
 * release its parent's locks when it exits.
 *
 *   test_fork_unseen URL...
 *
 * _Fork() (glibc 2.34, POSIX.1-2024: the async-signal-safe fork) and a
 * raw clone() without CLONE_VM run no pthread_atfork handlers: the
 * child keeps its parent's generation and cached pid.  Such a child
 * that calls exit() (not _exit) runs the library's atexit handler, which
 * released every lock of "this process" through the parent's own
 * connections, and joined the parent's library threads, which do not
 * exist in the child (a hang).  The parent's lock must survive the
 * child's exit, and the exit must end.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define NAME "fork-unseen-job"
#define EXIT_BOUND_MS 20000

/* The child's exit status; -1 if it did not exit within EXIT_BOUND_MS
 * (then it is killed). */
static int reap_bounded(pid_t pid)
{
    int64_t until = now_ms() + EXIT_BOUND_MS;
    int st;

    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);

        if (w == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (w < 0 && errno != EINTR)
            return -2;
        if (now_ms() >= until) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return -1;
        }
        (void)poll(NULL, 0, 20);
    }
}

static pid_t fork_unseen(int how)
{
    if (how == 0)
        return _Fork();
    return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
}

static void one(const char *url, int how, int renew)
{
    static const char *const hows[] = {"_Fork", "clone"};
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s = NULL, *s2 = NULL;
    dlock_lock *lk = NULL, *other = NULL;
    unsigned removed = 0;
    int rc, st;
    pid_t c;

    printf("-- %.*s, %s, %s\n", (int)strcspn(url, ":"), url, hows[how],
           renew ? "auto-renewed" : "not renewed");
    fflush(stdout);
    o.ttl_ms = 60000;
    o.auto_renew = renew;
    CHECK(dlock_store_open(&s, url) == DLOCK_OK);
    CHECK(dlock_store_open(&s2, url) == DLOCK_OK);
    dlock_force_release(&removed, s, NAME);
    CHECK(dlock_acquire(&lk, s, NAME, &o) == DLOCK_OK);
    c = fork_unseen(how);
    if (c == 0)
        exit(0); /* atexit handlers run, as in any program's child */
    CHECK(c > 0);
    st = reap_bounded(c);
    if (st != 0) {
        fprintf(stderr, "  the child's exit() %s\n",
                st == -1 ? "hung (killed after 20 s)" : "failed");
        failures++;
    }
    o.wait_ms = 0;
    rc = dlock_acquire(&other, s2, NAME, &o);
    if (rc != DLOCK_BUSY) {
        fprintf(stderr,
                "  after the child's exit, another handle's try "
                "of the parent's lock: %s, want BUSY (the child "
                "released its parent's lock)\n",
                dlock_strerror(rc));
        failures++;
        if (rc == DLOCK_OK)
            dlock_release(other);
    }
    EXPECT(dlock_release(lk) == DLOCK_OK);
    dlock_force_release(&removed, s, NAME);
    dlock_store_close(s2);
    dlock_store_close(s);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '\0')
            continue;
        for (int how = 0; how < 2; how++)
            for (int renew = 0; renew < 2; renew++)
                one(argv[i], how, renew);
    }
    printf("%s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
