/*
 * test_fork_identity.c - a pid is not a process's identity.
 *
 *   test_fork_identity URL...
 *
 * A process that is pid 1 of its pid namespace (a container's entry
 * point) forks a child into a new pid namespace: the child is pid 1 too.
 * It must not hand out its parent's next token (a token is what makes a
 * holder "the owner"), and a lock the child took must not look like the
 * parent's own.  Needs root (CLONE_NEWPID); skips with 77 otherwise,
 * fails under CI=true.
 */

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "random.h"

/* Fork a child that is pid 1 of a new pid namespace; in the child, run
 * fn(arg, fd) with the write end of a pipe and _exit with its result.
 * Returns the child's pid (read end in *rd), -1 on error. */
static pid_t fork_pid1(int (*fn)(void *, int), void *arg, int *rd)
{
    int p[2];
    pid_t pid;

    if (unshare(CLONE_NEWPID) != 0 || pipe(p) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        close(p[0]);
        _exit(fn(arg, p[1]));
    }
    close(p[1]);
    *rd = p[0];
    return pid;
}

static int reap(pid_t pid)
{
    int st;

    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int child_token(void *arg, int fd)
{
    char tok[DLOCK_TOKEN_HEX + 1];

    (void)arg;
    if (getpid() != 1 || dlock__token(tok) != DLOCK_OK)
        return 2;
    return write(fd, tok, sizeof(tok)) == (ssize_t)sizeof(tok) ? 0 : 3;
}

/* In a pid 1: the next token of a child that is pid 1 too is never ours. */
static void tokens(void)
{
    char mine[DLOCK_TOKEN_HEX + 1], theirs[DLOCK_TOKEN_HEX + 1] = "";
    int rd = -1;
    pid_t c;

    CHECK(getpid() == 1);
    CHECK(dlock__token(mine) == DLOCK_OK); /* fills this thread's pool */
    c = fork_pid1(child_token, NULL, &rd);
    CHECK(c > 0);
    EXPECT(read(rd, theirs, sizeof(theirs)) == (ssize_t)sizeof(theirs));
    close(rd);
    EXPECT(reap(c) == 0);
    CHECK(dlock__token(mine) == DLOCK_OK);
    if (strcmp(mine, theirs) == 0) {
        fprintf(stderr,
                "  the child (pid 1 too) handed out its parent's "
                "next token %s\n",
                mine);
        failures++;
    }
}

/* The child takes `job` and keeps it (and its store's session) until the
 * parent closes the go pipe, then exits without releasing. */
static int go[2] = {-1, -1};

static int child_takes(void *arg, int fd)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s = NULL;
    dlock_lock *lk = NULL;
    char ok = 'y';

    o.ttl_ms = 60000;
    o.auto_renew = 0;
    if (getpid() != 1 || dlock_store_open(&s, arg) != DLOCK_OK ||
        dlock_acquire(&lk, s, "fork-identity-job", &o) != DLOCK_OK)
        ok = 'n';
    if (write(fd, &ok, 1) != 1)
        _exit(3);
    close(go[1]);
    while (read(go[0], &ok, 1) > 0)
        ;
    _exit(ok == 'n' ? 2 : 0); /* no release, no atexit */
}

/* A lock the pid-1 child holds is not the pid-1 parent's. */
static void held_by_child(const char *url)
{
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_store *s = NULL;
    dlock_lock *other = NULL, *lk = NULL;
    unsigned removed = 0;
    char ok = 0;
    int rd = -1, rc;
    pid_t c;

    printf("-- %.*s\n", (int)strcspn(url, ":"), url);
    o.ttl_ms = 60000;
    o.auto_renew = 0;
    CHECK(dlock_store_open(&s, url) == DLOCK_OK);
    dlock_force_release(&removed, s, "fork-identity-job");
    /* A lock of our own first: this thread's token pool is filled. */
    CHECK(dlock_acquire(&other, s, "fork-identity-other", &o) == DLOCK_OK);
    CHECK(pipe(go) == 0);
    c = fork_pid1(child_takes, (void *)url, &rd);
    CHECK(c > 0);
    close(go[0]);
    EXPECT(read(rd, &ok, 1) == 1 && ok == 'y');
    close(rd);
    o.wait_ms = 0;
    rc = dlock_acquire(&lk, s, "fork-identity-job", &o);
    if (rc != DLOCK_BUSY) {
        fprintf(stderr,
                "  try of a name the child holds: %s, want BUSY "
                "(fence %llu)\n",
                dlock_strerror(rc), (unsigned long long)dlock_fence(lk));
        failures++;
        dlock_release(lk);
    }
    close(go[1]);
    EXPECT(reap(c) == 0);
    EXPECT(dlock_release(other) == DLOCK_OK);
    dlock_force_release(&removed, s, "fork-identity-job");
    dlock_store_close(s);
}

static int run_tokens(void *arg, int fd)
{
    (void)arg;
    (void)fd;
    tokens();
    return failures == 0 ? 0 : 1;
}

static int run_store(void *arg, int fd)
{
    (void)fd;
    held_by_child(arg);
    return failures == 0 ? 0 : 1;
}

/* Each case in a pid 1 of its own, made by a plain child (a process may
 * move its children into a new pid namespace only once, and one that
 * has can no longer start threads: the lock is taken before, as a
 * container's entry point would). */
static int in_pid1(int (*fn)(void *, int), void *arg)
{
    pid_t mid = fork();

    if (mid == 0) {
        int rd = -1;
        pid_t c = fork_pid1(fn, arg, &rd);

        if (c < 0) {
            fprintf(stderr, "cannot make a pid namespace: %s\n",
                    strerror(errno));
            _exit(1);
        }
        close(rd);
        _exit(reap(c));
    }
    return mid < 0 ? 1 : reap(mid);
}

int main(int argc, char **argv)
{
    const char *ci = getenv("CI");
    int rc = 0;

    if (geteuid() != 0) {
        printf("SKIP: needs root for new pid namespaces\n");
        return ci != NULL && strcmp(ci, "true") == 0 ? 1 : 77;
    }
    rc |= in_pid1(run_tokens, NULL);
    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '\0')
            rc |= in_pid1(run_store, argv[i]);
    printf("%s\n", rc == 0 ? "ok" : "FAILED");
    return rc == 0 ? 0 : 1;
}
