/*
 * clock.h - clocks, sleeps, deadlines, backoff delays and the clock-rate
 * margin of a lease (clock.c).
 *
 * Every deadline in dlock is a CLOCK_MONOTONIC time in milliseconds
 * (dlock__now_ms()); the wall clock is for display and run records only.
 */
#ifndef DLOCK_CORE_CLOCK_H
#define DLOCK_CORE_CLOCK_H

#include <stdint.h>

int64_t dlock__now_ms(void);      /* CLOCK_MONOTONIC */
int64_t dlock__wall_ms(void);     /* CLOCK_REALTIME, for display only */
void dlock__sleep_ms(int64_t ms); /* restarts after EINTR */
/* Remaining ms until deadline (>= 0); INT64_MAX for DLOCK_WAIT_FOREVER. */
int64_t dlock__remaining_ms(int64_t deadline);

/* The longest duration dlock takes from outside (a URL's timeouts, a
 * store's answer saying how long a holder's lease has left): a year, the
 * longest lease (DLOCK_TTL_MAX_MS, store.h, is the same figure).
 * now + any duration in range cannot overflow. */
#define DLOCK_DURATION_MAX_MS (365LL * 24 * 3600 * 1000)
/* A duration from outside, where it is parsed: more than
 * DLOCK_DURATION_MAX_MS is that much, any negative is -1 ("not known"). */
int64_t dlock__clamp_ms(int64_t ms);

/* Poll delay for attempt n (0-based): exponential from 1 ms to
 * DLOCK_POLL_MAX_MS, scaled by a jitter factor in [0.5, 1) from rnd
 * (dlock__rand32(), random.h). */
#define DLOCK_POLL_MAX_MS 50
int64_t dlock__backoff_ms(unsigned attempt, uint32_t rnd);

/* The clock-rate margin of a lease of ttl_ms (DLOCK_DRIFT_DIV, dlock.h):
 * a holder counts its lease as ending that much before the store does
 * (lease.c declares the lock LOST then). */
int64_t dlock__drift_margin(int64_t ttl_ms);

#endif /* DLOCK_CORE_CLOCK_H */
