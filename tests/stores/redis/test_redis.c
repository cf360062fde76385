/*
 * test_redis.c - what only the Redis store promises, checked from outside
 * with a raw hiredis client next to the library:
 *
 *     test_redis URL TEST      one test against a running server (URL)
 *     test_redis - TEST        a test that starts its own servers with
 *                              scripts/server-redis.sh (faults, passwords)
 *
 * Interop: the lock key is exactly <prefix><name>, so plain SET NX clients
 * (the PHP lock of reference 004, node-redlock) and dlock exclude each
 * other, and a compare-and-delete with a wrong token leaves dlock's lock.
 * The rest: SCRIPT FLUSH in the middle, prompt hand-off, how many attempts
 * one release causes among many waiters, a server that is gone, restarted,
 * wrong about passwords, or not Redis at all.
 *
 * Each test prints what it measured; the exit status is the number of
 * failed checks.  Timed assertions are loose (the issue asks for < 100 ms
 * hand-off; everything else only bounds hangs).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "dlock.h"
#include "rtest.h"

/* --- interop -------------------------------------------------------- */

static const char *url;

/* A plain SET NX PX by another client makes dlock BUSY, and status shows
 * the foreign holder and its lease. */
static void t_foreign_holder(void)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_store *s = must_open(url);
    redisContext *c = raw_open(url);
    dlock_lock *l;
    dlock_info info;
    char key[600];
    int64_t t0;

    snprintf(key, sizeof(key), "dlock:%s", nm("foreign"));
    CHECK(strcmp(raw_str(c, "SET %s x NX PX 60000", key), "OK") == 0);
    CHECK_RC(dlock_acquire(&l, s, nm("foreign"), &o), DLOCK_BUSY);
    CHECK_RC(test_status(s, nm("foreign"), &info), DLOCK_OK);
    CHECK(info.held && info.holders == 1 && !info.shared);
    CHECK(info.ttl_ms > 50000 && info.ttl_ms <= 60000);
    CHECK(info.other_client); /* not dlock: host, pid, since unknown */
    /* A finite wait on a foreign holder ends at its deadline. */
    o.wait_ms = 300;
    t0 = now_ms();
    CHECK_RC(dlock_acquire(&l, s, nm("foreign"), &o), DLOCK_BUSY);
    CHECK(now_ms() - t0 >= 250 && now_ms() - t0 < 1000);
    /* The foreign holder's release (plain DEL, no publish) is noticed by a
     * waiter without a message, within a few seconds. */
    {
        int64_t released;
        pid_t pid;

        o.wait_ms = 10000;
        /* Another process deletes it while we wait. */
        pid = fork();

        if (pid == 0) {
            redisContext *c2 = raw_open(url);

            sleep_ms(300);
            freeReplyObject(redisCommand(c2, "DEL %s", key));
            redisFree(c2);
            _exit(0);
        }
        t0 = now_ms();
        CHECK_RC(dlock_acquire(&l, s, nm("foreign"), &o), DLOCK_OK);
        released = now_ms() - t0;
        waitpid(pid, NULL, 0);
        printf("  foreign DEL (no publish) noticed after %lld ms\n",
               (long long)released);
        CHECK(released < 3000);
        CHECK_RC(dlock_release(l), DLOCK_OK);
    }
    redisFree(c);
    dlock_store_close(s);
}

/* The uncontended acquire and release take a short path (lua/acquire.lua,
 * lua/release.lua: their first block) when no key of the name but the fence
 * counter exists: it must leave what the full path leaves.  Fences strictly
 * increase and never fall below the server's clock in us; the info hash
 * holds the fence, host, pid and since, with the lease; a release leaves
 * nothing but the counter.  Stale keys (an info hash, a waiters hash
 * without a queue) send the acquire down the full path, which cleans
 * them up. */
static long long raw_int(redisContext *c, const char *fmt, ...)
{
    redisReply *r;
    long long v = -99;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r != NULL && r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    freeReplyObject(r);
    return v;
}

static unsigned long long server_us(redisContext *c)
{
    redisReply *r = redisCommand(c, "TIME");
    unsigned long long us = 0;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        us = strtoull(r->element[0]->str, NULL, 10) * 1000000 +
             strtoull(r->element[1]->str, NULL, 10);
    freeReplyObject(r);
    return us;
}

static void t_fast_path(void)
{
    dlock_options o = opts(0, 5000, 0);
    dlock_store *s = must_open(url);
    redisContext *c = raw_open(url);
    char key[600], info[620], fence[620], waiters[620];
    uint64_t last = 0;
    dlock_lock *l;

    snprintf(key, sizeof(key), "dlock:%s", nm("fast"));
    snprintf(info, sizeof(info), "%s\xffinfo", key);
    snprintf(fence, sizeof(fence),
             "%s\xff"
             "fence",
             key);
    snprintf(waiters, sizeof(waiters), "%s\xffwaiters", key);
    for (int i = 0; i < 20; i++) {
        unsigned long long t0 = server_us(c);
        long long pttl;

        /* a counter lost (below the clock): the floor applies, to a
         * server that was away for longer than a millisecond */
        if (i == 10) {
            CHECK(strcmp(raw_str(c, "SET %s 5", fence), "OK") == 0);
            sleep_ms(3);
            t0 = server_us(c);
        }
        CHECK_RC(dlock_acquire(&l, s, nm("fast"), &o), DLOCK_OK);
        /* the floor is the clock in ms, times 1000 */
        if (dlock_fence(l) <= last || dlock_fence(l) < t0 / 1000 * 1000)
            printf("  cycle %d: fence %llu after %llu, clock %llu us\n", i,
                   (unsigned long long)dlock_fence(l), (unsigned long long)last,
                   t0);
        CHECK(dlock_fence(l) > last && dlock_fence(l) >= t0 / 1000 * 1000);
        last = dlock_fence(l);
        CHECK(raw_int(c, "HGET %s fence", info) == (long long)last);
        CHECK(raw_int(c, "HGET %s pid", info) == (long long)getpid());
        CHECK(raw_int(c, "HEXISTS %s host", info) == 1);
        CHECK(raw_int(c, "HGET %s since", info) >= (long long)(t0 / 1000));
        CHECK(raw_int(c, "HLEN %s", info) == 4);
        pttl = raw_int(c, "PTTL %s", info);
        if (pttl <= 4000 || pttl > 5010)
            printf("  info pttl %lld at cycle %d\n", pttl, i);
        CHECK(pttl > 4000 && pttl <= 5010); /* ms rounding */
        CHECK_RC(dlock_release(l), DLOCK_OK);
        CHECK(raw_int(c, "EXISTS %s %s", key, info) == 0);
    }
    /* A stale info hash (no lease): the full path replaces it. */
    CHECK(raw_int(c, "HSET %s limit 7 f:x 3", info) == 2);
    CHECK_RC(dlock_acquire(&l, s, nm("fast"), &o), DLOCK_OK);
    CHECK(dlock_fence(l) > last);
    last = dlock_fence(l);
    CHECK(raw_int(c, "HEXISTS %s limit", info) == 0);
    CHECK(raw_int(c, "HLEN %s", info) == 4);
    CHECK(raw_int(c, "PTTL %s", info) > 0);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK(raw_int(c, "EXISTS %s %s", key, info) == 0);
    /* A waiters hash without a queue: acquire and release still work, and
     * the release's hand-off path deletes it. */
    CHECK(raw_int(c, "HSET %s # 3", waiters) == 1);
    CHECK_RC(dlock_acquire(&l, s, nm("fast"), &o), DLOCK_OK);
    CHECK(dlock_fence(l) > last);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK(raw_int(c, "EXISTS %s %s %s", key, info, waiters) == 0);
    CHECK(raw_int(c, "EXISTS %s", fence) == 1);
    printf("  last fence %llu\n", (unsigned long long)last);
    redisFree(c);
    dlock_store_close(s);
}

/* dlock's key blocks SET NX of another client; a compare-and-delete with
 * a wrong token (the PHP lock's release) leaves it in place. */
static void t_dlock_blocks_foreign(void)
{
    static const char cad[] =
        "if redis.call('get', KEYS[1]) == ARGV[1] then "
        "return redis.call('del', KEYS[1]) else return 0 end";
    dlock_options o = opts(0, 5000, 1);
    dlock_store *s = must_open(url);
    redisContext *c = raw_open(url);
    dlock_lock *l;
    char key[600], *v;

    snprintf(key, sizeof(key), "dlock:%s", nm("ours"));
    CHECK_RC(dlock_acquire(&l, s, nm("ours"), &o), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "SET %s x NX PX 60000", key), "(nil)") == 0);
    /* "dlock1:" + the owner token: opaque to other clients, and no token
     * of theirs looks like it by accident. */
    v = raw_str(c, "GET %s", key);
    CHECK(strlen(v) == 39 && strncmp(v, "dlock1:", 7) == 0 &&
          strspn(v + 7, "0123456789abcdef") == 32);
    /* The server is asked for the lease + 1 ms: its PX rounding must not
     * free the key before our lease ends. */
    v = raw_str(c, "PTTL %s", key);
    CHECK(atoll(v) > 0 && atoll(v) <= 5001);
    CHECK(strcmp(raw_str(c, "EVAL %s 1 %s %s", cad, key, "wrong-token"), "0") ==
          0);
    CHECK_RC(dlock_assert_ttl(l, 1000), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "EXISTS %s", key), "0") == 0);
    redisFree(c);
    dlock_store_close(s);
}

static int list_cb(const dlock_info *info, void *payload)
{
    (void)info;
    (*(int *)payload)++;
    return 0;
}

/* ?prefix= sets the key exactly: redislock: for reference 004's PHP lock,
 * empty for node-redlock's bare resource names. */
static void t_prefixes(void)
{
    static const char *const prefixes[] = {"redislock:", "", "a*b?[c]\\"};
    redisContext *c = raw_open(url);

    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        char param[96], key[600], enc[64] = "";
        dlock_options o = opts(0, 5000, 1);
        dlock_store *s;
        dlock_lock *l;
        dlock_info info;
        int found = 0;

        /* Percent-encode the prefix for the URL. */
        for (const char *p = prefixes[i]; *p != '\0'; p++)
            snprintf(enc + strlen(enc), sizeof(enc) - strlen(enc), "%%%02X",
                     (unsigned char)*p);
        snprintf(param, sizeof(param), "prefix=%s", enc);
        s = must_open(with_param(url, param));
        snprintf(key, sizeof(key), "%s%s", prefixes[i], nm("pfx"));
        CHECK_RC(dlock_acquire(&l, s, nm("pfx"), &o), DLOCK_OK);
        CHECK(strcmp(raw_str(c, "EXISTS %s", key), "1") == 0);
        CHECK(strcmp(raw_str(c, "SET %s x NX", key), "(nil)") == 0);
        CHECK_RC(test_status(s, nm("pfx"), &info), DLOCK_OK);
        CHECK(info.held);
        CHECK_RC(dlock_list(s, nm("pfx"), list_cb, &found), DLOCK_OK);
        CHECK(found == 1);
        CHECK_RC(dlock_release(l), DLOCK_OK);
        CHECK(strcmp(raw_str(c, "EXISTS %s", key), "0") == 0);
        dlock_store_close(s);
    }
    redisFree(c);
}

/* Readers keep plain SET NX clients out too: while a shared lock is held,
 * the lock key exists; it is gone when the last reader leaves. */
static void t_shared_blocks_foreign(void)
{
    dlock_options sh = opts(0, 5000, 1);
    dlock_store *s = must_open(url), *s2 = must_open(url);
    redisContext *c = raw_open(url);
    dlock_lock *r1, *r2;
    dlock_info info;
    char key[600];

    sh.shared = 1;
    snprintf(key, sizeof(key), "dlock:%s", nm("readers"));
    CHECK_RC(dlock_acquire(&r1, s, nm("readers"), &sh), DLOCK_OK);
    CHECK_RC(dlock_acquire(&r2, s2, nm("readers"), &sh), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "SET %s x NX PX 60000", key), "(nil)") == 0);
    CHECK_RC(dlock_extend(r1, 4000), DLOCK_OK);
    CHECK_RC(dlock_assert_ttl(r2, 1000), DLOCK_OK);
    CHECK_RC(dlock_release(r1), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "SET %s x NX PX 60000", key), "(nil)") == 0);
    CHECK_RC(test_status(s, nm("readers"), &info), DLOCK_OK);
    CHECK(info.held && info.shared && info.holders == 1);
    CHECK_RC(dlock_release(r2), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "EXISTS %s", key), "0") == 0);
    /* And a foreign holder keeps readers out. */
    CHECK(strcmp(raw_str(c, "SET %s x NX PX 60000", key), "OK") == 0);
    CHECK_RC(dlock_acquire(&r1, s, nm("readers"), &sh), DLOCK_BUSY);
    freeReplyObject(redisCommand(c, "DEL %s", key));
    redisFree(c);
    dlock_store_close(s);
    dlock_store_close(s2);
}

/* url without its path and query, then tail ("/1", "?db=1"...). */
static const char *db_url(const char *tail)
{
    static char buf[4][1024];
    static int i;
    const char *auth = strstr(url, "://");
    size_t n = auth != NULL ? (size_t)(auth + 3 - url) : 0;

    n += strcspn(url + n, "/?");
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%.*s%s", (int)n, url, tail);
    return buf[i];
}

/* One database, two spellings: /1 and ?db=1 exclude each other (?db=1
 * was ignored: database 0).  A path and a ?db= that disagree are refused
 * with a message naming db=, and /1 does not meet /0. */
static void t_db_spellings(void)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_store *path = must_open(db_url("/1"));
    dlock_store *query = must_open(db_url("?db=1"));
    dlock_store *both = must_open(db_url("/1?db=1"));
    dlock_store *zero = must_open(db_url("/0"));
    dlock_store *s = (dlock_store *)&s;
    dlock_lock *l, *l2;

    CHECK_RC(dlock_acquire(&l, path, nm("db"), &o), DLOCK_OK);
    EXPECT_RC(dlock_acquire(&l2, query, nm("db"), &o), DLOCK_BUSY);
    EXPECT_RC(dlock_acquire(&l2, both, nm("db"), &o), DLOCK_BUSY);
    CHECK_RC(dlock_acquire(&l2, zero, nm("db"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(l2), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK_RC(dlock_store_open(&s, db_url("/1?db=2")), DLOCK_EINVAL);
    CHECK(s == NULL);
    CHECK(strstr(dlock_errmsg(), "db=2") != NULL);
    dlock_store_close(path);
    dlock_store_close(query);
    dlock_store_close(both);
    dlock_store_close(zero);
}

/* SCRIPT FLUSH (or a restart) in the middle: EVALSHA answers NOSCRIPT and
 * the store falls back to EVAL; nothing breaks. */
static void t_script_flush(void)
{
    dlock_options o = opts(0, 5000, 1), w = opts(5000, 5000, 1);
    dlock_store *s = must_open(url), *s2 = must_open(url);
    redisContext *c = raw_open(url);
    dlock_lock *a, *b;
    dlock_info info;

    CHECK_RC(dlock_acquire(&a, s, nm("flush"), &o), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "SCRIPT FLUSH"), "OK") == 0);
    CHECK_RC(dlock_extend(a, 4000), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "SCRIPT FLUSH"), "OK") == 0);
    CHECK_RC(dlock_assert_ttl(a, 1000), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "SCRIPT FLUSH"), "OK") == 0);
    CHECK_RC(test_status(s2, nm("flush"), &info), DLOCK_OK);
    CHECK(info.held);
    CHECK(strcmp(raw_str(c, "SCRIPT FLUSH"), "OK") == 0);
    CHECK_RC(dlock_acquire(&b, s2, nm("flush"), &o), DLOCK_BUSY);
    CHECK(strcmp(raw_str(c, "SCRIPT FLUSH"), "OK") == 0);
    CHECK_RC(dlock_release(a), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "SCRIPT FLUSH"), "OK") == 0);
    CHECK_RC(dlock_acquire(&b, s2, nm("flush"), &w), DLOCK_OK);
    CHECK(strcmp(raw_str(c, "SCRIPT FLUSH"), "OK") == 0);
    CHECK_RC(dlock_release(b), DLOCK_OK);
    redisFree(c);
    dlock_store_close(s);
    dlock_store_close(s2);
}

/* --- hand-off and crowds ------------------------------------------- */

struct waiter {
    dlock_store *store;
    const char *name;
    int shared;
    int rc;
    int64_t done;
    dlock_lock *lock;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    dlock_options o = opts(10000, 5000, 1);

    o.shared = w->shared;
    w->rc = dlock_acquire(&w->lock, w->store, w->name, &o);
    __atomic_store_n(&w->done, now_ms(), __ATOMIC_SEQ_CST);
    return NULL;
}

/* One holder, one waiter (another handle): the waiter has the lock within
 * a few ms of the release, not after a poll interval. */
static void t_handoff(void)
{
    enum { ROUNDS = 20 };
    dlock_store *s = must_open(url), *s2 = must_open(url);
    redisContext *c = raw_open(url);
    dlock_options o = opts(0, 10000, 1);
    int64_t lat[ROUNDS], worst = 0, sum = 0;
    char key[600];

    snprintf(key, sizeof(key), "dlock:%s", nm("handoff"));
    for (int i = 0; i < ROUNDS; i++) {
        struct waiter w = {s2, nm("handoff"), 0, -99, 0, NULL};
        dlock_lock *a;
        pthread_t t;
        int64_t released;

        CHECK_RC(dlock_acquire(&a, s, nm("handoff"), &o), DLOCK_OK);
        CHECK(pthread_create(&t, NULL, waiter_main, &w) == 0);
        CHECK(await_subscribers(c, key, 1));
        released = now_ms();
        CHECK_RC(dlock_release(a), DLOCK_OK);
        pthread_join(t, NULL);
        CHECK_RC(w.rc, DLOCK_OK);
        lat[i] = w.done - released;
        CHECK_RC(dlock_release(w.lock), DLOCK_OK);
        sum += lat[i];
        if (lat[i] > worst)
            worst = lat[i];
    }
    printf("  hand-off over %d rounds: mean %.1f ms, worst %lld ms\n", ROUNDS,
           (double)sum / ROUNDS, (long long)worst);
    for (int i = 0; i < ROUNDS; i++)
        CHECK(lat[i] < 100);
    redisFree(c);
    dlock_store_close(s);
    dlock_store_close(s2);
}

/* Many waiters, on several handles, for one name: how many attempts does
 * one release cause?  Each handle should wake one waiter per release, not
 * all of them. */
static void t_stampede(void)
{
    enum { HANDLES = 4, PER = 4, N = HANDLES * PER };
    dlock_store *hs[HANDLES], *s = must_open(url);
    redisContext *c = raw_open(url);
    struct waiter w[N];
    pthread_t t[N];
    dlock_options o = opts(0, 10000, 1);
    dlock_lock *a;
    long long before, after;
    char key[600];
    int got = 0;

    snprintf(key, sizeof(key), "dlock:%s", nm("crowd"));
    for (int i = 0; i < HANDLES; i++)
        hs[i] = must_open(url);
    CHECK_RC(dlock_acquire(&a, s, nm("crowd"), &o), DLOCK_OK);
    for (int i = 0; i < N; i++) {
        w[i] = (struct waiter){hs[i % HANDLES], nm("crowd"), 0, -99, 0, NULL};
        CHECK(pthread_create(&t[i], NULL, waiter_main, &w[i]) == 0);
    }
    CHECK(await_subscribers(c, key, HANDLES));
    /* Subscribed is not yet asleep (the attempt after subscribing is
     * still to come): this pause only keeps those attempts out of the
     * count, it synchronises nothing. */
    sleep_ms(200);
    before = script_calls(c);
    CHECK_RC(dlock_release(a), DLOCK_OK);
    /* The waiters pass the lock on, one after another: each release wakes
     * at most one waiter per handle. */
    for (int i = 0; i < N; i++) {
        int64_t end = now_ms() + 5000;
        int found = -1;

        while (found < 0 && now_ms() < end) {
            for (int j = 0; j < N; j++)
                if (__atomic_load_n(&w[j].done, __ATOMIC_SEQ_CST) != 0 &&
                    w[j].lock != NULL) {
                    found = j;
                    break;
                }
            if (found < 0)
                sleep_ms(1);
        }
        CHECK(found >= 0);
        pthread_join(t[found], NULL);
        CHECK_RC(w[found].rc, DLOCK_OK);
        CHECK_RC(dlock_release(w[found].lock), DLOCK_OK);
        w[found].lock = NULL;
        w[found].done = 0;
        got++;
    }
    after = script_calls(c);
    /* Releases are scripts too: N of them (plus the first). */
    printf("  %d waiters on %d handles: %.2f attempts per hand-off "
           "(all waking would be up to %d)\n",
           N, HANDLES, (double)(after - before - N - 1) / N, N);
    CHECK(got == N);
    CHECK(after - before - N - 1 <= (long long)N * (HANDLES + 2));
    redisFree(c);
    for (int i = 0; i < HANDLES; i++)
        dlock_store_close(hs[i]);
    dlock_store_close(s);
}

/* No polling: a waiter on a dlock holder with a long lease sleeps until a
 * release message or the lease end, it does not re-run its attempt every
 * so often.  Counted on the server: attempts during a 4.5 s wait. */
static void t_no_polling(void)
{
    dlock_store *s = must_open(url), *s2 = must_open(url);
    redisContext *c = raw_open(url);
    dlock_options o = opts(0, 30000, 1), w = opts(4500, 5000, 1);
    dlock_lock *a, *b;
    long long before, calls;

    CHECK_RC(dlock_acquire(&a, s, nm("nopoll"), &o), DLOCK_OK);
    before = script_calls(c);
    CHECK_RC(dlock_acquire(&b, s2, nm("nopoll"), &w), DLOCK_BUSY);
    calls = script_calls(c) - before;
    printf("  %lld attempts during a 4.5 s wait on a 30 s lease\n", calls);
    CHECK(calls <= 3);
    CHECK_RC(dlock_release(a), DLOCK_OK);
    redisFree(c);
    dlock_store_close(s);
    dlock_store_close(s2);
}

/* Keys under the prefix that are not locks (another application's hash,
 * say) neither break list nor appear in it. */
static void t_foreign_keys_in_list(void)
{
    dlock_options o = opts(0, 5000, 1);
    dlock_store *s = must_open(url);
    redisContext *c = raw_open(url);
    dlock_lock *l;
    char key[600];
    int n = 0;

    snprintf(key, sizeof(key), "dlock:%s", nm("list/hash"));
    CHECK(strcmp(raw_str(c, "HSET %s f v", key), "1") == 0);
    CHECK_RC(dlock_acquire(&l, s, nm("list/lock"), &o), DLOCK_OK);
    CHECK_RC(dlock_list(s, nm("list/"), list_cb, &n), DLOCK_OK);
    CHECK(n == 1);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    freeReplyObject(redisCommand(c, "DEL %s", key));
    redisFree(c);
    dlock_store_close(s);
}

/* --- bad input: URLs, passwords, servers that are not Redis ---------- */

static void t_bad_urls(void)
{
    static const char *const bad[] = {
        "redis://:s3cret@127.0.0.1:99999",
        "redis://127.0.0.1/notadb",
        "redis://127.0.0.1/-1",
        "redis://127.0.0.1?bogus=1",
        "redis://127.0.0.1?db=x",
        "redis://127.0.0.1/1?db=2",
        "redis://127.0.0.1?prefix=A:&prefix=B:",
        "redis://127.0.0.1?prefix=A:&pre%66ix=A:",
        "redis-sentinel://127.0.0.1:1,/m",
        "redis-sentinel://,127.0.0.1:1/m",
        "redis-sentinel://127.0.0.1:1,,127.0.0.1:2/m",
        "redis-cluster://127.0.0.1:1,",
        "redis://127.0.0.1?timeout=abc",
        "redis://127.0.0.1?timeout=0",
        "redis://127.0.0.1?connect_timeout=5x",
        "unix://",
        "unix://host/path.sock",
        "redis://[::1",
        "redis://:s3cret@127.0.0.1:6379#frag",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dlock_store *s = (dlock_store *)&s;
        int rc = dlock_store_open(&s, bad[i]);

        if (rc != DLOCK_EINVAL)
            fprintf(stderr, "  %s -> %d %s\n", bad[i], rc, dlock_errmsg());
        CHECK(rc == DLOCK_EINVAL);
        CHECK(s == NULL);
        CHECK(strstr(dlock_errmsg(), "s3cret") == NULL);
    }
}

/* A listener on loopback that answers every connection with `reply` (or
 * nothing) and keeps it open until the test is over. */
struct fake {
    int lfd;
    int port;
    const char *reply;
    pthread_t t;
    int conns[16];
    int nconns;
};

static void *fake_main(void *arg)
{
    struct fake *f = arg;

    for (;;) {
        int fd = accept(f->lfd, NULL, NULL);

        if (fd < 0)
            return NULL;
        if (f->reply != NULL)
            (void)!write(fd, f->reply, strlen(f->reply));
        if (f->nconns < 16)
            f->conns[f->nconns++] = fd;
        else
            close(fd);
    }
}

static int fake_start(struct fake *f, const char *reply)
{
    struct sockaddr_in a = {0};
    socklen_t len = sizeof(a);

    memset(f, 0, sizeof(*f));
    f->reply = reply;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(f->lfd, 16) != 0 ||
        getsockname(f->lfd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    f->port = ntohs(a.sin_port);
    return pthread_create(&f->t, NULL, fake_main, f);
}

static void fake_stop(struct fake *f)
{
    shutdown(f->lfd, SHUT_RDWR);
    close(f->lfd);
    pthread_join(f->t, NULL);
    for (int i = 0; i < f->nconns; i++)
        close(f->conns[i]);
}

static void t_not_redis(void)
{
    static const char *const replies[] = {
        "HTTP/1.0 400 Bad Request\r\n\r\n", /* garbage */
        "+OK\r\n$99999999999\r\n",          /* a bulk that never ends */
        NULL,                               /* silence */
    };

    for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
        struct fake f;
        char u[128];
        dlock_store *s = NULL;
        int64_t t0;
        int rc;

        CHECK(fake_start(&f, replies[i]) == 0);
        snprintf(u, sizeof(u),
                 "redis://127.0.0.1:%d?timeout=300ms&connect_timeout=300ms",
                 f.port);
        t0 = now_ms();
        rc = dlock_store_open(&s, u);
        printf("  fake server %zu: %s after %lld ms: %s\n", i,
               dlock_strerror(rc), (long long)(now_ms() - t0), dlock_errmsg());
        CHECK(rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE);
        CHECK(s == NULL);
        CHECK(now_ms() - t0 < 2000);
        fake_stop(&f);
    }
    /* Nobody listening at all. */
    {
        struct fake f;
        char u[128];
        dlock_store *s = NULL;
        int port;

        CHECK(fake_start(&f, NULL) == 0);
        port = f.port;
        fake_stop(&f);
        snprintf(u, sizeof(u), "redis://127.0.0.1:%d", port);
        CHECK_RC(dlock_store_open(&s, u), DLOCK_EUNAVAIL);
    }
}

/* redis:// pointed at a Sentinel: the message says so and names the
 * scheme to use, without echoing dlock's Lua source (the Sentinel's
 * "unknown command 'SCRIPT', with args beginning with: ..."). */
static void t_sentinel_port(void)
{
    char d[] = "/tmp/dlock-sentinel-test.XXXXXX", conf[300], cmd[700];
    char u[128];
    struct fake f;
    dlock_store *s = NULL;
    redisContext *c = NULL;
    FILE *fp;
    int port, up = 0;

    CHECK(mkdtemp(d) != NULL);
    CHECK(fake_start(&f, NULL) == 0); /* a free port: bound, then freed */
    port = f.port;
    fake_stop(&f);
    snprintf(conf, sizeof(conf), "%s/sentinel.conf", d);
    fp = fopen(conf, "w");
    CHECK(fp != NULL);
    fprintf(fp,
            "port %d\nbind 127.0.0.1\ndaemonize yes\ndir %s\n"
            "pidfile %s/s.pid\nlogfile %s/s.log\n",
            port, d, d, d);
    fclose(fp);
    snprintf(cmd, sizeof(cmd), "redis-sentinel '%s'", conf);
    CHECK(system(cmd) == 0);
    /* Readiness: a bounded wait for its PING. */
    for (int i = 0; i < 200 && !up; i++) {
        struct timeval tv = {1, 0};
        redisReply *r;

        c = redisConnectWithTimeout("127.0.0.1", port, tv);
        r = c != NULL && !c->err ? redisCommand(c, "PING") : NULL;
        up = r != NULL && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        redisFree(c);
        if (!up)
            sleep_ms(50);
    }
    EXPECT(up);
    snprintf(u, sizeof(u), "redis://127.0.0.1:%d", port);
    EXPECT_RC(dlock_store_open(&s, u), DLOCK_ESTORE);
    EXPECT(s == NULL);
    printf("  %s\n", dlock_errmsg());
    EXPECT(strstr(dlock_errmsg(), "Sentinel") != NULL);
    EXPECT(strstr(dlock_errmsg(), "redis-sentinel://") != NULL);
    EXPECT(strstr(dlock_errmsg(), "redis.call") == NULL);
    snprintf(cmd, sizeof(cmd),
             "kill $(cat '%s/s.pid') 2>/dev/null; "
             "rm -rf '%s'",
             d, d);
    (void)!system(cmd);
}

/* --- faults with our own servers ------------------------------------ */

static void t_passwords(void)
{
    char u[256], good[300], bad[300], none[300];
    const char *port;
    dlock_options o = opts(0, 5000, 1);
    dlock_store *s = NULL;
    dlock_lock *l;

    own_server(u, sizeof(u));
    CHECK(script(good, sizeof(good), "ctl %s start-auth auth Pa55w0rd", dir) ==
          0);
    CHECK(strstr(good, "Pa55w0rd@") != NULL);
    port = strrchr(good, ':') + 1;
    snprintf(bad, sizeof(bad), "redis://:Wr0ngPass@127.0.0.1:%s", port);
    snprintf(none, sizeof(none), "redis://127.0.0.1:%s", port);

    CHECK(dlock_store_open(&s, bad) == DLOCK_ESTORE);
    printf("  wrong password: %s\n", dlock_errmsg());
    CHECK(s == NULL);
    CHECK(strstr(dlock_errmsg(), "Wr0ngPass") == NULL);
    CHECK(dlock_store_open(&s, none) != DLOCK_OK);
    printf("  no password: %s\n", dlock_errmsg());
    CHECK(s == NULL);
    CHECK_RC(dlock_store_open(&s, good), DLOCK_OK);
    CHECK(strstr(dlock_store_url(s), "Pa55w0rd") == NULL);
    CHECK_RC(dlock_acquire(&l, s, nm("auth"), &o), DLOCK_OK);
    o.wait_ms = 200; /* the subscriber connection authenticates too */
    {
        dlock_lock *l2;
        dlock_store *s2 = must_open(good);

        CHECK_RC(dlock_acquire(&l2, s2, nm("auth"), &o), DLOCK_BUSY);
        dlock_store_close(s2);
    }
    CHECK_RC(dlock_release(l), DLOCK_OK);
    dlock_store_close(s);
    own_server_stop();
}

/* A user whose ACL allows keys and scripts but no pub/sub channels (the
 * Redis 7 default for new users): locking and releasing still work, and
 * waiting falls back to polling instead of waiting for a subscription
 * that never comes. */
static void t_acl_no_channels(void)
{
    char u[256], lim[300], *port;
    redisContext *c;
    dlock_options o = opts(2000, 5000, 1);
    dlock_store *s;
    dlock_lock *l;
    int64_t t0;

    own_server(u, sizeof(u));
    c = raw_open(u);
    CHECK(strcmp(raw_str(c, "ACL SETUSER lim on >limpw ~* +@all "
                            "resetchannels"),
                 "OK") == 0);
    redisFree(c);
    port = strrchr(u, ':') + 1;
    snprintf(lim, sizeof(lim), "redis://lim:limpw@127.0.0.1:%s", port);
    s = must_open(lim);
    t0 = now_ms();
    CHECK_RC(dlock_acquire(&l, s, nm("acl"), &o), DLOCK_OK);
    printf("  free lock, wait 2 s, no channel rights: %lld ms\n",
           (long long)(now_ms() - t0));
    CHECK(now_ms() - t0 < 500);
    /* Without release messages a waiter still gets the lock soon after
     * the release (it polls), and a finite wait ends at its deadline. */
    {
        dlock_store *s2 = must_open(lim);
        struct waiter w = {s2, nm("acl"), 0, -99, 0, NULL};
        dlock_options w0 = opts(300, 5000, 1);
        dlock_lock *l2;
        pthread_t t;
        int64_t released;

        t0 = now_ms();
        CHECK_RC(dlock_acquire(&l2, s2, nm("acl"), &w0), DLOCK_BUSY);
        CHECK(now_ms() - t0 >= 250 && now_ms() - t0 < 1000);
        CHECK(pthread_create(&t, NULL, waiter_main, &w) == 0);
        sleep_ms(300); /* let it wait; not synchronisation */
        released = now_ms();
        CHECK_RC(dlock_release(l), DLOCK_OK);
        pthread_join(t, NULL);
        CHECK_RC(w.rc, DLOCK_OK);
        printf("  hand-off without channel rights: %lld ms\n",
               (long long)(w.done - released));
        CHECK(w.done - released < 1000);
        CHECK_RC(dlock_release(w.lock), DLOCK_OK);
        dlock_store_close(s2);
    }
    dlock_store_close(s);
    own_server_stop();
}

/* --- foreign holders whose tokens look like dlock's ---------------- */

/* The other client: once the waiter waits (a barrier on its
 * subscriptions), hold on for `hold_ms` more, then compare-and-delete its
 * token (no PUBLISH: it is not dlock) and say when. */
struct deleter {
    const char *url, *key, *token;
    int keyspace; /* also wait for the keyspace subscription */
    int64_t hold_ms;
    int64_t deleted;    /* when the DEL had been answered */
    long long attempts; /* the waiter's scripts while we held on */
    int ok;
};

static void *deleter_main(void *arg)
{
    static const char cad[] =
        "if redis.call('get', KEYS[1]) == ARGV[1] then "
        "return redis.call('del', KEYS[1]) else return 0 end";
    struct deleter *d = arg;
    redisContext *c = raw_open(d->url);
    char ks[700];
    long long before;

    snprintf(ks, sizeof(ks), "__keyspace@0__:%s", d->key);
    d->ok = await_subscribers(c, d->key, 1) &&
            (!d->keyspace || await_channel(c, ks, 1));
    before = script_calls(c);
    sleep_ms(d->hold_ms); /* the scenario: the holder works a while */
    d->attempts = script_calls(c) - before;
    if (strcmp(raw_str(c, "EVAL %s 1 %s %s", cad, d->key, d->token), "1") != 0)
        d->ok = 0;
    d->deleted = now_ms();
    redisFree(c);
    return NULL;
}

/* A client that is not dlock but whose token is 32 hex digits (like a
 * dlock owner token) holds the lock with an 8 s lease and lets go after
 * 300 ms by compare-and-delete, without publishing.  A dlock waiter must
 * have the lock soon after, not at the lease end: with keyspace
 * notifications on the server it is woken by the "del" event, without
 * them it polls (50..250 ms).  acl: notifications are on, but dlock's
 * user may not subscribe to keyspace channels (only to &dlock:*). */
enum { FR_POLL, FR_KEYSPACE, FR_KEYSPACE_ACL };

static void foreign_release(int mode)
{
    enum { ROUNDS = 5 };
    int keyspace = mode != FR_POLL;
    char u[256], su[300], key[600], token[33], saved[128];
    redisContext *c;
    dlock_store *s;
    int64_t worst = 0, sum = 0;

    own_server(u, sizeof(u));
    c = raw_open(u);
    snprintf(su, sizeof(su), "%s", u);
    if (mode == FR_KEYSPACE_ACL) {
        CHECK(strcmp(raw_str(c, "ACL SETUSER lim on >limpw ~* +@all "
                                "resetchannels &dlock:*"),
                     "OK") == 0);
        snprintf(su, sizeof(su), "redis://lim:limpw@127.0.0.1:%s",
                 strrchr(u, ':') + 1);
    }
    {
        redisReply *r = redisCommand(c, "CONFIG GET notify-keyspace-events");

        saved[0] = '\0';
        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->str != NULL)
            snprintf(saved, sizeof(saved), "%s", r->element[1]->str);
        freeReplyObject(r);
    }
    CHECK(strcmp(raw_str(c, "CONFIG SET notify-keyspace-events %s",
                         keyspace ? "Kgx" : ""),
                 "OK") == 0);
    s = must_open(su);
    snprintf(key, sizeof(key), "dlock:%s", nm("lookalike"));
    for (int i = 0; i < ROUNDS; i++) {
        struct deleter d = {u, key, token, mode == FR_KEYSPACE, 300, 0, 0, 0};
        dlock_options o = opts(5000, 5000, 1);
        dlock_lock *l = NULL;
        pthread_t t;
        int64_t got, lat;
        int rc;

        hex_token(token);
        CHECK(strcmp(raw_str(c, "SET %s %s NX PX 8000", key, token), "OK") ==
              0);
        CHECK(pthread_create(&t, NULL, deleter_main, &d) == 0);
        rc = dlock_acquire(&l, s, nm("lookalike"), &o);
        got = now_ms();
        pthread_join(t, NULL);
        EXPECT(d.ok);
        EXPECT_RC(rc, DLOCK_OK);
        if (rc != DLOCK_OK)
            break; /* waited out: one round says enough */
        lat = got - d.deleted;
        printf("  round %d: acquired %lld ms after the foreign DEL, %lld "
               "attempts in the 300 ms before it\n",
               i, (long long)lat, d.attempts);
        EXPECT(lat < 1000);
        /* Polling is bounded (>= 50 ms apart); notifications need none. */
        EXPECT(d.attempts <= (mode == FR_KEYSPACE ? 2 : 8));
        EXPECT_RC(dlock_release(l), DLOCK_OK);
        sum += lat;
        if (lat > worst)
            worst = lat;
    }
    printf("  foreign release -> acquire (%s): mean %.1f ms, worst %lld "
           "ms\n",
           mode == FR_KEYSPACE ? "keyspace notifications" : "polling",
           (double)sum / ROUNDS, (long long)worst);
    if (mode == FR_KEYSPACE_ACL) {
        /* The refused keyspace SUBSCRIBE did not turn off release
         * messages: waiting on a dlock holder still does not poll. */
        dlock_store *s2 = must_open(su);
        dlock_options o = opts(0, 30000, 1), w = opts(1500, 5000, 1);
        dlock_lock *a = NULL, *b = NULL;
        long long before, calls;

        EXPECT_RC(dlock_acquire(&a, s2, nm("lookalike"), &o), DLOCK_OK);
        before = script_calls(c);
        EXPECT_RC(dlock_acquire(&b, s, nm("lookalike"), &w), DLOCK_BUSY);
        calls = script_calls(c) - before;
        printf("  then %lld attempts during a 1.5 s wait on a dlock "
               "holder\n",
               calls);
        EXPECT(calls <= 3);
        if (a != NULL)
            EXPECT_RC(dlock_release(a), DLOCK_OK);
        dlock_store_close(s2);
    }
    CHECK(strcmp(raw_str(c, "CONFIG SET notify-keyspace-events %s", saved),
                 "OK") == 0);
    dlock_store_close(s);
    redisFree(c);
    own_server_stop();
}

static void t_foreign_lookalike_poll(void)
{
    foreign_release(FR_POLL);
}

static void t_foreign_lookalike_keyspace(void)
{
    foreign_release(FR_KEYSPACE);
}

static void t_foreign_lookalike_keyspace_acl(void)
{
    foreign_release(FR_KEYSPACE_ACL);
}

static int lost_pipe[2];
static void on_lost(dlock_lock *l, void *p)
{
    (void)l;
    (void)p;
    (void)!write(lost_pipe[1], "L", 1);
}

/* The server goes away and comes back empty (no persistence): calls fail
 * with EUNAVAIL within the timeout (no hang), a waiter gives up with an
 * error, the holder learns its lock is lost, status tells the truth. */
static void t_server_gone(void)
{
    char u[256], tu[300];
    dlock_options o = opts(0, 3000, 1);
    dlock_store *s, *s2;
    dlock_lock *a, *b;
    dlock_info info;
    struct waiter w;
    pthread_t t;
    struct pollfd p;
    uint64_t fence_before;
    int64_t t0;
    char ch;

    own_server(u, sizeof(u));
    snprintf(tu, sizeof(tu), "%s?timeout=1s&connect_timeout=1s", u);
    s = must_open(tu);
    s2 = must_open(tu);
    CHECK(pipe(lost_pipe) == 0);
    o.on_lost = on_lost;
    CHECK_RC(dlock_acquire(&a, s, nm("gone"), &o), DLOCK_OK);
    fence_before = dlock_fence(a);
    /* A waiter (10 s) on another handle. */
    w = (struct waiter){s2, nm("gone"), 0, -99, 0, NULL};
    CHECK(pthread_create(&t, NULL, waiter_main, &w) == 0);
    {
        redisContext *c = raw_open(u);
        char key[600];

        snprintf(key, sizeof(key), "dlock:%s", nm("gone"));
        CHECK(await_subscribers(c, key, 1));
        redisFree(c);
    }
    CHECK(script(NULL, 0, "stop %s", dir) == 0);
    /* The holder, within its lease, cannot reach the store: an error,
     * promptly, not LOST (it may still be held) and not OK. */
    t0 = now_ms();
    CHECK_RC(dlock_assert_ttl(a, 0), DLOCK_EUNAVAIL);
    CHECK(now_ms() - t0 < 2500);
    CHECK_RC(test_status(s2, nm("gone"), &info), DLOCK_EUNAVAIL);
    pthread_join(t, NULL);
    printf("  waiter after the server stopped: %s in %lld ms\n",
           dlock_strerror(w.rc), (long long)(now_ms() - t0));
    /* It asked to wait 10 s: it waits for the server too, and says the
     * store is unreachable only at its deadline (not a second after the
     * server went, as 0.1 did). */
    CHECK(w.rc == DLOCK_EUNAVAIL);
    CHECK(now_ms() - t0 > 6000 && now_ms() - t0 < 13000);
    /* Meanwhile the holder's lease ran out unrenewed: LOST from then on,
     * whatever the server says when it is back. */
    CHECK(dlock_is_lost(a));

    /* Back, empty. */
    CHECK(script(NULL, 0, "ctl %s restart", dir) == 0);
    p.fd = lost_pipe[0];
    p.events = POLLIN;
    CHECK(poll(&p, 1, 5000) == 1); /* the renewal finds the key gone */
    CHECK(read(lost_pipe[0], &ch, 1) == 1 && ch == 'L');
    CHECK_RC(test_status(s2, nm("gone"), &info), DLOCK_OK);
    CHECK(!info.held);
    CHECK_RC(dlock_acquire(&b, s2, nm("gone"), &o), DLOCK_OK);
    printf("  fence before the restart %llu, after %llu%s\n",
           (unsigned long long)fence_before, (unsigned long long)dlock_fence(b),
           dlock_fence(b) > fence_before ? "" : " (went back: no persistence)");
    CHECK_RC(dlock_release(a), DLOCK_LOST);
    CHECK_RC(dlock_release(b), DLOCK_OK);
    dlock_store_close(s);
    dlock_store_close(s2);
    close(lost_pipe[0]);
    close(lost_pipe[1]);
    own_server_stop();
}

/* rediss:// (url: a server of `server-redis.sh start-tls`, whose URL
 * ends with ?cacert=DIR/tls-certs/ca.crt): the library's own codes for
 * what tls.sh checks through the CLI.  A certificate refused is
 * DLOCK_EUNAVAIL, never a store opened some other way; a bad URL
 * DLOCK_EINVAL. */
static void t_tls_codes(void)
{
    static const struct {
        const char *add; /* appended to the URL */
        int other_ca;    /* ca.crt -> other-ca.crt */
        int rc;
        const char *msg;
    } cases[] = {
        {"", 0, DLOCK_OK, NULL},
        {"&sni=localhost", 0, DLOCK_OK, NULL},
        {"", 1, DLOCK_EUNAVAIL, "self-signed certificate in certificate chain"},
        {"&sni=other.example", 0, DLOCK_EUNAVAIL, "hostname mismatch"},
        {"&tls=1", 0, DLOCK_EINVAL, "TLS is spelled rediss://"},
        {"&cert=/nonexistent.crt", 0, DLOCK_EINVAL, "go together"},
        {"&replicas=1&replicas_timeout=0", 0, DLOCK_EINVAL, "replicas_timeout"},
    };
    char u[1024];

    CHECK(strncmp(url, "rediss://", 9) == 0 && strstr(url, "/ca.crt") != NULL);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        dlock_store *s = NULL;
        int rc;

        if (cases[i].other_ca) {
            const char *ca = strstr(url, "/ca.crt");

            snprintf(u, sizeof(u), "%.*s/other-ca.crt%s%s", (int)(ca - url),
                     url, ca + 7, cases[i].add);
        } else
            snprintf(u, sizeof(u), "%s%s", url, cases[i].add);
        rc = dlock_store_open(&s, u);
        if (rc != cases[i].rc ||
            (cases[i].msg && strstr(dlock_errmsg(), cases[i].msg) == NULL))
            fprintf(stderr, "  %s -> %d %s\n", u, rc, dlock_errmsg());
        CHECK(rc == cases[i].rc);
        CHECK(cases[i].msg == NULL ||
              strstr(dlock_errmsg(), cases[i].msg) != NULL);
        CHECK((s != NULL) == (rc == DLOCK_OK));
        dlock_store_close(s);
    }
}

/* Run records (runs.c, docs/stores/redis.md): the documented layout (a
 * list of "fence start end result status pid host", newest first, and
 * a summary hash, neither expiring); the scripts are not loaded on
 * connect but EVALSHA finds them once sent (their sha is the server's);
 * a plain cycle leaves the records alone and costs what it did; entries
 * someone else pushed are passed over; last_runs takes the prefix's
 * glob characters literally.  On a server of its own (EVAL counts). */
struct seen_runs {
    int n;
    char names[4][DLOCK_NAME_MAX + 1];
    int status[4];
};

static int seen_cb(const dlock_run *r, void *p)
{
    struct seen_runs *sr = p;

    if (sr->n < 4) {
        snprintf(sr->names[sr->n], sizeof(sr->names[0]), "%s", r->name);
        sr->status[sr->n] = r->status;
    }
    sr->n++;
    return 0;
}

static long long eval_calls(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    const char *p = r != NULL && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, "cmdstat_eval:calls=")
                        : NULL;
    long long n = p != NULL ? atoll(p + strlen("cmdstat_eval:calls=")) : 0;

    freeReplyObject(r);
    return n;
}

static void t_runs_keys(void)
{
    char u[256], key[600], runs[620], sum[620], host[256] = "", rhost[256];
    dlock_options o = opts(0, 5000, 0);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    struct seen_runs sr;
    unsigned long long f;
    long long st, en, res, stat, pid, evals, calls;
    dlock_store *s;
    redisContext *c;
    dlock_lock *l;
    int go = 0;

    own_server(u, sizeof(u));
    s = must_open(u);
    c = raw_open(u);
    gethostname(host, sizeof(host) - 1);
    snprintf(key, sizeof(key), "dlock:%s", nm("rk"));
    snprintf(runs, sizeof(runs), "%s\xffruns", key);
    snprintf(sum, sizeof(sum), "%s\xffrun", key);
    CHECK_RC(dlock_acquire(&l, s, nm("rk"), &o), DLOCK_OK);
    CHECK_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
    CHECK(go == 1);
    CHECK(strcmp(raw_str(c, "TYPE %b", runs, strlen(runs)), "list") == 0);
    CHECK(raw_int(c, "LLEN %b", runs, strlen(runs)) == 1);
    CHECK(sscanf(raw_str(c, "LINDEX %b 0", runs, strlen(runs)),
                 "%llu %lld %lld %lld %lld %lld %255s", &f, &st, &en, &res,
                 &stat, &pid, rhost) == 7);
    CHECK(f == dlock_fence(l) && en == 0 && res == DLOCK_RUN_RUNNING &&
          stat == -1 && pid == (long long)getpid());
    CHECK(strcmp(rhost, host) == 0);
    CHECK(st >= (long long)(server_us(c) / 1000) - 5000);
    CHECK(raw_int(c, "HGET %b start", sum, strlen(sum)) == st);
    CHECK(raw_int(c, "PTTL %b", runs, strlen(runs)) == -1);
    CHECK(raw_int(c, "PTTL %b", sum, strlen(sum)) == -1);
    CHECK_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
    CHECK(sscanf(raw_str(c, "LINDEX %b 0", runs, strlen(runs)),
                 "%llu %lld %lld %lld %lld", &f, &st, &en, &res, &stat) == 5);
    CHECK(en >= st && res == DLOCK_RUN_EXITED && stat == 0);
    CHECK(strcmp(raw_str(c, "HGET %b ok", sum, strlen(sum)),
                 raw_str(c, "LINDEX %b 0", runs, strlen(runs))) == 0);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    /* The next run: EVALSHA finds the script the first one sent. */
    evals = eval_calls(c);
    CHECK_RC(dlock_acquire(&l, s, nm("rk"), &o), DLOCK_OK);
    CHECK_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
    CHECK_RC(dlock_run_end(l, DLOCK_RUN_SIGNALED, 15), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK(eval_calls(c) == evals);
    CHECK(raw_int(c, "LLEN %b", runs, strlen(runs)) == 2);
    /* A plain cycle: two scripts, the records untouched. */
    calls = script_calls(c);
    CHECK_RC(dlock_acquire(&l, s, nm("rk"), &o), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK(script_calls(c) - calls == 2);
    CHECK(raw_int(c, "LLEN %b", runs, strlen(runs)) == 2);
    /* Someone else's entry is passed over. */
    CHECK(raw_int(c, "LPUSH %b %s", runs, strlen(runs), "not a run") == 3);
    memset(&sr, 0, sizeof(sr));
    CHECK_RC(dlock_history(s, nm("rk"), 0, seen_cb, &sr), DLOCK_OK);
    CHECK(sr.n == 2 && sr.status[0] == 15 && sr.status[1] == 0);
    /* Glob characters in a prefix are literal. */
    CHECK_RC(dlock_acquire(&l, s, nm("g[a]*?x"), &o), DLOCK_OK);
    CHECK_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
    CHECK_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 7), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    CHECK_RC(dlock_acquire(&l, s, nm("ga-zz"), &o), DLOCK_OK);
    CHECK_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    memset(&sr, 0, sizeof(sr));
    CHECK_RC(dlock_last_runs(s, nm("g[a]*?"), seen_cb, &sr), DLOCK_OK);
    CHECK(sr.n == 1 && strcmp(sr.names[0], nm("g[a]*?x")) == 0 &&
          sr.status[0] == 7);
    memset(&sr, 0, sizeof(sr));
    CHECK_RC(dlock_last_runs(s, run_id, seen_cb, &sr), DLOCK_OK);
    if (sr.n != 3)
        printf("  last_runs(%s): %d runs\n", run_id, sr.n);
    CHECK(sr.n == 3);
    /* A shared holder and a semaphore's: theirs while their place is
     * live, LOST (nothing written) once it is gone. */
    for (int kind = 0; kind < 2; kind++) {
        const char *name = nm(kind ? "rk-sem" : "rk-shared");
        dlock_options ko = opts(0, 5000, 0);
        dlock_lock *l2, *l3;

        ko.shared = kind == 0;
        ko.limit = kind ? 3 : 1;
        CHECK_RC(dlock_acquire(&l, s, name, &ko), DLOCK_OK);
        CHECK_RC(dlock_acquire(&l2, s, name, &ko), DLOCK_OK);
        CHECK_RC(dlock_acquire(&l3, s, name, &ko), DLOCK_OK);
        CHECK_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
        CHECK(go == 1);
        CHECK_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
        CHECK_RC(dlock_release(l2), DLOCK_OK);
        CHECK_RC(dlock_force_release(NULL, s, name), DLOCK_OK);
        /* A holder whose place is gone (one that has begun no run: one
         * run per acquisition) records nothing. */
        CHECK_RC(dlock_run_begin(l3, &rule, &go, NULL), DLOCK_LOST);
        CHECK(go == 0);
        dlock_release(l3);
        dlock_release(l);
        memset(&sr, 0, sizeof(sr));
        CHECK_RC(dlock_history(s, name, 0, seen_cb, &sr), DLOCK_OK);
        CHECK(sr.n == 1 && sr.status[0] == 0);
    }
    /* A restart without persistence forgets the records, as
     * docs/stores/redis.md says: --once runs again. */
    rule.once = 1;
    CHECK_RC(dlock_acquire(&l, s, nm("rk"), &o), DLOCK_OK);
    CHECK_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
    CHECK(go == 0); /* the success above */
    CHECK_RC(dlock_release(l), DLOCK_OK);
    redisFree(c);
    CHECK(script(NULL, 0, "ctl %s restart", dir) == 0);
    CHECK_RC(dlock_acquire(&l, s, nm("rk"), &o), DLOCK_OK);
    CHECK_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
    CHECK(go == 1);
    CHECK_RC(dlock_release(l), DLOCK_OK);
    dlock_store_close(s);
}

/* Runs kept per name (dlock_keep_runs(); docs/stores/redis.md, "Runs
 * kept"): a name keeping DLOCK_RUNS_KEPT_MAX, its list filled to that
 * (planted in dlock's own format, older fences than any real one) and
 * run over it, keeps exactly that many, the newest, and history reads
 * them all in order across its pages; a run costs the server about what
 * it does with 20 kept (INFO commandstats, not a wall clock).  A keep
 * field planted out of range or of another form reads as the default
 * and trims to it; a summary of another type reads as the default and
 * refuses a setting, nothing written.  On a server of its own. */
struct keep_seen {
    unsigned n, bad;
    uint64_t first, prev, last;
    /* runs to make by another handle once told is at: into a page */
    dlock_store *s2;
    redisContext *c;
    const char *name;
    unsigned at;
    int extra;
};

static long long keep_cycles(dlock_store *s, redisContext *c, const char *name,
                             int n);

static int keep_cb(const dlock_run *r, void *p)
{
    struct keep_seen *k = p;

    if (k->n == 0)
        k->first = r->fence;
    else if (r->fence >= k->prev)
        k->bad++;
    k->prev = k->last = r->fence;
    k->n++;
    if (k->s2 != NULL && k->n == k->at)
        keep_cycles(k->s2, k->c, k->name, k->extra);
    return 0;
}

/* Planted records of fences from down to to (> 0), at the list's tail
 * (the oldest end), pipelined. */
static void plant_runs(redisContext *c, const char *runs, long long from,
                       long long to)
{
    long long n = 0;

    for (long long f = from; f >= to; f--, n++) {
        char rec[64];

        snprintf(rec, sizeof(rec), "%lld 1000 2000 1 0 42 planted", f);
        redisAppendCommand(c, "RPUSH %b %s", runs, strlen(runs), rec);
    }
    for (; n > 0; n--) {
        redisReply *r = NULL;

        if (redisGetReply(c, (void **)&r) != REDIS_OK)
            failures++;
        freeReplyObject(r);
    }
}

/* usec the server spent in EVALSHA so far. */
static long long evalsha_usec(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    const char *p = r != NULL && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, "cmdstat_evalsha:")
                        : NULL;
    const char *u = p != NULL ? strstr(p, "usec=") : NULL;
    long long n = u != NULL ? atoll(u + strlen("usec=")) : 0;

    freeReplyObject(r);
    return n;
}

/* n runs of name, each begun and ended; the server's EVALSHA usec they
 * took. */
static long long keep_cycles(dlock_store *s, redisContext *c, const char *name,
                             int n)
{
    dlock_options o = opts(0, 5000, 0);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    long long t0 = evalsha_usec(c);

    for (int i = 0; i < n; i++) {
        dlock_lock *l;
        int go = 0;

        EXPECT_RC(dlock_acquire(&l, s, name, &o), DLOCK_OK);
        if (failures > 0)
            break;
        EXPECT_RC(dlock_run_begin(l, &rule, &go, NULL), DLOCK_OK);
        EXPECT(go == 1);
        EXPECT_RC(dlock_run_end(l, DLOCK_RUN_EXITED, 0), DLOCK_OK);
        EXPECT_RC(dlock_release(l), DLOCK_OK);
    }
    return evalsha_usec(c) - t0;
}

static void t_runs_keep(void)
{
    static const char *const planted[] = {
        "0",     "-5",  "99999999999999999999",
        "10001", "abc", "1e3",
        "nan",   "inf", "0x10",
        "007",   " 30", ""};
    char u[256], key[600], runs[620], sum[620], other[620], osum[620];
    const char *name = nm("keep-max"), *small = nm("keep-20");
    struct keep_seen ks;
    long long big_us, small_us;
    unsigned n = 0;
    dlock_store *s;
    redisContext *c;

    own_server(u, sizeof(u));
    s = must_open(u);
    c = raw_open(u);
    snprintf(key, sizeof(key), "dlock:%s", name);
    snprintf(runs, sizeof(runs), "%s\xffruns", key);
    snprintf(sum, sizeof(sum), "%s\xffrun", key);
    /* The most a name keeps, recorded where the docs say. */
    CHECK_RC(dlock_keep_runs(s, name, DLOCK_RUNS_KEPT_MAX), DLOCK_OK);
    CHECK(raw_int(c, "HGET %b keep", sum, strlen(sum)) == DLOCK_RUNS_KEPT_MAX);
    /* Full with older runs, then run over it: exactly the most kept,
     * the newest (the real runs first, then planted fences downwards),
     * all told by history across its pages, newest first. */
    plant_runs(c, runs, DLOCK_RUNS_KEPT_MAX, 1);
    CHECK(raw_int(c, "LLEN %b", runs, strlen(runs)) == DLOCK_RUNS_KEPT_MAX);
    big_us = keep_cycles(s, c, name, 50);
    CHECK(raw_int(c, "LLEN %b", runs, strlen(runs)) == DLOCK_RUNS_KEPT_MAX);
    memset(&ks, 0, sizeof(ks));
    CHECK_RC(dlock_history(s, name, 0, keep_cb, &ks), DLOCK_OK);
    CHECK(ks.n == DLOCK_RUNS_KEPT_MAX && ks.bad == 0);
    CHECK(ks.first > DLOCK_RUNS_KEPT_MAX); /* a real run's fence */
    CHECK(ks.last == 51);                  /* planted 1..50 dropped */
    memset(&ks, 0, sizeof(ks));
    CHECK_RC(dlock_history(s, name, 1234, keep_cb, &ks), DLOCK_OK);
    CHECK(ks.n == 1234 && ks.bad == 0);
    /* Runs that go in front while history reads (in its second page):
     * none told twice or out of order, only the oldest they pushed out
     * missing. */
    memset(&ks, 0, sizeof(ks));
    ks.s2 = must_open(u);
    ks.c = c;
    ks.name = name;
    ks.at = 1500;
    ks.extra = 3;
    CHECK_RC(dlock_history(s, name, 0, keep_cb, &ks), DLOCK_OK);
    dlock_store_close(ks.s2);
    if (ks.n != DLOCK_RUNS_KEPT_MAX - 3 || ks.bad != 0)
        printf("  history with runs in between: %u told, %u out of order\n",
               ks.n, ks.bad);
    CHECK(ks.n == DLOCK_RUNS_KEPT_MAX - 3 && ks.bad == 0);
    CHECK(raw_int(c, "LLEN %b", runs, strlen(runs)) == DLOCK_RUNS_KEPT_MAX);
    /* The same runs with the default kept: a run costs the server about
     * the same (the old whole-list walk cost some 100 times more). */
    snprintf(other, sizeof(other), "dlock:%s\xffruns", small);
    snprintf(osum, sizeof(osum), "dlock:%s\xffrun", small);
    plant_runs(c, other, DLOCK_RUNS_KEPT, 1);
    small_us = keep_cycles(s, c, small, 50);
    CHECK(raw_int(c, "LLEN %b", other, strlen(other)) == DLOCK_RUNS_KEPT);
    printf("  50 runs: %lld us kept %d, %lld us kept %d\n", big_us,
           DLOCK_RUNS_KEPT_MAX, small_us, DLOCK_RUNS_KEPT);
    CHECK(big_us < 4 * small_us + 20000);
    /* Planted settings: the default, and the next run trims to it. */
    for (size_t i = 0; i < sizeof(planted) / sizeof(planted[0]); i++) {
        long long len = raw_int(c, "LLEN %b", runs, strlen(runs));

        if (len <= DLOCK_RUNS_KEPT + 5)
            plant_runs(c, runs, 30, 1);
        CHECK(raw_int(c, "HSET %b keep %s", sum, strlen(sum), planted[i]) == 0);
        CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
        if (n != DLOCK_RUNS_KEPT)
            printf("  keep '%s' read as %u\n", planted[i], n);
        CHECK(n == DLOCK_RUNS_KEPT);
        keep_cycles(s, c, name, 1);
        CHECK(raw_int(c, "LLEN %b", runs, strlen(runs)) == DLOCK_RUNS_KEPT);
    }
    /* In range it is trusted; the largest too. */
    CHECK(raw_int(c, "HSET %b keep 10000", sum, strlen(sum)) == 0);
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    CHECK(n == DLOCK_RUNS_KEPT_MAX);
    /* A summary of another type: the default read, a setting refused
     * with nothing written (the list as it was). */
    CHECK(raw_int(c, "DEL %b", sum, strlen(sum)) == 1);
    CHECK(strcmp(raw_str(c, "SET %b planted", sum, strlen(sum)), "OK") == 0);
    CHECK_RC(dlock_kept_runs(&n, s, name), DLOCK_OK);
    CHECK(n == DLOCK_RUNS_KEPT);
    CHECK_RC(dlock_keep_runs(s, name, 3), DLOCK_ESTORE);
    CHECK(raw_int(c, "LLEN %b", runs, strlen(runs)) == DLOCK_RUNS_KEPT);
    CHECK(strcmp(raw_str(c, "GET %b", sum, strlen(sum)), "planted") == 0);
    /* A list of another type likewise. */
    CHECK(raw_int(c, "DEL %b", osum, strlen(osum)) == 1);
    CHECK(raw_int(c, "DEL %b", other, strlen(other)) == 1);
    CHECK(strcmp(raw_str(c, "SET %b planted", other, strlen(other)), "OK") ==
          0);
    CHECK_RC(dlock_keep_runs(s, small, 3), DLOCK_ESTORE);
    CHECK(raw_int(c, "EXISTS %b", osum, strlen(osum)) == 0);
    redisFree(c);
    dlock_store_close(s);
}

/* --- election ------------------------------------------------------- */

/* An observer on a thread of its own: each change it reports, and how
 * dlock_observe() ended. */
struct watcher {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    dlock_store *s;
    const char *name;
    dlock_cancel *cancel;
    int n, held[64], done, rc;
    int64_t at[64];
};

static int watcher_cb(const dlock_info *info, void *payload)
{
    struct watcher *w = payload;

    pthread_mutex_lock(&w->mu);
    if (w->n < 64) {
        w->held[w->n] = info->held;
        w->at[w->n] = now_ms();
        w->n++;
    }
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

static void *watcher_main(void *arg)
{
    struct watcher *w = arg;
    int rc = dlock_observe(w->s, w->name, watcher_cb, w, w->cancel);

    pthread_mutex_lock(&w->mu);
    w->rc = rc;
    w->done = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Until the watcher has reported n changes (or ended), at most ms:
 * whether it has. */
static int watcher_wait(struct watcher *w, int n, int64_t ms)
{
    int64_t end = now_ms() + ms;
    int got;

    pthread_mutex_lock(&w->mu);
    while (w->n < n && !w->done && now_ms() < end) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    got = w->n >= n;
    pthread_mutex_unlock(&w->mu);
    return got;
}

/* The leader value lives in P NAME \xff leader (fence, value), never in
 * the lock key a SET NX peer reads; an observer is woken by a proclaim
 * and a resignation at once (well within the 1 s re-read it would
 * otherwise wait for), not by a forged message into a report, and a
 * killed subscription ends the observation with DLOCK_EUNAVAIL, not a
 * hang; an ACL without channel rights leaves it re-reading each second. */
static void t_elect_watch(void)
{
    char u[256], key[600], leader[620], chan[620], lockv[256];
    dlock_options o = opts(0, 5000, 1);
    struct watcher w;
    dlock_store *s, *s2;
    redisContext *c;
    dlock_lock *a;
    pthread_t t;
    int64_t t0, worst = 0;
    int n;

    own_server(u, sizeof(u));
    s = must_open(u);
    s2 = must_open(u);
    c = raw_open(u);
    snprintf(key, sizeof(key), "dlock:%s", nm("el"));
    snprintf(leader, sizeof(leader), "%s\xffleader", key);
    snprintf(chan, sizeof(chan), "%s\xffrelease", key);
    memset(&w, 0, sizeof(w));
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    w.s = s2;
    w.name = nm("el");
    CHECK_RC(dlock_cancel_new(&w.cancel), DLOCK_OK);
    CHECK(pthread_create(&t, NULL, watcher_main, &w) == 0);
    CHECK(watcher_wait(&w, 1, 5000) && !w.held[0]);
    CHECK(await_channel(c, chan, 1));

    /* Where the value is. */
    t0 = now_ms();
    CHECK_RC(dlock_elect(&a, s, nm("el"), "v-one", &o), DLOCK_OK);
    CHECK(watcher_wait(&w, 2, 5000) && w.held[1]);
    worst = w.at[1] - t0;
    CHECK(raw_int(c, "HGET %b fence", leader, strlen(leader)) ==
          (long long)dlock_fence(a));
    CHECK(strcmp(raw_str(c, "HGET %b value", leader, strlen(leader)),
                 "v-one") == 0);
    CHECK(raw_int(c, "PTTL %b", leader, strlen(leader)) == -1);
    snprintf(lockv, sizeof(lockv), "%s",
             raw_str(c, "GET %b", key, strlen(key)));
    CHECK(strncmp(lockv, "dlock1:", 7) == 0 && strstr(lockv, "v-one") == NULL);

    /* Each proclaim wakes it at once (a poll would take up to 1 s). */
    for (int i = 0; i < 5; i++) {
        char v[16];

        snprintf(v, sizeof(v), "v-%d", i);
        n = w.n;
        t0 = now_ms();
        CHECK_RC(dlock_proclaim(a, v), DLOCK_OK);
        CHECK(watcher_wait(&w, n + 1, 5000));
        if (w.at[n] - t0 > worst)
            worst = w.at[n] - t0;
    }
    /* A forged message is a wake-up: the re-read finds nothing new. */
    n = w.n;
    CHECK(raw_int(c, "PUBLISH %b %s", chan, strlen(chan), "h1") == 1);
    CHECK(raw_int(c, "PUBLISH %b %s", chan, strlen(chan), "garbage") == 1);
    CHECK(!watcher_wait(&w, n + 1, 300));
    /* The resignation too. */
    t0 = now_ms();
    CHECK_RC(dlock_release(a), DLOCK_OK);
    CHECK(watcher_wait(&w, n + 1, 5000) && !w.held[n]);
    if (w.at[n] - t0 > worst)
        worst = w.at[n] - t0;
    printf("  observer woken within %lld ms (elect, 5 proclaims, resign)\n",
           (long long)worst);
    CHECK(worst < 500);

    /* Its subscription killed: EUNAVAIL, promptly. */
    t0 = now_ms();
    CHECK(raw_int(c, "CLIENT KILL TYPE pubsub") >= 1);
    pthread_mutex_lock(&w.mu);
    while (!w.done && now_ms() - t0 < 5000) {
        pthread_mutex_unlock(&w.mu);
        sleep_ms(5);
        pthread_mutex_lock(&w.mu);
    }
    pthread_mutex_unlock(&w.mu);
    CHECK(w.done && w.rc == DLOCK_EUNAVAIL);
    printf("  killed subscription: rc %d after %lld ms\n", w.rc,
           (long long)(now_ms() - t0));
    CHECK(now_ms() - t0 < 1500);
    if (!w.done)
        dlock_cancel_fire(w.cancel);
    pthread_join(t, NULL);
    dlock_cancel_free(w.cancel);
    dlock_store_close(s2);

    /* An ACL that refuses SUBSCRIBE: the observer re-reads each second
     * instead of failing, and still ends promptly on its cancel. */
    {
        char lim[300];

        CHECK(strcmp(raw_str(c, "ACL SETUSER lim on >limpw ~* +@all "
                                "resetchannels"),
                     "OK") == 0);
        snprintf(lim, sizeof(lim), "redis://lim:limpw@127.0.0.1:%s",
                 strrchr(u, ':') + 1);
        memset(&w, 0, sizeof(w));
        pthread_mutex_init(&w.mu, NULL);
        pthread_cond_init(&w.cv, NULL);
        w.s = s2 = must_open(lim);
        w.name = nm("el");
        CHECK_RC(dlock_cancel_new(&w.cancel), DLOCK_OK);
        CHECK(pthread_create(&t, NULL, watcher_main, &w) == 0);
        CHECK(watcher_wait(&w, 1, 5000) && !w.held[0]);
        t0 = now_ms();
        CHECK_RC(dlock_elect(&a, s, nm("el"), "v-acl", &o), DLOCK_OK);
        CHECK(watcher_wait(&w, 2, 5000) && w.held[1]);
        printf("  no channel rights: the new leader seen after %lld ms\n",
               (long long)(w.at[1] - t0));
        CHECK(w.at[1] - t0 < 1500);
        t0 = now_ms();
        dlock_cancel_fire(w.cancel);
        pthread_join(t, NULL);
        CHECK(w.done && w.rc == DLOCK_ECANCELED && now_ms() - t0 < 1000);
        CHECK_RC(dlock_release(a), DLOCK_OK);
        dlock_cancel_free(w.cancel);
        dlock_store_close(s2);
    }
    redisFree(c);
    dlock_store_close(s);
}

/* --- suspension ----------------------------------------------------- */

struct susp_seen {
    int n;
    char by[256], reason[DLOCK_REASON_MAX + 1];
};

static int susp_seen_cb(const dlock_suspension *x, void *p)
{
    struct susp_seen *ss = p;

    ss->n++;
    snprintf(ss->by, sizeof(ss->by), "%s", x->by);
    snprintf(ss->reason, sizeof(ss->reason), "%s", x->reason);
    return 0;
}

/* The suspension record, planted by another client in shapes dlock never
 * writes (a key of another type, fields missing, too long, with a NUL,
 * not UTF-8, an escape, a since that is no number): each still suspends
 * (run_begin skips, suspend says "already"), and reads back with "?" for
 * its texts and 0 for its since, without a crash; resume lifts it. */
static void t_suspend_planted(void)
{
    static const char nul_by[] = "a\0b";
    char u[256], key[600], big[2100];
    dlock_options o = opts(0, 5000, 0);
    dlock_run_rule rule = DLOCK_RUN_RULE_INIT;
    const char *name = nm("planted");
    dlock_store *s;
    redisContext *c;

    own_server(u, sizeof(u));
    s = must_open(u);
    c = raw_open(u);
    snprintf(key, sizeof(key), "dlock:%s\xffsuspended", name);
    memset(big, 'b', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    for (int shape = 0; shape < 7; shape++) {
        const char *want_by = "?", *want_reason = "?";
        redisReply *r = NULL;
        dlock_suspension *x = NULL;
        struct susp_seen ss = {0, "", ""};
        dlock_run *last = NULL;
        dlock_lock *l;
        int go = 1, was = 0;

        switch (shape) {
        case 0: /* a string */
            r = redisCommand(c, "SET %b garbage", key, strlen(key));
            break;
        case 1: /* a list */
            r = redisCommand(c, "RPUSH %b a b", key, strlen(key));
            break;
        case 2: /* a hash without dlock's fields */
            r = redisCommand(c, "HSET %b other 1", key, strlen(key));
            break;
        case 3: /* too long, and not UTF-8 */
            r = redisCommand(c, "HSET %b by %s since 12x reason %b", key,
                             strlen(key), big, "\xff\xfe", (size_t)2);
            break;
        case 4: /* a NUL inside, a terminal escape, a negative since */
            r = redisCommand(c, "HSET %b by %b since -5 reason %s", key,
                             strlen(key), nul_by, sizeof(nul_by) - 1,
                             "\x1b]0;owned\x07");
            break;
        case 5: /* a reason over DLOCK_REASON_MAX, a since too big */
            r = redisCommand(c,
                             "HSET %b by ops@x since 99999999999999999999 "
                             "reason %s",
                             key, strlen(key), big);
            want_by = "ops@x";
            break;
        default: /* as dlock writes it, for contrast */
            r = redisCommand(c, "HSET %b by ops@x since 1000 reason ok", key,
                             strlen(key));
            want_by = "ops@x";
            want_reason = "ok";
            break;
        }
        CHECK(r != NULL && r->type != REDIS_REPLY_ERROR);
        freeReplyObject(r);
        CHECK_RC(dlock_suspended(&x, s, name), DLOCK_OK);
        CHECK(x != NULL);
        if (x != NULL) {
            if (strcmp(x->by, want_by) != 0 ||
                strcmp(x->reason, want_reason) != 0)
                printf("  shape %d: by '%s' reason '%.40s'\n", shape, x->by,
                       x->reason);
            CHECK(strcmp(x->by, want_by) == 0);
            CHECK(strcmp(x->reason, want_reason) == 0);
            CHECK(x->since_ms == (shape == 6 ? 1000 : 0));
            CHECK(strcmp(x->name, name) == 0);
        }
        dlock_suspension_free(x);
        CHECK_RC(dlock_suspend(&was, s, name, NULL, "mine"), DLOCK_OK);
        CHECK(was == 1);
        CHECK_RC(dlock_acquire(&l, s, name, &o), DLOCK_OK);
        CHECK_RC(dlock_run_begin(l, &rule, &go, &last), DLOCK_OK);
        CHECK(go == 0 && last != NULL);
        if (last != NULL) {
            CHECK(last->result == DLOCK_RUN_SUSPENDED);
            CHECK(strcmp(last->host, want_by) == 0);
            CHECK(last->fence == 0 && last->status == -1);
        }
        dlock_run_free(last);
        CHECK_RC(dlock_release(l), DLOCK_OK);
        CHECK_RC(dlock_suspensions(s, name, susp_seen_cb, &ss), DLOCK_OK);
        CHECK(ss.n == 1 && strcmp(ss.by, want_by) == 0 &&
              strcmp(ss.reason, want_reason) == 0);
        x = NULL;
        CHECK_RC(dlock_resume(&x, s, name), DLOCK_OK);
        CHECK(x != NULL && strcmp(x->by, want_by) == 0);
        dlock_suspension_free(x);
        CHECK(raw_int(c, "EXISTS %b", key, strlen(key)) == 0);
    }
    redisFree(c);
    dlock_store_close(s);
    own_server_stop();
}

/* A user whose ACL allows only read commands (and what connecting and
 * scripts need): suspend and resume are refused with a message naming
 * the refusal, nothing written or lifted; reading the record works, and
 * so does a suspend that finds one (it writes nothing). */
static void t_suspend_readonly(void)
{
    char u[256], ro[300], key[600], *port;
    const char *a = nm("ro-a"), *b = nm("ro-b");
    dlock_suspension *x = NULL;
    struct susp_seen ss = {0, "", ""};
    dlock_store *s, *rs;
    redisContext *c;
    int rc, was = 0;

    own_server(u, sizeof(u));
    c = raw_open(u);
    CHECK(strcmp(raw_str(c, "ACL SETUSER ro on >ropw ~* &* -@all +@read "
                            "+@connection +@scripting -@write"),
                 "OK") == 0);
    port = strrchr(u, ':') + 1;
    snprintf(ro, sizeof(ro), "redis://ro:ropw@127.0.0.1:%s", port);
    s = must_open(u);
    CHECK_RC(dlock_suspend(NULL, s, a, "ops@rw", "by the writer"), DLOCK_OK);
    rs = must_open(ro);
    rc = dlock_suspend(&was, rs, b, "ops@ro", "no");
    printf("  read-only suspend: %d %s\n", rc, dlock_errmsg());
    CHECK(rc == DLOCK_ESTORE || rc == DLOCK_EUNAVAIL);
    CHECK(dlock_errmsg()[0] != '\0');
    CHECK(was == 0);
    snprintf(key, sizeof(key), "dlock:%s\xffsuspended", b);
    CHECK(raw_int(c, "EXISTS %b", key, strlen(key)) == 0);
    rc = dlock_resume(&x, rs, a);
    printf("  read-only resume: %d %s\n", rc, dlock_errmsg());
    CHECK(rc == DLOCK_ESTORE || rc == DLOCK_EUNAVAIL);
    CHECK(dlock_errmsg()[0] != '\0');
    CHECK(x == NULL);
    snprintf(key, sizeof(key), "dlock:%s\xffsuspended", a);
    CHECK(raw_int(c, "EXISTS %b", key, strlen(key)) == 1);
    /* Reading is a reader's, and so is "suspended already" (nothing
     * written). */
    CHECK_RC(dlock_suspend(&was, rs, a, "ops@ro", "again"), DLOCK_OK);
    CHECK(was == 1);
    CHECK_RC(dlock_suspended(&x, rs, a), DLOCK_OK);
    CHECK(x != NULL && strcmp(x->by, "ops@rw") == 0);
    dlock_suspension_free(x);
    CHECK_RC(dlock_suspensions(rs, run_id, susp_seen_cb, &ss), DLOCK_OK);
    CHECK(ss.n == 1 && strcmp(ss.by, "ops@rw") == 0);
    x = NULL;
    CHECK_RC(dlock_resume(&x, s, a), DLOCK_OK);
    CHECK(x != NULL);
    dlock_suspension_free(x);
    dlock_store_close(rs);
    dlock_store_close(s);
    redisFree(c);
    own_server_stop();
}

static const struct rt_test tests[] = {
    {"tls_codes", t_tls_codes, 0},
    {"foreign_holder", t_foreign_holder, 0},
    {"dlock_blocks_foreign", t_dlock_blocks_foreign, 0},
    {"prefixes", t_prefixes, 0},
    {"shared_blocks_foreign", t_shared_blocks_foreign, 0},
    {"script_flush", t_script_flush, 0},
    {"handoff", t_handoff, 0},
    {"stampede", t_stampede, 0},
    {"no_polling", t_no_polling, 0},
    {"foreign_keys_in_list", t_foreign_keys_in_list, 0},
    {"db_spellings", t_db_spellings, 0},
    {"fast_path", t_fast_path, 0},
    {"bad_urls", t_bad_urls, 1},
    {"not_redis", t_not_redis, 1},
    {"sentinel_port", t_sentinel_port, 1},
    {"passwords", t_passwords, 1},
    {"acl_no_channels", t_acl_no_channels, 1},
    {"server_gone", t_server_gone, 1},
    {"foreign_lookalike_poll", t_foreign_lookalike_poll, 1},
    {"foreign_lookalike_keyspace", t_foreign_lookalike_keyspace, 1},
    {"foreign_lookalike_keyspace_acl", t_foreign_lookalike_keyspace_acl, 1},
    {"runs_keys", t_runs_keys, 1},
    {"elect_watch", t_elect_watch, 1},
    {"suspend_planted", t_suspend_planted, 1},
    {"suspend_readonly", t_suspend_readonly, 1},
    {"runs_keep", t_runs_keep, 1},
};

int main(int argc, char **argv)
{
    return rt_main(argc, argv, "redis-test", tests,
                   sizeof(tests) / sizeof(tests[0]), &url, &failures);
}
