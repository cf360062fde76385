/*
 * holder.c - the holder a row names: this process's identity and clock,
 * written into the rows it takes (boot id, pid namespace, start time, the
 * host's CLOCK_BOOTTIME), and whether the holder of another row is gone
 * for good (store.c's header comment says when a row may be taken).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sq.h"

/* PROC_TIME_INIT_INO: the initial time namespace, whose offsets are 0. */
#define INIT_TIME_NS "time:[4026531834]"

/* This process's CLOCK_BOOTTIME offset from the host's (the initial time
 * namespace's).  1 and *off_ns, or 0 if it cannot be told. */
static int read_boot_offset(int64_t *off_ns)
{
    char ns[64], kids[64], line[128];
    ssize_t n, k;
    int found = 0;
    FILE *f;

    n = readlink("/proc/self/ns/time", ns, sizeof(ns) - 1);
    if (n < 0) {
        /* /proc is there but the kernel has no time namespaces: one
         * clock for all. */
        if (errno == ENOENT && access("/proc/self/ns/pid", F_OK) == 0) {
            *off_ns = 0;
            return 1;
        }
        return 0;
    }
    ns[n] = '\0';
    if (strcmp(ns, INIT_TIME_NS) == 0) {
        *off_ns = 0;
        return 1;
    }
    /* timens_offsets shows the namespace our children get: ours only if
     * we have not unshared a new one without entering it. */
    k = readlink("/proc/self/ns/time_for_children", kids, sizeof(kids) - 1);
    if (k != n || memcmp(ns, kids, (size_t)n) != 0)
        return 0;
    f = fopen("/proc/self/timens_offsets", "re");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        char name[32];
        long long sec, nsec;

        /* "boottime SEC NSEC" (kernels before 5.6's final release: the
         * clock's number, 7). */
        if (sscanf(line, "%31s %lld %lld", name, &sec, &nsec) == 3 &&
            (strcmp(name, "boottime") == 0 || strcmp(name, "7") == 0) &&
            sec > -(INT64_MAX / 1000000000 - 1) &&
            sec < INT64_MAX / 1000000000 - 1 && nsec >= 0 &&
            nsec < 1000000000) {
            *off_ns = (int64_t)sec * 1000000000 + nsec;
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* What /proc/PID/stat says of a process. */
enum { P_UNKNOWN, P_GONE, P_ZOMBIE, P_START };

/* Field 22 (starttime, clock ticks since boot as the READER's time
 * namespace counts them) into *start. */
static int proc_stat(const char *path, long long *start)
{
    char buf[1024], *p;
    char state = 0;
    ssize_t n;
    int fd;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ESRCH ? P_GONE : P_UNKNOWN;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return n == 0 ? P_GONE : P_UNKNOWN;
    buf[n] = '\0';
    /* The command name (field 2) may contain anything, even ") ": skip
     * to the last ')'. */
    p = strrchr(buf, ')');
    if (p == NULL ||
        sscanf(p + 1,
               " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
               "%*s %*s %*s %*s %*s %*s %lld",
               &state, start) != 2)
        return P_UNKNOWN;
    return state == 'Z' || state == 'X' ? P_ZOMBIE : P_START;
}

/* A start time read in our namespace, on the host's boot clock.  With an
 * offset that is not a whole number of ticks the kernel's rounding can
 * leave it one tick off: compare with same_start(). */
static long long host_ticks(const struct ident *id, long long ticks)
{
    int64_t off = id->boot_off_ns / id->tick_ns;

    if (id->boot_off_ns % id->tick_ns < 0)
        off--; /* floor */
    return ticks - off;
}

static int same_start(long long a, long long b)
{
    return a - b <= 1 && b - a <= 1;
}

/* A start time (host ticks) that can be true: not after now.  The kernel
 * adds the reader's boottime offset to a start time in unsigned 64-bit
 * arithmetic: with a negative offset (a clock set back, as CRIU restores
 * do) a process that started before the namespace's zero shows a wrapped,
 * huge starttime, which says nothing about that process. */
static int start_possible(const struct ident *id, long long host_start)
{
    struct timespec ts;
    int64_t now_ns;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    now_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - id->boot_off_ns;
    return host_start >= 0 && host_start <= now_ns / id->tick_ns + 1;
}

/* Is /proc the mount of our own pid namespace?  NSpid in /proc/self/status
 * lists our pid in every namespace from the one of that /proc down to
 * ours: exactly one number, our getpid(), only if they are the same.
 * Comparing readlink("/proc/self") with getpid() is not enough: in a
 * child namespace a process can have the same number in both (by chance,
 * or by ns_last_pid), and /proc/PID then is another process.  Without
 * NSpid (Linux before 4.1) we cannot tell: 0. */
static int proc_is_ours(void)
{
    char line[256], extra[2];
    long long only;
    int ours = 0;
    FILE *f = fopen("/proc/self/status", "re");

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "NSpid:", 6) != 0)
            continue;
        ours = sscanf(line + 6, "%lld %1s", &only, extra) == 1 &&
               only == (long long)getpid();
        break;
    }
    fclose(f);
    return ours;
}

/* Fill id for this process.  0, or -1 if it cannot tell its clock from
 * the host's (the caller refuses the store). */
int dlock__sq_ident_read(struct ident *id)
{
    long hz = sysconf(_SC_CLK_TCK);
    long long start;
    ssize_t n;
    FILE *f;

    memset(id, 0, sizeof(*id));
    id->tick_ns = 1000000000LL / (hz > 0 && hz <= 1000000000 ? hz : 100);
    if (!read_boot_offset(&id->boot_off_ns))
        return -1;
    f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f != NULL) {
        if (fgets(id->boot_id, sizeof(id->boot_id), f) == NULL)
            id->boot_id[0] = '\0';
        id->boot_id[strcspn(id->boot_id, "\n")] = '\0';
        fclose(f);
    }
    /* "unknown" is what 0.2 wrote without /proc: never a boot id. */
    id->boot_known =
        id->boot_id[0] != '\0' && strcmp(id->boot_id, "unknown") != 0;
    if (!id->boot_known)
        dlock__strlcpy(id->boot_id, "unknown", sizeof(id->boot_id));
    n = readlink("/proc/self/ns/pid", id->pid_ns, sizeof(id->pid_ns) - 1);
    id->pid_ns[n > 0 ? n : 0] = '\0';
    /* /proc may be the mount of another pid namespace (a container's
     * /proc seen from outside, `unshare -p` or `nsenter -p` without a new
     * /proc): then /proc/PID is some other process, and only kill() can
     * look. */
    id->proc_ours = proc_is_ours();
    if (id->proc_ours && proc_stat("/proc/self/stat", &start) == P_START &&
        start_possible(id, host_ticks(id, start)))
        id->start = host_ticks(id, start);
    return 0;
}

/* The host's CLOCK_BOOTTIME in ms: ours less our namespace's offset. */
int64_t dlock__sq_host_ms(const struct ident *id)
{
    struct timespec ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - id->boot_off_ns) /
           1000000;
}

/* The limit a holder in the current row of Q_HOLDERS asked.  A value
 * dlock could not have written (planted, or garbage) counts as 1: the
 * strictest reading, and a mismatch for any semaphore. */
unsigned dlock__sq_row_limit(sqlite3_stmt *s)
{
    sqlite3_int64 v = sqlite3_column_int64(s, 9);

    return sqlite3_column_type(s, 9) == SQLITE_INTEGER && v >= 1 &&
                   v <= DLOCK_LIMIT_MAX
               ? (unsigned)v
               : 1;
}

/* How many threads /proc/PID/status counts (a zombie leader counts
 * itself), or -1 if it cannot be read. */
static long proc_threads(long long pid)
{
    char path[64], line[256];
    long threads = -1;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%lld/status", pid);
    f = fopen(path, "re");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "Threads: %ld", &threads) == 1)
            break;
    fclose(f);
    return threads;
}

/* Is the holder (pid, recorded start time) of a row from our host and
 * pid namespace gone for good?  Only on proof: kill() answering ESRCH, or
 * a /proc of our namespace showing a zombie or another process under
 * that pid.  Anything else (EPERM: alive, another user's; a /proc entry
 * hidden by hidepid, or unreadable; a sandbox refusing kill()) keeps the
 * holder. */
static int holder_gone(const struct ident *id, long long pid, long long start)
{
    char path[64];
    long long now_start;

    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    if (!id->proc_ours)
        return 0;
    snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
    switch (proc_stat(path, &now_start)) {
    case P_ZOMBIE:
        /* The thread group leader is a zombie: the whole process, unless
         * its main thread ended (pthread_exit) while others run on, one
         * of them perhaps holding the lock. */
        return proc_threads(pid) == 1;
    case P_START:
        /* A start time of 0 or less: the holder could not read its own,
         * nothing to compare; nor with one /proc shows wrapped. */
        return start > 0 && start_possible(id, host_ticks(id, now_start)) &&
               !same_start(host_ticks(id, now_start), start);
    default:
        /* Gone from /proc although kill() found it: hidden from us, or
         * it died a moment ago (the next look proves it). */
        return 0;
    }
}

/* Is the holder in the current row of Q_HOLDERS gone for good?  now is
 * the host's boot clock (dlock__sq_host_ms()). */
int dlock__sq_row_dead(const struct ident *id, sqlite3_stmt *s, int64_t now)
{
    const char *boot = (const char *)sqlite3_column_text(s, 3);
    const char *host = (const char *)sqlite3_column_text(s, 4);
    const char *ns = (const char *)sqlite3_column_text(s, 7);
    long long pid = sqlite3_column_int64(s, 5);

    /* An earlier boot only if both boot ids are known and differ: a
     * process that could not read its own wrote "unknown" (or, planted,
     * nothing), and one that cannot read ours cannot compare. */
    if (id->boot_known && boot != NULL && boot[0] != '\0' &&
        strcmp(boot, "unknown") != 0 && strcmp(boot, id->boot_id) != 0)
        return 1; /* left by an earlier boot */
    if (sqlite3_column_type(s, 2) != SQLITE_INTEGER ||
        sqlite3_column_int64(s, 2) <= now)
        return 1; /* lease ran out, or not a lease at all */
    if (sqlite3_column_int64(s, 2) > now + 1 + DLOCK_TTL_MAX_MS)
        return 1; /* longer than dlock ever grants: planted, not ours */
    /* Only a process in our own pid namespace on our host can be looked
     * up; anything else keeps its lease. */
    if (host == NULL || ns == NULL || id->pid_ns[0] == '\0' ||
        strcmp(host, dlock__hostname()) != 0 || strcmp(ns, id->pid_ns) != 0)
        return 0;
    if (sqlite3_column_type(s, 5) != SQLITE_INTEGER || pid < 1 || pid > INT_MAX)
        return 1; /* no pid dlock could have written: planted */
    return holder_gone(id, pid, sqlite3_column_int64(s, 6));
}
