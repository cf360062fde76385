/*
 * process.c - who this process is (process.h): its pid and generation,
 * kept current across fork, its host name as stores record it, and
 * detaching a fork child from an inherited connection.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "process.h"
#include "strutil.h"

/* The process id, without a system call per use (glibc no longer
 * caches getpid()): read once, and again in every fork child (a
 * pthread_atfork handler; a child made by a raw clone() without fork
 * handlers must not call the library, as with any threaded library).
 *
 * A pid is not a process's identity: a pid 1 that forks a child into a
 * new pid namespace has a child that is pid 1 too.  What tells "this
 * process made it" is the generation: 1 in the first process, one more
 * in every fork child (the same handler), so a child's generation is
 * never that of any ancestor whose memory it copied. */
static pid_t cached_pid;
static uint64_t generation = 1;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void pid_refresh(void)
{
    __atomic_store_n(&cached_pid, getpid(), __ATOMIC_RELAXED);
}

static void fork_child(void)
{
    __atomic_add_fetch(&generation, 1, __ATOMIC_RELAXED);
    pid_refresh();
}

static void pid_init(void)
{
    pid_refresh();
    pthread_atfork(NULL, NULL, fork_child);
}

pid_t dlock__pid(void)
{
    pid_t p = __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);

    if (p != 0)
        return p;
    pthread_once(&pid_once, pid_init);
    return __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);
}

uint64_t dlock__generation(void)
{
    pthread_once(&pid_once, pid_init);
    return __atomic_load_n(&generation, __ATOMIC_RELAXED);
}

static char hostname[256];
static pthread_once_t hostname_once = PTHREAD_ONCE_INIT;

/* The host name as stores keep it: valid UTF-8, every byte that is not
 * part of a UTF-8 character written as \xHH.  gethostname() gives
 * whatever sethostname() was given (any bytes, in a UTS namespace); the
 * PostgreSQL and MariaDB columns are UTF-8 and refused such a name, so
 * that every acquire and run record from that host failed ("out of
 * memory" from PQescapeLiteral, "the table's name column is utf8mb4"). */
static void hostname_init(void)
{
    char raw[256];
    size_t o = 0;

    if (gethostname(raw, sizeof(raw)) != 0)
        dlock__strlcpy(raw, "unknown", sizeof(raw));
    raw[sizeof(raw) - 1] = '\0';
    for (size_t i = 0; raw[i] != '\0';) {
        const unsigned char *u = (const unsigned char *)raw + i;
        size_t n = 0;

        for (size_t k = 1; k <= 4 && n == 0 && u[k - 1] != '\0'; k++)
            if (dlock__utf8_valid(u, k))
                n = k;
        if (n > 0) {
            if (o + n >= sizeof(hostname))
                break;
            memcpy(hostname + o, u, n);
            o += n;
            i += n;
        } else {
            if (o + 4 >= sizeof(hostname))
                break;
            snprintf(hostname + o, 5, "\\x%02x", u[0]);
            o += 4;
            i++;
        }
    }
    hostname[o] = '\0';
}

const char *dlock__hostname(void)
{
    pthread_once(&hostname_once, hostname_init);
    return hostname;
}

int dlock__fd_detach(int fd)
{
    int nul, rc;

    if (fd < 0)
        return 0;
    nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul < 0)
        return -1;
    /* dup2 swaps the descriptor in one step: no moment at which fd is
     * free for another thread to be given. */
    rc = dup2(nul, fd) < 0 ? -1 : 0;
    close(nul);
    return rc;
}
