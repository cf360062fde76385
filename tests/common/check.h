/*
 * check.h - what the test programs share: checks that count failures
 * (EXPECT goes on, CHECK returns from the test function), and monotonic
 * time.  Each program includes it once and reports `failures` at exit.
 */
#ifndef DLOCK_TEST_CHECK_H
#define DLOCK_TEST_CHECK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock.h"

static int failures;

/* dlock_status() into the test's own copy.  Programs must not copy a
 * dlock_info (the library may grow it); these tests are built with this
 * very header, so they may, and their checks read plainer for it. */
static inline int test_status(dlock_store *s, const char *name, dlock_info *out)
{
    dlock_info *info = NULL;
    int rc = dlock_status(&info, s, name);

    memset(out, 0, sizeof(*out));
    out->ttl_ms = -1;
    if (info != NULL)
        *out = *info;
    dlock_info_free(info);
    return rc;
}

static inline void check_failed_(const char *file, int line, const char *what)
{
    fprintf(stderr, "  %s:%d: %s failed (last error: %s)\n", file, line, what,
            dlock_errmsg());
    failures++;
}

static inline void rc_failed_(const char *file, int line, const char *expr,
                              int rc, const char *want)
{
    fprintf(stderr, "  %s:%d: %s returned %d (%s), wanted %s: %s\n", file, line,
            expr, rc, dlock_strerror(rc), want, dlock_errmsg());
    failures++;
}

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond))                                                           \
            check_failed_(__FILE__, __LINE__, "EXPECT(" #cond ")");            \
    } while (0)

#define EXPECT_RC(expr, want)                                                  \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != (want))                                                     \
            rc_failed_(__FILE__, __LINE__, #expr, rc_, #want);                 \
    } while (0)

/* The same, but give up on the rest of the test function. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            check_failed_(__FILE__, __LINE__, "CHECK(" #cond ")");             \
            return;                                                            \
        }                                                                      \
    } while (0)

#define CHECK_RC(expr, want)                                                   \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        if (rc_ != (want)) {                                                   \
            rc_failed_(__FILE__, __LINE__, #expr, rc_, #want);                 \
            return;                                                            \
        }                                                                      \
    } while (0)

static inline int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

#endif
