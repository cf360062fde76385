/*
 * run_procs.c - the processes CMD started, found as dlock's descendants
 * in /proc (dlock is their subreaper): signalled with CMD, killed and
 * reaped once CMD has exited without the lock.  Never a stranger's
 * process: each signal goes through a pidfd checked against its parent.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

/* --- what CMD started ------------------------------------------------
 *
 * dlock is a child subreaper (PR_SET_CHILD_SUBREAPER, set before CMD is
 * started): a process CMD starts stays in dlock's tree of descendants
 * whatever it does (daemonises with a double fork, setsid(), leaves its
 * process group), since an orphan is reparented to dlock, not to init.
 * So "every process CMD started" is "every descendant of dlock", which
 * /proc tells: when the lock is lost each gets the signal CMD gets, and
 * once CMD has exited every one left is killed and reaped before dlock
 * exits.  Not covered: a process started through a daemon outside the
 * tree (systemd-run, at, ssh) and, if dlock itself is killed by SIGKILL,
 * what CMD started (CMD itself dies by PR_SET_PDEATHSIG). */

struct proc {
    pid_t pid, ppid;
    char state;
};

/* pid's parent and state from /proc/<pid>/stat ("pid (comm) S ppid ...":
 * comm may hold anything, ')' too, so the fields after the last ')').
 * 0, or -1 if pid is gone. */
static int read_stat(pid_t pid, pid_t *ppid, char *state)
{
    char path[64], buf[512], *p;
    int fd;
    ssize_t len;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    len = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
        return -1;
    *state = p[2];
    *ppid = (pid_t)strtol(p + 4, NULL, 10);
    return 0;
}

/* Every process.  Returns the count, or -1 when /proc cannot be read. */
static int read_procs(struct proc **out)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    struct proc *v = NULL;
    size_t n = 0, cap = 0;

    *out = NULL;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        long pid = atol(e->d_name);

        if (pid <= 0)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 256;
            struct proc *nv = realloc(v, nc * sizeof(*v));

            if (nv == NULL)
                break;
            v = nv;
            cap = nc;
        }
        v[n].pid = (pid_t)pid;
        if (read_stat(v[n].pid, &v[n].ppid, &v[n].state) == 0)
            n++; /* else gone meanwhile */
    }
    closedir(d);
    *out = v;
    return (int)n;
}

/* The parent of pid now (0 if it is gone). */
static pid_t parent_of(pid_t pid)
{
    pid_t ppid;
    char state;

    return read_stat(pid, &ppid, &state) == 0 ? ppid : 0;
}

/* sig to pid, which /proc showed as a child of ppid.  Through a pidfd
 * where the kernel has them, checked to be that same process still (a
 * descendant's child may have been reaped by it and its pid reused by
 * a process that is not ours): never a stranger's process. */
static void signal_proc(pid_t pid, pid_t ppid, int sig)
{
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);

    if (fd >= 0) {
        if (parent_of(pid) == ppid)
            (void)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
        close(fd);
        return;
    }
    if (errno != ENOSYS)
        return; /* gone */
#endif
    if (parent_of(pid) == ppid)
        (void)kill(pid, sig);
}

/* sig to every living descendant of root, but skip and the members of
 * group skip_group (signalled already; 0: none).  Returns how many
 * living descendants there were (skipped ones included). */
static int signal_under(pid_t root, int sig, pid_t skip, pid_t skip_group)
{
    struct proc *v;
    int n = read_procs(&v), alive = 0;
    pid_t self = root;
    unsigned char *mine;

    if (n <= 0) {
        free(v);
        return 0;
    }
    mine = calloc((size_t)n, 1);
    if (mine == NULL) {
        free(v);
        return 0;
    }
    /* The descendants of self: whose parent is self or one of them,
     * marked until a pass adds none. */
    for (int added = 1; added;) {
        added = 0;
        for (int i = 0; i < n; i++) {
            if (mine[i] || v[i].pid == self)
                continue;
            int under = v[i].ppid == self;

            for (int j = 0; !under && j < n; j++)
                under = mine[j] && v[j].pid == v[i].ppid;
            if (under) {
                mine[i] = 1;
                added = 1;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (!mine[i] || v[i].state == 'Z' || v[i].state == 'X')
            continue;
        alive++;
        if (v[i].pid == skip ||
            (skip_group > 0 && getpgid(v[i].pid) == skip_group))
            continue;
        signal_proc(v[i].pid, v[i].ppid, sig);
    }
    free(mine);
    free(v);
    return alive;
}

/* sig to every living descendant of dlock, but CMD (skip) and the
 * members of group skip_group. */
static int signal_descendants(int sig, pid_t skip, pid_t skip_group)
{
    return signal_under(getpid(), sig, skip, skip_group);
}

/* The --health-cmd running now (0: none), and its status once reaped
 * (run_reap_children()); started and judged by run_elect.c.  Here, not
 * there: this file reaps, and run_elect.c kills with run_kill_tree(). */
pid_t run_health_pid;
int run_health_status = -1;

/* Reap every child of dlock that has exited (orphans reparented to it
 * included); returns child if CMD was among them, its status in
 * *status. */
pid_t run_reap_children(pid_t child, int *status)
{
    pid_t w, got = 0;
    int st;

    while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
        if (w == child) {
            *status = st;
            got = child;
        } else if (w == run_health_pid) {
            run_health_status = st;
        }
    }
    return got;
}

/* CMD has exited and the lock is lost: SIGKILL every descendant left,
 * again (a process may fork while it is being killed, and a killed
 * parent's children come to dlock) until none is alive, reaping them.
 * Ends by `deadline` all the same (a process in uninterruptible I/O dies
 * when that I/O ends), saying how many were left. */
void run_kill_descendants(int rfd, int64_t deadline)
{
    int status;

    for (;;) {
        int alive = signal_descendants(SIGKILL, 0, 0);
        int64_t now = run_now_ms();
        struct pollfd p = {rfd, POLLIN, 0};
        unsigned char buf[64];

        (void)run_reap_children(0, &status);
        if (alive == 0)
            return;
        if (now >= deadline) {
            cli_warn("run: %d process(es) the command started did not die "
                     "of SIGKILL in time (uninterruptible I/O?)",
                     alive);
            return;
        }
        /* A child's exit wakes this (SIGCHLD on the self-pipe); a
         * grandchild's does not: look again every 20 ms. */
        (void)poll(&p, 1, deadline - now < 20 ? (int)(deadline - now) : 20);
        while (read(rfd, buf, sizeof(buf)) > 0)
            ;
    }
}

/* SIGKILL child (a --health-cmd that overran its interval) and every
 * process under it: stopped first, from child down, so that none is
 * reparented (to dlock, a subreaper) between the walk and its signal,
 * and none forks meanwhile.  Killing only the shell left what it ran
 * (`sleep 100; true`) running for as long as dlock led. */
void run_kill_tree(pid_t child)
{
    (void)kill(child, SIGSTOP);
    (void)signal_under(child, SIGSTOP, 0, 0);
    (void)signal_under(child, SIGKILL, 0, 0);
    (void)kill(child, SIGKILL);
}

/* Signal CMD: its process group when it has one of its own, else CMD
 * alone (it shares ours, the terminal's); and every other process CMD
 * started, wherever it went (its own session, another group). */
void run_signal_cmd(pid_t child, int sig)
{
    pid_t group = getpgid(child) == child ? child : 0;

    if (group > 0)
        (void)kill(-child, sig);
    else
        (void)kill(child, sig);
    (void)signal_descendants(sig, child, group);
}
