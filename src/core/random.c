/*
 * random.c - random bytes, owner tokens and jitter (random.h).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "clock.h"
#include "errors.h"
#include "process.h"
#include "random.h"

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
