/*
 * redis_cpu.c - dlock-bench part 1b: Redis's CPU per uncontended
 * cycle, dlock's against the seed cycle (SET NX PX + compare-and-delete).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "run.h"
#ifdef DLOCK_HAVE_REDIS
#include <hiredis/hiredis.h>
#endif

#ifdef DLOCK_HAVE_REDIS
/* The server's own CPU time (used_cpu_sys + used_cpu_user of INFO cpu),
 * in us; -1 if unknown. */
static double redis_cpu_us(redisContext *rc)
{
    redisReply *r = redisCommand(rc, "INFO cpu");
    double sys = -1, user = -1;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "used_cpu_sys:");
        const char *q = strstr(r->str, "used_cpu_user:");

        if (p != NULL)
            sys = strtod(p + 13, NULL);
        if (q != NULL)
            user = strtod(q + 14, NULL);
    }
    freeReplyObject(r);
    return sys < 0 || user < 0 ? -1 : (sys + user) * 1e6;
}

/* The seed cycle, the classic single-instance Redis lock: SET key token
 * NX PX ttl, then the compare-and-delete script by EVALSHA, on a raw
 * hiredis connection; against dlock's uncontended acquire + release, N
 * cycles each, alternating blocks, in one run: the server's CPU per cycle
 * of each and their ratio (issue 26: <= 1.5).  Only a plain redis:// or
 * unix:// server (the no-op's connection); Sentinel, Cluster and TLS run
 * the same scripts. */
void bench_redis_cpu(void)
{
    static const char cad[] =
        "if redis.call('get',KEYS[1])==ARGV[1] then "
        "return redis.call('del',KEYS[1]) else return 0 end";
    const int n = quick ? 4000 : 20000, blocks = 4, per = n / blocks;
    struct bench_noop *noop;
    redisContext *rc;
    redisReply *r;
    dlock_store *s;
    dlock_options o = DLOCK_OPTIONS_INIT;
    char sha[41], key[160], name[128], tok[40];
    double seed_us = 0, dl_us = 0, seed_s = 0, dl_s = 0;

    if (bench_noop_open(&noop, url) != 0)
        return;
    if (bench_noop_kind(noop) != 'r') {
        bench_noop_close(noop);
        return;
    }
    rc = bench_noop_conn(noop);
    r = redisCommand(rc, "SCRIPT LOAD %s", cad);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40 ||
        redis_cpu_us(rc) < 0) {
        /* a Cluster node or Sentinel, or no INFO: no figure */
        freeReplyObject(r);
        bench_noop_close(noop);
        return;
    }
    memcpy(sha, r->str, 40);
    sha[40] = '\0';
    freeReplyObject(r);
    s = open_store();
    o.auto_renew = 0;
    snprintf(name, sizeof(name), "%s/cpu", run_id);
    snprintf(key, sizeof(key), "{%s}/seed", run_id);
    for (int b = 0; b < blocks; b++) {
        double c0 = redis_cpu_us(rc), c1;
        int64_t t0 = now_ns();

        for (int i = 0; i < per; i++) {
            snprintf(tok, sizeof(tok), "%08x%08x%08x%08x", (unsigned)b,
                     (unsigned)i, (unsigned)getpid(), 0x5eedu);
            r = redisCommand(rc, "SET %s %s NX PX 30000", key, tok);
            if (r == NULL || r->type != REDIS_REPLY_STATUS)
                die("seed SET");
            freeReplyObject(r);
            r = redisCommand(rc, "EVALSHA %s 1 %s %s", sha, key, tok);
            if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer != 1)
                die("seed EVALSHA");
            freeReplyObject(r);
        }
        seed_s += (double)(now_ns() - t0) / 1e9;
        c1 = redis_cpu_us(rc);
        seed_us += c1 - c0;
        t0 = now_ns();
        for (int i = 0; i < per; i++) {
            dlock_lock *l;

            if (dlock_acquire(&l, s, name, &o) != DLOCK_OK)
                die("acquire");
            if (dlock_release(l) != DLOCK_OK)
                die("release");
        }
        dl_s += (double)(now_ns() - t0) / 1e9;
        dl_us += redis_cpu_us(rc) - c1;
    }
    /* each block's INFO cpu itself is counted once per side: the same */
    printf("redis cpu    server CPU per cycle: seed (SET NX PX + "
           "compare-and-delete) %.2f us, dlock %.2f us, ratio %.2f; "
           "%.0f vs %.0f cycles/s (%d each)\n",
           seed_us / (blocks * per), dl_us / (blocks * per), dl_us / seed_us,
           blocks * per / seed_s, blocks * per / dl_s, blocks * per);
    if (json != NULL)
        fprintf(json, "  \"redis_server_cpu\": {\n");
    jnum("seed_us_per_cycle", seed_us / (blocks * per), 0);
    jnum("dlock_us_per_cycle", dl_us / (blocks * per), 0);
    jnum("ratio", dl_us / seed_us, 0);
    jnum("seed_cycles_per_s", blocks * per / seed_s, 0);
    jnum("dlock_cycles_per_s", blocks * per / dl_s, 0);
    jnum("cycles", blocks * per, 1);
    if (json != NULL)
        fprintf(json, "  },\n");
    dlock_store_close(s);
    bench_noop_close(noop);
}
#else
void bench_redis_cpu(void)
{
}
#endif
