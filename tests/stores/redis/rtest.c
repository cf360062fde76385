/*
 * rtest.c - what the Redis store's test programs share: a raw hiredis
 * client next to the library, waiting on pub/sub facts (barriers, not
 * sleeps), and throwaway servers of our own (scripts/server-redis.sh).
 */
#include <hiredis/hiredis.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h" /* now_ms, sleep_ms */
#include "rtest.h"
#include "url.h" /* dlock__url_parse: the raw client connects alike */

#ifndef SERVER_SCRIPT
#define SERVER_SCRIPT "scripts/server-redis.sh"
#endif

char run_id[64];

const char *nm(const char *base)
{
    static _Thread_local char buf[8][512];
    static _Thread_local int i;

    i = (i + 1) % 8;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", run_id, base);
    return buf[i];
}

dlock_options opts(int64_t wait_ms, int64_t ttl_ms, int renew)
{
    dlock_options o = DLOCK_OPTIONS_INIT;

    o.wait_ms = wait_ms;
    o.ttl_ms = ttl_ms;
    o.auto_renew = renew;
    return o;
}

/* --- a raw client, connected the way the URL says ------------------- */

redisContext *raw_open(const char *url)
{
    struct timeval tv = {5, 0};
    struct dlock_url *u;
    redisContext *c;
    redisReply *r;

    if (dlock__url_parse(&u, url) != DLOCK_OK) {
        fprintf(stderr, "bad URL: %s\n", dlock_errmsg());
        exit(100);
    }
    if (strcmp(u->scheme, "unix") == 0)
        c = redisConnectUnixWithTimeout(u->path, tv);
    else
        c = redisConnectWithTimeout(u->host ? u->host : "127.0.0.1",
                                    u->port ? u->port : 6379, tv);
    if (c == NULL || c->err) {
        fprintf(stderr, "raw connect to %s failed\n", u->redacted);
        exit(100);
    }
    redisSetTimeout(c, tv);
    if (u->password != NULL) {
        r = u->user && u->user[0]
                ? redisCommand(c, "AUTH %s %s", u->user, u->password)
                : redisCommand(c, "AUTH %s", u->password);
        freeReplyObject(r);
    }
    if (u->path != NULL && strcmp(u->scheme, "redis") == 0 &&
        strlen(u->path) > 1) {
        r = redisCommand(c, "SELECT %s", u->path + 1);
        freeReplyObject(r);
    }
    dlock__url_free(u);
    return c;
}

/* A command whose integer/status/string answer we want as text. */
char *raw_str(redisContext *c, const char *fmt, ...)
{
    static _Thread_local char out[4][256];
    static _Thread_local int i;
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    i = (i + 1) % 4;
    if (r == NULL)
        snprintf(out[i], sizeof(out[i]), "(io error)");
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(out[i], sizeof(out[i]), "%lld", r->integer);
    else if (r->type == REDIS_REPLY_NIL)
        snprintf(out[i], sizeof(out[i]), "(nil)");
    else if (r->str != NULL)
        snprintf(out[i], sizeof(out[i]), "%s%.*s",
                 r->type == REDIS_REPLY_ERROR ? "(error) " : "",
                 (int)(r->len < 200 ? r->len : 200), r->str);
    else
        snprintf(out[i], sizeof(out[i]), "(array of %zu)", r->elements);
    freeReplyObject(r);
    return out[i];
}

/* Total EVAL + EVALSHA calls the server has run (INFO commandstats). */
long long script_calls(redisContext *c)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    long long total = 0;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        static const char *const cmds[] = {"cmdstat_evalsha:calls=",
                                           "cmdstat_eval:calls="};
        for (int i = 0; i < 2; i++) {
            const char *p = strstr(r->str, cmds[i]);

            if (p != NULL)
                total += atoll(p + strlen(cmds[i]));
        }
    }
    freeReplyObject(r);
    return total;
}

/* The URL with a query parameter added. */
const char *with_param(const char *url, const char *param)
{
    static _Thread_local char buf[4][1024];
    static _Thread_local int i;

    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s%s%s", url,
             strchr(url, '?') ? "&" : "?", param);
    return buf[i];
}

dlock_store *must_open(const char *url)
{
    dlock_store *s = NULL;

    if (dlock_store_open(&s, url) != DLOCK_OK) {
        fprintf(stderr, "cannot open %s: %s\n", url, dlock_errmsg());
        exit(100);
    }
    return s;
}

/* Wait (bounded) until `n` clients are subscribed to the release channel
 * of `key`: the waiter is then really waiting.  Both the channel name and
 * PUBSUB NUMSUB are public facts, so this is a barrier, not a sleep. */
int await_subscribers(redisContext *c, const char *key, long long n)
{
    char chan[600];

    snprintf(chan, sizeof(chan),
             "%s\xff"
             "release",
             key);
    return await_channel(c, chan, n);
}

char dir[256];

/* Run the server script; its stdout (first line) into out if given. */
int script(char *out, size_t outlen, const char *fmt, ...)
{
    char cmd[1024], args[768];
    va_list ap;
    FILE *p;
    int st;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "'%s' %s", SERVER_SCRIPT, args);
    p = popen(cmd, "r");
    if (p == NULL)
        return -1;
    if (out != NULL) {
        if (fgets(out, (int)outlen, p) == NULL)
            out[0] = '\0';
        out[strcspn(out, "\n")] = '\0';
    }
    while (fgetc(p) != EOF)
        ;
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Stop and remove our servers (also at exit, after a failed check). */
void own_server_stop(void)
{
    char cmd[512];

    if (dir[0] == '\0')
        return;
    script(NULL, 0, "ctl %s stop-auth auth", dir);
    script(NULL, 0, "stop %s", dir);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    (void)!system(cmd);
    dir[0] = '\0';
}

void own_server(char *u, size_t len)
{
    static int registered;

    own_server_stop();
    if (!registered++)
        atexit(own_server_stop);
    snprintf(dir, sizeof(dir), "/tmp/dlock-redis-test.XXXXXX");
    if (mkdtemp(dir) == NULL || script(u, len, "start %s", dir) != 0 ||
        u[0] == '\0') {
        fprintf(stderr, "cannot start a redis-server in %s\n", dir);
        exit(100);
    }
}

/* 32 random hex digits: node-redlock's token (16 random bytes in hex),
 * PHP's bin2hex(random_bytes(16)). */
void hex_token(char out[33])
{
    unsigned char b[16];
    FILE *f = fopen("/dev/urandom", "rb");

    if (f == NULL || fread(b, 1, sizeof(b), f) != sizeof(b)) {
        fprintf(stderr, "cannot read /dev/urandom\n");
        exit(100);
    }
    fclose(f);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* Wait (bounded) until `n` clients are subscribed to channel `chan`. */
int await_channel(redisContext *c, const char *chan, long long n)
{
    int64_t end = now_ms() + 5000;

    while (now_ms() < end) {
        redisReply *r = redisCommand(c, "PUBSUB NUMSUB %b", chan, strlen(chan));
        long long got = -1;

        if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_INTEGER)
            got = r->element[1]->integer;
        freeReplyObject(r);
        if (got >= n)
            return 1;
        sleep_ms(2);
    }
    return 0;
}

int rt_main(int argc, char **argv, const char *what,
            const struct rt_test *tests, size_t n, const char **url,
            const int *failures)
{
    int ran = 0;

    signal(SIGPIPE, SIG_IGN);
    if (argc < 3) {
        fprintf(stderr, "usage: %s URL|- TEST...\n", argv[0]);
        return 100;
    }
    *url = argv[1];
    snprintf(run_id, sizeof(run_id), "%s-%d-%lld", what, (int)getpid(),
             (long long)now_ms());
    for (int a = 2; a < argc; a++) {
        for (size_t i = 0; i < n; i++) {
            int before = *failures;
            int64_t t0 = now_ms();

            if (strcmp(argv[a], tests[i].name) != 0 &&
                strcmp(argv[a], "all") != 0)
                continue;
            if (!tests[i].own &&
                (argv[1][0] == '\0' || strcmp(argv[1], "-") == 0)) {
                fprintf(stderr, "%s needs a server URL\n", tests[i].name);
                return 100;
            }
            tests[i].fn();
            ran++;
            printf("%-4s %-24s %5lld ms\n", *failures != before ? "FAIL" : "ok",
                   tests[i].name, (long long)(now_ms() - t0));
            fflush(stdout);
        }
    }
    if (ran == 0) {
        fprintf(stderr, "no such test\n");
        return 100;
    }
    return *failures > 100 ? 100 : *failures;
}
