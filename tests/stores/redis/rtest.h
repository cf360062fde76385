/*
 * rtest.h - helpers shared by the Redis store's test programs (rtest.c).
 */
#ifndef DLOCK_TEST_RTEST_H
#define DLOCK_TEST_RTEST_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock.h"

extern char run_id[64];

/* One test of a program: own, it starts its own servers (URL "-"). */
struct rt_test {
    const char *name;
    void (*fn)(void);
    int own;
};
/* PROG URL|- TEST...: run the named tests ("all": every one) with *url
 * set to URL and run_id to what-PID-TIME; each prints ok or FAIL (by
 * *failures, the program's check.h count).  Returns the exit status. */
int rt_main(int argc, char **argv, const char *what,
            const struct rt_test *tests, size_t n, const char **url,
            const int *failures);
extern char dir[256];

const char *nm(const char *base);
dlock_options opts(int64_t wait_ms, int64_t ttl_ms, int renew);
redisContext *raw_open(const char *url);
char *raw_str(redisContext *c, const char *fmt, ...);
long long script_calls(redisContext *c);
const char *with_param(const char *url, const char *param);
dlock_store *must_open(const char *url);
int await_subscribers(redisContext *c, const char *key, long long n);
int script(char *out, size_t outlen, const char *fmt, ...);
void own_server_stop(void);
void own_server(char *u, size_t len);
void hex_token(char out[33]);
int await_channel(redisContext *c, const char *chan, long long n);

#endif
