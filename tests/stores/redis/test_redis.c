/*
 * test_redis.c - what only the Redis store promises:
 *   test_redis URL SERVER_DIR SCRIPTS_DIR
 * interop with the plain SET NX / compare-and-delete pattern, SCRIPT FLUSH
 * in the middle of a run, prompt hand-off to a woken waiter, a restarted
 * server (no persistence: locks are gone and holders find out), a stopped
 * server, wrong passwords, garbage URLs and servers that are not Redis.
 */
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"

static int failures;
static const char *url, *dir, *scripts;
static char run_id[64];

#define EXPECT(cond)                                                         \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: EXPECT(%s) failed (%s)\n", __FILE__,     \
                    __LINE__, #cond, dlock_errmsg());                        \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *nm(const char *base)
{
    static char buf[4][256];
    static int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", run_id, base);
    return buf[i];
}

static redisContext *raw(void)
{
    char host[64] = "127.0.0.1";
    int port = 6379;
    redisContext *c;

    if (sscanf(url, "redis://%63[^:]:%d", host, &port) != 2)
        exit(2);
    c = redisConnect(host, port);
    if (c == NULL || c->err)
        exit(2);
    return c;
}

static long long raw_int(redisContext *c, const char *fmt, const char *a,
                         const char *b)
{
    redisReply *r = redisCommand(c, fmt, a, b);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer
                  : r && r->type == REDIS_REPLY_STATUS ? 1
                                                       : 0;

    freeReplyObject(r);
    return v;
}

static dlock_store *open_url(const char *u)
{
    dlock_store *s = NULL;

    if (dlock_store_open(&s, u) != DLOCK_OK) {
        fprintf(stderr, "open %s: %s\n", u, dlock_errmsg());
        exit(3);
    }
    return s;
}

static int ctl(const char *what)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "%s/server-redis.sh %s %s >/dev/null", scripts,
             what, dir);
    return system(cmd);
}

static void test_interop(void)
{
    redisContext *c = raw();
    dlock_store *s = open_url(url);
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    char key[300];
    redisReply *r;
    static const char cad[] =
        "if redis.call('GET', KEYS[1]) == ARGV[1] then "
        "return redis.call('DEL', KEYS[1]) else return 0 end";

    /* A foreign SET NX holds the name: dlock is BUSY. */
    snprintf(key, sizeof(key), "dlock:%s", nm("interop"));
    EXPECT(raw_int(c, "SET %s foreign NX PX 60000", key, NULL) == 1);
    EXPECT(dlock_acquire(&l, s, nm("interop"), &o) == DLOCK_BUSY);
    EXPECT(raw_int(c, "DEL %s", key, NULL) == 1);
    /* dlock's key blocks a foreign SET NX. */
    EXPECT(dlock_acquire(&l, s, nm("interop"), &o) == DLOCK_OK);
    r = redisCommand(c, "SET %s other NX PX 60000", key);
    EXPECT(r != NULL && r->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    /* A foreign compare-and-delete with the wrong token leaves it. */
    r = redisCommand(c, "EVAL %s 1 %s %s", cad, key, "not-the-token");
    EXPECT(r != NULL && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
    freeReplyObject(r);
    EXPECT(dlock_assert_ttl(l, 1000) == DLOCK_OK);
    EXPECT(dlock_release(l) == DLOCK_OK);
    EXPECT(raw_int(c, "EXISTS %s", key, NULL) == 0);
    dlock_store_close(s);

    /* ?prefix= (empty): the bare name, as node-redlock keys it; and a
     * custom prefix like the PHP lock's. */
    {
        char u[512];

        snprintf(u, sizeof(u), "%s?prefix=", url);
        s = open_url(u);
        EXPECT(dlock_acquire(&l, s, nm("bare"), &o) == DLOCK_OK);
        EXPECT(raw_int(c, "EXISTS %s", nm("bare"), NULL) == 1);
        EXPECT(dlock_release(l) == DLOCK_OK);
        dlock_store_close(s);
        snprintf(u, sizeof(u), "%s?prefix=redislock:", url);
        s = open_url(u);
        snprintf(key, sizeof(key), "redislock:%s", nm("php"));
        EXPECT(raw_int(c, "SET %s phptoken NX PX 60000", key, NULL) == 1);
        EXPECT(dlock_acquire(&l, s, nm("php"), &o) == DLOCK_BUSY);
        EXPECT(raw_int(c, "DEL %s", key, NULL) == 1);
        dlock_store_close(s);
    }
    redisFree(c);
}

static void test_script_flush(void)
{
    redisContext *c = raw();
    dlock_store *s = open_url(url);
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l;
    uint64_t f1;

    EXPECT(dlock_acquire(&l, s, nm("flush"), &o) == DLOCK_OK);
    f1 = dlock_fence(l);
    EXPECT(raw_int(c, "SCRIPT FLUSH", NULL, NULL) == 1);
    EXPECT(dlock_extend(l, 0) == DLOCK_OK);
    EXPECT(dlock_assert_ttl(l, 100) == DLOCK_OK);
    EXPECT(dlock_release(l) == DLOCK_OK);
    EXPECT(raw_int(c, "SCRIPT FLUSH", NULL, NULL) == 1);
    EXPECT(dlock_acquire(&l, s, nm("flush"), &o) == DLOCK_OK);
    EXPECT(dlock_fence(l) > f1);
    EXPECT(dlock_release(l) == DLOCK_OK);
    dlock_store_close(s);
    redisFree(c);
}

struct waiter {
    dlock_store *s;
    int rc;
    int64_t done;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;

    o.wait_ms = 10000;
    w->rc = dlock_acquire(&l, w->s, nm("handoff"), &o);
    w->done = now_ms();
    dlock_release(l);
    return NULL;
}

/* The holder's lease is long (30 s): only a release message can wake the
 * waiter this soon. */
static void test_handoff(void)
{
    dlock_store *s = open_url(url), *s2 = open_url(url);
    dlock_options o = DLOCK_OPTIONS_INIT;
    struct waiter w = {s2, -99, 0};
    dlock_lock *l;
    pthread_t t;
    int64_t released;

    EXPECT(dlock_acquire(&l, s, nm("handoff"), &o) == DLOCK_OK);
    pthread_create(&t, NULL, waiter_main, &w);
    usleep(300000); /* let it subscribe and sleep; not synchronisation */
    released = now_ms();
    EXPECT(dlock_release(l) == DLOCK_OK);
    pthread_join(t, NULL);
    EXPECT(w.rc == DLOCK_OK);
    EXPECT(w.done - released < 100);
    printf("  hand-off after release: %lld ms\n",
           (long long)(w.done - released));
    dlock_store_close(s);
    dlock_store_close(s2);
}

/* A restart without persistence loses every lock: status says free and
 * the holder gets LOST, not a silent success. */
static void test_restart(void)
{
    dlock_store *s = open_url(url);
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_info info;
    dlock_lock *l;

    o.auto_renew = 0;
    EXPECT(dlock_acquire(&l, s, nm("restart"), &o) == DLOCK_OK);
    {
        char cmd[1024];

        snprintf(cmd, sizeof(cmd), "%s/server-redis.sh ctl %s restart", scripts,
                 dir);
        EXPECT(system(cmd) == 0);
    }
    EXPECT(dlock_status(s, nm("restart"), &info) == DLOCK_OK);
    EXPECT(!info.held);
    EXPECT(dlock_extend(l, 0) == DLOCK_LOST);
    EXPECT(dlock_release(l) == DLOCK_LOST);
    dlock_store_close(s);
}

/* Server stopped: clear errors within the timeout, then it comes back. */
static void test_server_gone(void)
{
    char u[512], cmd[1024];
    dlock_store *s;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;
    int64_t t0;
    int rc;

    snprintf(u, sizeof(u), "%s?timeout=500ms&connect_timeout=500ms", url);
    s = open_url(u);
    EXPECT(dlock_acquire(&l, s, nm("gone"), &o) == DLOCK_OK);
    EXPECT(ctl("stop") == 0);
    t0 = now_ms();
    rc = dlock_extend(l, 0);
    EXPECT(rc == DLOCK_EUNAVAIL);
    EXPECT(now_ms() - t0 < 2000);
    EXPECT(strstr(dlock_errmsg(), "127.0.0.1") != NULL);
    dlock_lock *l2 = NULL;
    o.wait_ms = 300;
    t0 = now_ms();
    rc = dlock_acquire(&l2, s, nm("gone2"), &o);
    EXPECT(rc == DLOCK_EUNAVAIL);
    EXPECT(now_ms() - t0 < 2000);
    snprintf(cmd, sizeof(cmd), "%s/server-redis.sh ctl %s restart", scripts,
             dir);
    EXPECT(system(cmd) == 0);
    /* Reconnects by itself; the old lock died with the server. */
    EXPECT(dlock_release(l) == DLOCK_LOST);
    o.wait_ms = 0;
    EXPECT(dlock_acquire(&l2, s, nm("gone"), &o) == DLOCK_OK);
    EXPECT(dlock_release(l2) == DLOCK_OK);
    dlock_store_close(s);
}

static void test_auth(void)
{
    redisContext *c = raw();
    redisReply *r;
    dlock_store *s = NULL;
    char good[512], bad[512], host[64];
    int port = 0;

    sscanf(url, "redis://%63[^:]:%d", host, &port);
    r = redisCommand(c, "ACL SETUSER dlocktest on >s3cr3t-pw ~* &* +@all");
    EXPECT(r != NULL && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    snprintf(good, sizeof(good), "redis://dlocktest:s3cr3t-pw@%s:%d/0", host,
             port);
    snprintf(bad, sizeof(bad), "redis://dlocktest:wr0ng-pw@%s:%d/0", host,
             port);
    EXPECT(dlock_store_open(&s, bad) == DLOCK_ESTORE && s == NULL);
    EXPECT(strstr(dlock_errmsg(), "authentication") != NULL);
    EXPECT(strstr(dlock_errmsg(), "wr0ng-pw") == NULL);
    EXPECT(dlock_store_open(&s, good) == DLOCK_OK);
    EXPECT(strstr(dlock_store_url(s), "s3cr3t-pw") == NULL);
    dlock_store_close(s);
    redisFree(c);
}

/* A listener that is not Redis. */
struct fake {
    int fd;
    const char *answer; /* NULL: say nothing */
};

static void *fake_main(void *arg)
{
    struct fake *f = arg;

    for (;;) {
        int c = accept(f->fd, NULL, NULL);
        char buf[512];

        if (c < 0)
            return NULL;
        if (f->answer != NULL) {
            (void)!read(c, buf, sizeof(buf));
            (void)!write(c, f->answer, strlen(f->answer));
        }
        usleep(1500000);
        close(c);
    }
}

static void test_not_redis(void)
{
    static const char *const answers[] = {
        "HTTP/1.1 400 Bad Request\r\n\r\n", "+PO", "$99999999999\r\nx",
        "*3\r\n:1\r\n", "\x00\xff\xfe garbage", NULL};

    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
        struct sockaddr_in a = {0};
        socklen_t al = sizeof(a);
        struct fake f = {socket(AF_INET, SOCK_STREAM, 0), answers[i]};
        pthread_t t;
        dlock_store *s = NULL;
        char u[256];
        int64_t t0;
        int rc;

        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(f.fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
            listen(f.fd, 4) != 0 ||
            getsockname(f.fd, (struct sockaddr *)&a, &al) != 0)
            exit(4);
        pthread_create(&t, NULL, fake_main, &f);
        snprintf(u, sizeof(u),
                 "redis://127.0.0.1:%d?timeout=300ms&connect_timeout=300ms",
                 ntohs(a.sin_port));
        t0 = now_ms();
        rc = dlock_store_open(&s, u);
        EXPECT(rc == DLOCK_EUNAVAIL || rc == DLOCK_ESTORE);
        EXPECT(s == NULL);
        EXPECT(now_ms() - t0 < 1500);
        shutdown(f.fd, SHUT_RDWR);
        close(f.fd);
        pthread_join(t, NULL);
    }
}

static void test_bad_urls(void)
{
    static const char *const bad[] = {
        "redis://127.0.0.1:1/0?timeout=200ms", /* nothing listens */
        "redis://h/notanumber", "redis://h/0?bogus=1", "redis://h/0?timeout=x",
        "unix://relative/path", "unix:///nonexistent/redis.sock",
        "redis://256.1.1.1:6379?connect_timeout=200ms"};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        dlock_store *s = NULL;
        int64_t t0 = now_ms();
        int rc = dlock_store_open(&s, bad[i]);

        EXPECT(rc == DLOCK_EINVAL || rc == DLOCK_EUNAVAIL);
        EXPECT(s == NULL && dlock_errmsg()[0] != '\0');
        EXPECT(now_ms() - t0 < 1500);
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 || argv[1][0] == '\0') {
        fprintf(stderr, "usage: %s URL SERVER_DIR SCRIPTS_DIR\n", argv[0]);
        return 2;
    }
    url = argv[1];
    dir = argv[2];
    scripts = argv[3];
    snprintf(run_id, sizeof(run_id), "redis-test-%d", (int)getpid());
    test_interop();
    test_script_flush();
    test_handoff();
    test_auth();
    test_not_redis();
    test_bad_urls();
    test_restart(); /* last two restart the server */
    test_server_gone();
    if (failures == 0)
        printf("redis store: all passed\n");
    return failures != 0;
}
