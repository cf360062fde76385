/*
 * util.c - clocks, randomness, name checks and small string helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "errors.h"
#include "iobound.h"
#include "names.h"
#include "process.h"
#include "random.h"
#include "strutil.h"

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t dlock__now_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

int64_t dlock__wall_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

void dlock__sleep_ms(int64_t ms)
{
    struct timespec ts;

    if (ms <= 0)
        return;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int64_t dlock__remaining_ms(int64_t deadline)
{
    int64_t left;

    if (deadline == DLOCK_WAIT_FOREVER)
        return INT64_MAX;
    left = deadline - dlock__now_ms();
    return left > 0 ? left : 0;
}

int64_t dlock__clamp_ms(int64_t ms)
{
    if (ms < 0)
        return -1;
    return ms < DLOCK_DURATION_MAX_MS ? ms : DLOCK_DURATION_MAX_MS;
}

_Thread_local int64_t dlock__io_deadline;

int64_t dlock__io_bound(int64_t timeout_ms)
{
    int64_t left;

    if (dlock__io_deadline == 0)
        return timeout_ms;
    left = dlock__io_deadline - dlock__now_ms();
    if (left < 1)
        left = 1;
    return left < timeout_ms ? left : timeout_ms;
}

int dlock__random(void *buf, size_t len)
{
    unsigned char *p = buf;

    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return dlock__seterr(DLOCK_ESTORE, "getrandom: %s",
                                 strerror(errno));
        }
        p += n;
        len -= (size_t)n;
    }
    return DLOCK_OK;
}

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

/* Tokens come from getrandom() 16 at a time out of a per-thread pool
 * filled 256 bytes at once (one system call per 16 acquires, not per
 * acquire).  The pool belongs to the process that filled it (its
 * generation, not its pid, which a child in a new pid namespace may
 * share): a fork child, whose copy of the calling thread's pool is the
 * parent's, never hands out what its parent will. */
#define TOKEN_POOL 256

int dlock__token(char out[DLOCK_TOKEN_HEX + 1])
{
    static const char hex[] = "0123456789abcdef";
    static _Thread_local unsigned char pool[TOKEN_POOL];
    static _Thread_local size_t pool_left;
    static _Thread_local uint64_t pool_gen;
    unsigned char *raw;
    uint64_t me = dlock__generation();

    if (pool_gen != me)
        pool_left = 0;
    if (pool_left < DLOCK_TOKEN_HEX / 2) {
        int rc = dlock__random(pool, sizeof(pool));

        if (rc != DLOCK_OK)
            return rc;
        pool_left = sizeof(pool);
        pool_gen = me;
    }
    raw = pool + sizeof(pool) - pool_left;
    pool_left -= DLOCK_TOKEN_HEX / 2;
    for (size_t i = 0; i < DLOCK_TOKEN_HEX / 2; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
        raw[i] = 0; /* handed out once */
    }
    out[DLOCK_TOKEN_HEX] = '\0';
    return DLOCK_OK;
}

/* Jitter only needs to spread waiters apart, not to be unpredictable, so a
 * per-thread xorshift seeded from getrandom is enough. */
uint32_t dlock__rand32(void)
{
    static _Thread_local uint32_t state;

    if (state == 0) {
        if (dlock__random(&state, sizeof(state)) != DLOCK_OK || state == 0)
            state = (uint32_t)dlock__now_ms() | 1u;
    }
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    return state;
}

int64_t dlock__backoff_ms(unsigned attempt, uint32_t rnd)
{
    int64_t base = DLOCK_POLL_MAX_MS;

    if (attempt < 16 && ((int64_t)1 << attempt) < DLOCK_POLL_MAX_MS)
        base = (int64_t)1 << attempt;
    /* Scale into [base/2, base): waiters that started together drift
     * apart instead of retrying in lock step. */
    base = base / 2 + (int64_t)(rnd % (uint32_t)((base + 1) / 2));
    return base < 1 ? 1 : base;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static int utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned cp;

        if (c < 0x80) {
            if (c == 0)
                return 0;
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (len - i <= n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        i += n + 1;
    }
    return 1;
}

int dlock__check_name(const char *name, size_t len)
{
    if (name == NULL)
        return dlock__seterr(DLOCK_EINVAL, "lock name is NULL");
    if (len == 0)
        return dlock__seterr(DLOCK_EINVAL, "lock name is empty");
    if (len > DLOCK_NAME_MAX)
        return dlock__seterr(DLOCK_EINVAL,
                             "lock name is %zu bytes long; the limit is %d",
                             len, DLOCK_NAME_MAX);
    if (!utf8_valid((const unsigned char *)name, len))
        return dlock__seterr(DLOCK_EINVAL,
                             "lock name is not valid UTF-8 (or contains "
                             "NUL)");
    return DLOCK_OK;
}

char *dlock__strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);

    if (p != NULL) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

char *dlock__strdup(const char *s)
{
    return dlock__strndup(s, strlen(s));
}

void dlock__strlcpy(char *dst, const char *src, size_t dstlen)
{
    size_t n = strlen(src);

    if (n >= dstlen)
        n = dstlen - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
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
            if (utf8_valid(u, k))
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
