/*
 * clock.c - clocks, sleeps, deadlines, backoff delays and the clock-rate
 * margin of a lease (clock.h).
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "clock.h"
#include "dlock.h"

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

/* The clock-rate margin: a held lock is LOST this much before the end of
 * the lease the store granted (1/DRIFT_DIV of the lease, at least 1 ms).
 * Its rate is the clock-rate difference dlock assumes between the
 * holder's clock and the store's (docs/semantics.md): a lease measured on
 * a clock 1% slow still ends locally before it ends on the store. */
#define DRIFT_DIV DLOCK_DRIFT_DIV

int64_t dlock__drift_margin(int64_t ttl_ms)
{
    return ttl_ms / DRIFT_DIV > 0 ? ttl_ms / DRIFT_DIV : 1;
}
