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
#include <time.h>

#include "dlock.h"

static int failures;

#define EXPECT(cond)                                                         \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "  %s:%d: EXPECT(%s) failed (last error: %s)\n", \
                    __FILE__, __LINE__, #cond, dlock_errmsg());              \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#define EXPECT_RC(expr, want)                                                \
    do {                                                                     \
        int rc_ = (expr);                                                    \
        if (rc_ != (want)) {                                                 \
            fprintf(stderr, "  %s:%d: %s returned %d (%s), wanted %s: %s\n", \
                    __FILE__, __LINE__, #expr, rc_, dlock_strerror(rc_),     \
                    #want, dlock_errmsg());                                  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* The same, but give up on the rest of the test function. */
#define CHECK(cond)                                                          \
    do {                                                                     \
        int f_ = failures;                                                   \
        EXPECT(cond);                                                        \
        if (failures != f_)                                                  \
            return;                                                          \
    } while (0)

#define CHECK_RC(expr, want)                                                 \
    do {                                                                     \
        int f_ = failures;                                                   \
        EXPECT_RC(expr, want);                                               \
        if (failures != f_)                                                  \
            return;                                                          \
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
