/*
 * wake.c - the SQLite store's wait: a waiter sleeps on a FIFO of its own
 * in a directory beside the database (PATH-wake), and a releaser writes
 * one byte into the oldest waiter's FIFO for the name after its commit.
 * The byte is a wake-up only (rule R1, docs/threat-model.md): the waiter
 * then takes the lock with its own transaction, and whatever the FIFO
 * holds (garbage included) means no more than "look again".  A wake-up
 * that never comes (a dead releaser, another user, another host on a
 * network file system, a directory that is not ours) costs only time:
 * the waiter still polls with the core's jittered backoff (1 ms doubling
 * to 50 ms).
 *
 * The directory is this user's: created 0700, and used only if it is a
 * directory (not a link), owned by our euid and not writable or readable
 * by anyone else; otherwise this handle has no wake-ups and polls.  A
 * waiter's FIFO is made under a temporary name, opened O_RDWR (so it
 * never reads end-of-file) and checked to be a FIFO of ours, then
 * renamed to NAMEHASH.TIME.PID.SEQ: a FIFO under its final name always
 * had a reader.  The releaser reads the directory, takes the smallest
 * (oldest) entry for the name's hash, opens it O_PATH|O_NOFOLLOW, checks
 * it is a FIFO owned by our euid, and only then reopens that very inode
 * (/proc/self/fd/N) O_WRONLY|O_NONBLOCK to write one byte: never a
 * regular file, a device or a link's target, and never blocked by a
 * reader that does not read.  ENXIO (no reader: the waiter died) unlinks
 * the entry and wakes the next one; so does a FIFO that holds an unread
 * byte (its reader has a wake-up, or never reads: it is skipped).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sq.h"

/* The longest poll between two attempts; tests set it (a waiter woken
 * only by a release). */
int64_t dlock__sq_poll_max_ms = 0;

#define WAKE_NAME_MAX 96
#define WAKE_TRIES 8 /* dead waiters skipped per release, at most */

struct sq_wait {
    int fd;                   /* our FIFO, O_RDWR; -1: polling only */
    char name[WAKE_NAME_MAX]; /* its entry in the wake directory */
    unsigned polls;           /* backoff step */
    int64_t next_try;         /* monotonic ms */
};

/* FNV-1a of the lock name: the prefix of its waiters' entries.  Two
 * names with one hash only wake each other's waiters for nothing. */
static void name_hash(const char *name, size_t len, char out[17])
{
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)name[i];
        h *= 1099511628211ULL;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* The wake directory's descriptor, opened once per handle (connection
 * held); -1 when this handle has none. */
static int wake_dir(struct sqlite_store *ss)
{
    char p[4200];
    struct stat st;
    int fd;

    if (ss->wake_dir != -2)
        return ss->wake_dir;
    ss->wake_dir = -1;
    if ((size_t)snprintf(p, sizeof(p), "%s-wake", ss->path) >= sizeof(p))
        return -1;
    if (mkdir(p, 0700) != 0 && errno != EEXIST)
        return -1;
    fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0) {
        close(fd);
        return -1;
    }
    ss->wake_dir = fd;
    return fd;
}

/* One byte into a FIFO whose reader may close it right now: the EPIPE
 * must not end the host program with SIGPIPE (R14).  SIGPIPE is blocked
 * on this thread for the write, and one the write raised is taken off
 * again; one that was pending before, or that someone else sent
 * meanwhile, is left or put back (src/stores/redis/link.c does the
 * same).  1 if the waiter has a wake-up (a full pipe has one pending),
 * else 0. */
static int write_nopipe(int fd)
{
    sigset_t pipe, old, pend;
    int was, ok;
    ssize_t n;

    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pend);
    was = sigismember(&pend, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    n = write(fd, "w", 1);
    ok = n == 1 || (n < 0 && errno == EAGAIN);
    sigpending(&pend);
    if (!was && sigismember(&pend, SIGPIPE) == 1) {
        struct timespec zero = {0, 0};
        siginfo_t si;

        memset(&si, 0, sizeof(si));
        if (sigtimedwait(&pipe, &si, &zero) == SIGPIPE &&
            !(si.si_code == SI_USER && si.si_pid == getpid())) {
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            if (syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid),
                        SIGPIPE, &si) != 0)
                (void)kill(getpid(), SIGPIPE);
            return ok;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ok;
}

/* Write one byte into entry NAME of the directory if it is a FIFO of
 * ours with a reader: 1 if woken, 0 if not (skip it), -1 if its reader
 * is gone (unlink it). */
static int wake_entry(int dir, const char *name)
{
    char self[64];
    struct stat st;
    int pfd, fd, rc, pending = 0;

    pfd = openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (pfd < 0)
        return 0;
    if (fstat(pfd, &st) != 0 || !S_ISFIFO(st.st_mode) ||
        st.st_uid != geteuid()) {
        close(pfd);
        return 0;
    }
    snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
    fd = open(self, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    close(pfd);
    if (fd < 0)
        return errno == ENXIO ? -1 : 0;
    /* A wake-up still unread: its reader has one to act on already, or
     * never reads (a dead waiter's FIFO that a fork child holds open, a
     * pipe that garbage filled).  Either way one more byte tells no one
     * anything: wake the next waiter instead. */
    if (ioctl(fd, FIONREAD, &pending) == 0 && pending > 0) {
        close(fd);
        return 0;
    }
    rc = write_nopipe(fd);
    close(fd);
    return rc;
}

void dlock__sq_wake(struct sqlite_store *ss, const char *name, size_t len)
{
    char hash[17], done[WAKE_NAME_MAX] = "";
    int dir = wake_dir(ss);
    DIR *d;
    int dfd;

    if (dir < 0)
        return;
    name_hash(name, len, hash);
    dfd = dup(dir);
    if (dfd < 0)
        return;
    d = fdopendir(dfd);
    if (d == NULL) {
        close(dfd);
        return;
    }
    for (int tries = 0; tries < WAKE_TRIES; tries++) {
        char best[WAKE_NAME_MAX] = "";
        struct dirent *e;
        int r;

        rewinddir(d);
        while ((e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, hash, 16) != 0 || e->d_name[16] != '.' ||
                strlen(e->d_name) >= WAKE_NAME_MAX)
                continue;
            if (strcmp(e->d_name, done) > 0 &&
                (best[0] == '\0' || strcmp(e->d_name, best) < 0))
                dlock__strlcpy(best, e->d_name, sizeof(best));
        }
        if (best[0] == '\0')
            break;
        r = wake_entry(dir, best);
        if (r > 0)
            break;
        if (r < 0)
            (void)unlinkat(dir, best, 0);
        dlock__strlcpy(done, best, sizeof(done));
    }
    closedir(d);
}

/* Our FIFO, under its final name (connection held): w->fd stays -1 when
 * the directory or the FIFO cannot be had. */
static void wait_register(struct sqlite_store *ss, const struct dlock_lock *lk,
                          struct sq_wait *w)
{
    static atomic_uint seq;
    char hash[17], tmp[64];
    struct timespec ts;
    struct stat st;
    int dir = wake_dir(ss), fd;
    unsigned n = atomic_fetch_add(&seq, 1) + 1;

    if (dir < 0)
        return;
    name_hash(lk->name, lk->name_len, hash);
    clock_gettime(CLOCK_BOOTTIME, &ts);
    snprintf(tmp, sizeof(tmp), "t.%lld.%u", (long long)dlock__pid(), n);
    /* Host boot clock in ns, 20 digits: oldest first by name. */
    snprintf(w->name, sizeof(w->name), "%s.%020lld.%lld.%u", hash,
             (long long)((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec -
                         ss->id.boot_off_ns),
             (long long)dlock__pid(), n);
    (void)unlinkat(dir, tmp, 0);
    if (mkfifoat(dir, tmp, 0600) != 0)
        return;
    fd = openat(dir, tmp, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) ||
        st.st_uid != geteuid() || renameat(dir, tmp, dir, w->name) != 0) {
        if (fd >= 0)
            close(fd);
        (void)unlinkat(dir, tmp, 0);
        return;
    }
    w->fd = fd;
}

static void wait_free(struct sqlite_store *ss, struct dlock_lock *lk)
{
    struct sq_wait *w = lk->priv;

    if (w == NULL)
        return;
    if (w->fd >= 0) {
        (void)unlinkat(ss->wake_dir, w->name, 0);
        close(w->fd);
    }
    free(w);
    lk->priv = NULL;
}

int dlock__sq_forget(struct dlock_store *st, struct dlock_lock *lk)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;

    dlock__sq_lock(ss, dlock__sq_deadline(ss));
    wait_free(ss, lk);
    dlock__sq_unlock(ss);
    return DLOCK_OK;
}

/* A fork child's copy: close our descriptor, leave the parent's entry. */
void dlock__sq_forget_inherited(struct dlock_store *st, struct dlock_lock *lk)
{
    struct sq_wait *w = lk->priv;

    (void)st;
    if (w != NULL && w->fd >= 0)
        close(w->fd);
    free(w);
    lk->priv = NULL;
}

static int64_t poll_delay(unsigned polls)
{
    int64_t d = dlock__backoff_ms(polls, dlock__rand32());

    return dlock__sq_poll_max_ms > 0 ? dlock__sq_poll_max_ms : d;
}

/* Read whatever is in the FIFO: its contents mean nothing. */
static void drain(int fd)
{
    char buf[512];

    for (int i = 0; i < 256 && read(fd, buf, sizeof(buf)) > 0; i++)
        ;
}

int dlock__sq_wait_slice(struct dlock_store *st, struct dlock_lock *lk,
                         int64_t slice_ms, int64_t *retry_ms)
{
    struct sqlite_store *ss = (struct sqlite_store *)st;
    int64_t end = dlock__now_ms() + slice_ms;
    struct sq_wait *w = lk->priv;
    int rc, woken = 0;

    if (w == NULL) {
        w = calloc(1, sizeof(*w));
        if (w == NULL)
            return dlock__enomem();
        w->fd = -1;
        lk->priv = w;
        dlock__sq_lock(ss, dlock__sq_deadline(ss));
        wait_register(ss, lk, w);
        dlock__sq_unlock(ss);
        /* A release between the core's attempt and our FIFO woke no one:
         * look again now that a release would wake us. */
        w->next_try = 0;
    }
    for (;;) {
        int64_t now = dlock__now_ms(), t;
        struct pollfd p[2];
        int np = 0;

        if (woken || now >= w->next_try) {
            int64_t retry = -1;

            lk->lease_end = now + lk->ttl_ms;
            rc = dlock__sq_try_acquire(st, lk, end > now + 50 ? end : now + 50,
                                       &retry);
            if (rc != DLOCK_BUSY) {
                if (rc == DLOCK_OK) {
                    dlock__sq_lock(ss, dlock__sq_deadline(ss));
                    wait_free(ss, lk);
                    /* Room for more than us: pass the wake-up on. */
                    if (lk->shared || lk->limit > 1)
                        dlock__sq_wake(ss, lk->name, lk->name_len);
                    dlock__sq_unlock(ss);
                }
                return rc;
            }
            *retry_ms = retry;
            now = dlock__now_ms();
            if (woken)
                w->polls = 0;
            w->next_try = now + poll_delay(w->polls++);
            if (retry >= 0 && now + retry + 1 < w->next_try)
                w->next_try = now + retry + 1;
            woken = 0;
        }
        if (now >= end || dlock__cancelled())
            return DLOCK_BUSY;
        t = (w->next_try < end ? w->next_try : end) - now;
        if (w->fd >= 0) {
            p[np].fd = w->fd;
            p[np++].events = POLLIN;
        }
        if (dlock__cancel_fd() >= 0) {
            p[np].fd = dlock__cancel_fd();
            p[np++].events = POLLIN;
        }
        if (poll(p, (nfds_t)np, (int)(t > 60000 ? 60000 : t)) > 0 &&
            w->fd >= 0 && (p[0].revents & POLLIN)) {
            drain(w->fd);
            woken = 1;
        }
    }
}
