/*
 * test_unit.c - pure functions: URL parsing and redaction, name checks,
 * backoff, option defaults, error strings.  No store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api.h"
#include "check.h"
#include "clock.h"
#include "names.h"
#include "process.h"
#include "quota.h"
#include "random.h"
#include "store.h"
#include "text.h"
#include "url.h"

static void redact_is(const char *in, const char *want)
{
    char *out = NULL;

    EXPECT(dlock_url_redact(&out, in) == DLOCK_OK);
    if (out == NULL || strcmp(out, want) != 0) {
        fprintf(stderr, "redact(%s) = %s, wanted %s\n", in,
                out ? out : "(null)", want);
        failures++;
    }
    dlock_free(out);
}

static void test_redact(void)
{
    redact_is("redis://h:6379/0", "redis://h:6379/0");
    redact_is("redis://:pw@h:6379", "redis://:***@h:6379");
    redact_is("postgres://u:p%40ss@h/db", "postgres://u:***@h/db");
    redact_is("mysql://u@h/db", "mysql://u@h/db");
    redact_is("postgres://u@h/db?sslmode=require&password=xyz",
              "postgres://u@h/db?sslmode=require&password=***");
    redact_is("mysql://u:a:b@c@h/db", "mysql://u:***@h/db");
    /* A credential parameter right after a path (0.1 showed these). */
    redact_is("unix:///run/redis.sock?password=s3cr3t",
              "unix:///run/redis.sock?password=***");
    redact_is("redis://h/0?password=s3cr3t", "redis://h/0?password=***");
    redact_is("postgres://u@h/db?password=s3cr3t",
              "postgres://u@h/db?password=***");
    redact_is("postgres://u@h/db?sslpassword=s3cr3t&keys=hashtext",
              "postgres://u@h/db?sslpassword=***&keys=hashtext");
    redact_is("redis://h/0?Pass%77ord=s3cr3t", "redis://h/0?Pass%77ord=***");
    /* A password with an unencoded '/', '?' or '#'. */
    redact_is("redis://u:pa/ss3cr3t@h:1", "redis://u:***@h:1");
    redact_is("redis://u:pa?ss3cr3t@h:1", "redis://u:***@h:1");
    redact_is("redis://u:pa#ss3cr3t@h:1", "redis://u:***@h:1");
    /* An '@' after the authority: where a password ends cannot be told
     * (is it "5432/db?user=me"?), so nothing before the last '@' is shown
     * but a user name; the parser refuses such a URL (issue 33). */
    redact_is("postgres://h:5432/db?user=me@srv", "postgres://h:***@srv");
    redact_is("redis://admin@corp:SECRET/PW@127.0.0.1:6379",
              "redis://admin@corp:***@127.0.0.1:6379");
    redact_is("redis://:SECRET/X?PW@127.0.0.1:6379",
              "redis://:***@127.0.0.1:6379");
    /* The last '@' may be inside a ?password= value: nothing shown. */
    redact_is("redis://u/x?password=MARK@h", "redis://***");
    redact_is("postgres://h/db?user=me@srv&password=MARK",
              "postgres://***@srv&password=***");
    redact_is("postgres://admin@server:PW@h/db",
              "postgres://admin@server:***@h/db");
    redact_is("redis:u:pw@h", "redis:***");
}

/* A URL that cannot be parsed unambiguously is refused, and the message
 * never shows the secret. */
static void refused_quietly(const char *url)
{
    struct dlock_url *u = NULL;

    EXPECT(dlock__url_parse(&u, url) == DLOCK_EINVAL);
    if (strstr(dlock_errmsg(), "s3cr3t") != NULL) {
        fprintf(stderr, "parse(%s) printed the password: %s\n", url,
                dlock_errmsg());
        failures++;
    }
    dlock__url_free(u);
}

static void scrub_is(const char *in, const char *secret, const char *want)
{
    const char *const sec[] = {secret, NULL};
    char out[256];

    dlock__scrub(out, sizeof(out), in, sec);
    if (strcmp(out, want) != 0) {
        fprintf(stderr, "scrub(%s) = %s, wanted %s\n", in, out, want);
        failures++;
    }
}

/* A secret echoed whole, or cut (a head of 8 bytes or more: Redis cuts
 * each argument it echoes to fit 128 bytes), is hidden; a shorter head
 * is no proof and is left. */
static void test_scrub(void)
{
    scrub_is("with args: 'Lq7xxxxxxxxxZq9'", "Lq7xxxxxxxxxZq9",
             "with args: '***'");
    scrub_is("with args: 'Lq7xxxxxxx'", "Lq7xxxxxxxxxZq9", "with args: '***'");
    scrub_is("with args: 'Lq7xxxx'", "Lq7xxxxxxxxxZq9", "with args: 'Lq7xxxx'");
    scrub_is("hunter2 and hunter", "hunter2", "*** and hunter");
}

static void test_ambiguous(void)
{
    refused_quietly("redis://u:pa/ss3cr3t@h:1");
    refused_quietly("redis://u:pa?ss3cr3t@h:1");
    refused_quietly("redis://u:pa#ss3cr3t@h:1");
    refused_quietly("postgres://u:s3cr3t@h/db#frag");
    /* issue 33: a user name with '@', a password with '/' then '?'. */
    refused_quietly("redis://admin@corp:s3cr3t/PW@127.0.0.1:6379");
    refused_quietly("redis://:s3cr3t/X?PW@127.0.0.1:6379");
    refused_quietly("postgres://u:12/s3cr3t?x@h/db");
    refused_quietly("postgres://h:5432/db?user=me@s3cr3t");
}

static void test_parse(void)
{
    struct dlock_url *u = NULL;
    dlock_store *s = NULL;
    int64_t ms = -1;

    EXPECT(dlock__url_parse(&u, "Redis://user:p%40ss@[::1]:7000/3"
                                "?prefix=x:&timeout=2s") == DLOCK_OK);
    if (u != NULL) {
        EXPECT(strcmp(u->scheme, "redis") == 0);
        EXPECT(strcmp(u->user, "user") == 0);
        EXPECT(strcmp(u->password, "p@ss") == 0);
        EXPECT(strcmp(u->host, "::1") == 0);
        EXPECT(u->port == 7000);
        EXPECT(strcmp(u->path, "/3") == 0);
        EXPECT(strcmp(dlock__url_param(u, "prefix"), "x:") == 0);
        EXPECT(dlock__url_param(u, "nope") == NULL);
        EXPECT(dlock__url_param_ms(u, "timeout", 1000, &ms) == DLOCK_OK);
        EXPECT(ms == 2000);
        EXPECT(strstr(u->redacted, "p%40ss") == NULL);
        dlock__url_free(u);
    }
    /* Counts (?max_keys=, ?max_conns=): whole numbers, 0 or more. */
    EXPECT(dlock__url_parse(&u, "postgres://h/d?a=0&b=9223372036854775799"
                                "&c=-1&d=&e=1x&f=99999999999999999999"
                                "&g=0x10&h=+3") == DLOCK_OK);
    if (u != NULL) {
        int64_t n = -7;

        EXPECT(dlock__url_param_count(u, "absent", &n) == DLOCK_OK && n == -7);
        EXPECT(dlock__url_param_count(u, "a", &n) == DLOCK_OK && n == 0);
        EXPECT(dlock__url_param_count(u, "b", &n) == DLOCK_OK &&
               n == INT64_C(9223372036854775799));
        for (const char *k = "cdefgh"; *k != '\0'; k++) {
            char key[2] = {*k, '\0'};

            n = -7;
            EXPECT(dlock__url_param_count(u, key, &n) == DLOCK_EINVAL &&
                   n == -7);
        }
        dlock__url_free(u);
    }
    EXPECT(dlock__url_parse(&u, "sqlite:///var/tmp/x.db") == DLOCK_OK);
    if (u != NULL) {
        EXPECT(u->host == NULL || u->host[0] == '\0');
        EXPECT(strcmp(u->path, "/var/tmp/x.db") == 0);
        dlock__url_free(u);
    }
    EXPECT(dlock__url_parse(&u, "no scheme") == DLOCK_EINVAL && u == NULL);
    EXPECT(dlock__url_parse(&u, "redis:/x") == DLOCK_EINVAL);
    EXPECT(dlock__url_parse(&u, "redis://h:99999") == DLOCK_EINVAL);
    EXPECT(dlock__url_parse(&u, "redis://h:12ab") == DLOCK_EINVAL);
    EXPECT(dlock__url_parse(&u, "redis://h/%zz") == DLOCK_EINVAL);
    EXPECT(dlock__url_parse(&u, "redis://h/%00") == DLOCK_EINVAL);
    EXPECT(dlock__url_parse(&u, "redis://h#frag") == DLOCK_EINVAL);
    EXPECT(dlock__url_parse(&u, "redis://[::1") == DLOCK_EINVAL);
    EXPECT(dlock__url_parse(&u, "") == DLOCK_EINVAL);
    /* An option given twice is refused by name, for every store: which
     * value counted was anyone's guess (even spelt %-encoded). */
    EXPECT(dlock__url_parse(&u, "redis://:pw@h?prefix=A:&prefix=B:") ==
               DLOCK_EINVAL &&
           u == NULL);
    EXPECT(strstr(dlock_errmsg(), "\"prefix\" is given twice") != NULL);
    EXPECT(strstr(dlock_errmsg(), "pw") == NULL);
    EXPECT(dlock__url_parse(&u, "postgres://h/d?mode=lease&m%6Fde=lease") ==
           DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "\"mode\"") != NULL);
    EXPECT(dlock_store_open(&s, "sqlite:///tmp/x.db?a=1&a=1") == DLOCK_EINVAL &&
           s == NULL);
    /* Unknown options are refused by name, without the password. */
    EXPECT(dlock__url_parse(&u, "redis://:pw@h/?bogus=1") == DLOCK_OK);
    if (u != NULL) {
        static const char *const known[] = {"prefix", NULL};

        EXPECT(dlock__url_check_params(u, known) == DLOCK_EINVAL);
        EXPECT(strstr(dlock_errmsg(), "bogus") != NULL);
        EXPECT(strstr(dlock_errmsg(), "pw") == NULL);
        dlock__url_free(u);
    }
}

/* A host list: entries split at commas, IPv6 in brackets. */
static int hosts_of(const char *url, const char *want)
{
    struct dlock_url *u = NULL;
    char **hosts = NULL, got[512] = "";
    int *ports = NULL, n = 0, rc;

    if ((rc = dlock__url_parse(&u, url)) != DLOCK_OK)
        return rc;
    rc = dlock__url_hosts(u, 2379, "etcd", &hosts, &ports, &n);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(got);

        snprintf(got + len, sizeof(got) - len, "%s%s|%d", i ? " " : "",
                 hosts[i], ports[i]);
        free(hosts[i]);
    }
    free(hosts);
    free(ports);
    dlock__url_free(u);
    if (rc == DLOCK_OK && strcmp(got, want) != 0) {
        fprintf(stderr, "  hosts of %s: %s, wanted %s\n", url, got, want);
        return -1;
    }
    return rc;
}

static void test_url_hosts(void)
{
    EXPECT(hosts_of("etcd://h1:1,h2,h3:3", "h1|1 h2|2379 h3|3") == DLOCK_OK);
    EXPECT(hosts_of("etcd://[::1]:2379", "::1|2379") == DLOCK_OK);
    EXPECT(hosts_of("etcd://[::1]", "::1|2379") == DLOCK_OK);
    EXPECT(hosts_of("etcd://[::1]:1,[fe80::2],h:3", "::1|1 fe80::2|2379 h|3") ==
           DLOCK_OK);
    EXPECT(hosts_of("etcd://h:1,::1:2", "") == DLOCK_EINVAL);
    EXPECT(strstr(dlock_errmsg(), "brackets") != NULL);
    EXPECT(hosts_of("etcd://h:1,[::1", "") == DLOCK_EINVAL);
    EXPECT(hosts_of("etcd://h:1,[::1]x", "") == DLOCK_EINVAL);
    EXPECT(hosts_of("etcd://h:1,[::1]:", "") == DLOCK_EINVAL);
    EXPECT(hosts_of("etcd://h:1,[::1]:+5", "") == DLOCK_EINVAL);
    EXPECT(hosts_of("etcd://h:1,[]:5", "") == DLOCK_EINVAL);
    EXPECT(hosts_of("etcd://h:1,h: 5", "") == DLOCK_EINVAL);
    EXPECT(hosts_of("etcd://h:1,", "") == DLOCK_EINVAL);
    /* The adversary pass on the list grammar: a '[' or ']' that is not a
     * pair around a whole IPv6 address is refused, never handed on to a
     * name lookup; brackets hold an IPv6 address only (RFC 3986). */
    static const char *const refused[] = {
        "etcd://[[::1]:1,x]",
        "etcd://],x",
        "etcd://x]:1,y",
        "etcd://a[b]:1,y",
        "etcd://y,[a[b]:1",
        "redis-sentinel://[[::1]:26379,[::1]]:26379/m",
        "etcd://[localhost]:1,[::1]:2",
        "etcd://[::1]:1,[127.0.0.1]:2",
        "etcd://[localhost]:1",
        "etcd://[127.0.0.1]",
        "redis://x]:1",
        "redis://a[b",
        "etcd://[::1,::2]:1",
        "etcd://[::1]]:1,x",
        "etcd://[::1]:1:2,x",
        "etcd://x,[::1]:",
        "etcd://x,[::1]:-1",
        "etcd://x,[::1]:0",
        "etcd://x,[::1]:65536",
        "etcd://x,[::1]:99999999999999999999999",
        "etcd://x,,y",
        "etcd://,[::1]:1",
        "etcd://x:1,fe80::1%lo:2",
        "etcd://[fe80::1%]"};

    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (hosts_of(refused[i], "") != DLOCK_EINVAL) {
            fprintf(stderr, "  %s was not refused\n", refused[i]);
            failures++;
        }
    EXPECT(hosts_of("etcd://[::ffff:127.0.0.1]:1,[::1]",
                    "::ffff:127.0.0.1|1 ::1|2379") == DLOCK_OK);
    EXPECT(hosts_of("etcd://u:p[w,x@[::1]:1,[::1]:2", "::1|1 ::1|2") ==
           DLOCK_OK);
    EXPECT(hosts_of("etcd://[fe80::1%25lo]", "fe80::1%25lo|2379") == DLOCK_OK);
    EXPECT(hosts_of("etcd://%31%32%37.0.0.1:7", "127.0.0.1|7") == DLOCK_OK);
}

static void test_names(void)
{
    char big[DLOCK_NAME_MAX + 1];

    memset(big, 'x', sizeof(big));
    EXPECT(dlock__check_name("a", 1) == DLOCK_OK);
    EXPECT(dlock__check_name("", 0) == DLOCK_EINVAL);
    EXPECT(dlock__check_name(big, DLOCK_NAME_MAX) == DLOCK_OK);
    EXPECT(dlock__check_name(big, DLOCK_NAME_MAX + 1) == DLOCK_EINVAL);
    EXPECT(dlock__check_name("a\0b", 3) == DLOCK_EINVAL);
    EXPECT(dlock__check_name("\xc3\xa9", 2) == DLOCK_OK);         /* é */
    EXPECT(dlock__check_name("\xf0\x9f\x94\x92", 4) == DLOCK_OK); /* lock */
    EXPECT(dlock__check_name("\xc3", 1) == DLOCK_EINVAL);         /* cut */
    EXPECT(dlock__check_name("\xc0\x80", 2) == DLOCK_EINVAL);     /* overlong */
    EXPECT(dlock__check_name("\xed\xa0\x80", 3) ==
           DLOCK_EINVAL); /* surrogate */
    EXPECT(dlock__check_name("\xf4\x90\x80\x80", 4) == DLOCK_EINVAL);
    EXPECT(dlock__check_name("\xff", 1) == DLOCK_EINVAL);
}

static void test_backoff(void)
{
    int64_t prev = 0;

    for (unsigned a = 0; a < 40; a++) {
        int64_t lo = dlock__backoff_ms(a, 0), hi = dlock__backoff_ms(a, ~0u);

        EXPECT(lo >= 1 && hi <= DLOCK_POLL_MAX_MS && lo <= hi);
        EXPECT(hi >= prev || hi == DLOCK_POLL_MAX_MS);
        prev = hi;
    }
    /* It grows: not a fixed interval. */
    EXPECT(dlock__backoff_ms(0, ~0u) < dlock__backoff_ms(6, ~0u));
}

static void test_tokens_and_strings(void)
{
    char a[DLOCK_TOKEN_HEX + 1], b[DLOCK_TOKEN_HEX + 1];

    EXPECT(dlock__token(a) == DLOCK_OK && dlock__token(b) == DLOCK_OK);
    EXPECT(strlen(a) == DLOCK_TOKEN_HEX && strcmp(a, b) != 0);
    EXPECT(strspn(a, "0123456789abcdef") == DLOCK_TOKEN_HEX);
    for (int rc = DLOCK_ENOMEM; rc <= DLOCK_OK; rc++)
        EXPECT(dlock_strerror(rc)[0] != '\0');
    EXPECT(strcmp(dlock_version(), DLOCK_VERSION_STRING) == 0);
    EXPECT(strstr(dlock_schemes(), "sqlite") != NULL);
}

/* Tokens come from a per-thread pool of random bytes and the pid is
 * cached: a fork child must neither hand out the tokens its parent will
 * (its copy of the pool) nor see its parent's pid. */
static void test_tokens_after_fork(void)
{
    char parent[DLOCK_TOKEN_HEX + 1], child[DLOCK_TOKEN_HEX + 1];
    char first[DLOCK_TOKEN_HEX + 1];
    int fds[2], status = 0;
    pid_t pid;

    EXPECT(dlock__pid() == getpid());
    EXPECT(dlock__token(first) == DLOCK_OK); /* the pool is filled */
    EXPECT(pipe(fds) == 0);
    pid = fork();
    EXPECT(pid >= 0);
    if (pid == 0) {
        int ok = dlock__pid() == getpid() && dlock__token(child) == DLOCK_OK;

        if (!ok)
            memset(child, 'x', DLOCK_TOKEN_HEX);
        child[DLOCK_TOKEN_HEX] = '\0';
        _exit(write(fds[1], child, DLOCK_TOKEN_HEX) == DLOCK_TOKEN_HEX ? 0 : 1);
    }
    close(fds[1]);
    EXPECT(read(fds[0], child, DLOCK_TOKEN_HEX) == DLOCK_TOKEN_HEX);
    child[DLOCK_TOKEN_HEX] = '\0';
    close(fds[0]);
    EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0);
    EXPECT(dlock__token(parent) == DLOCK_OK);
    EXPECT(strspn(child, "0123456789abcdef") == DLOCK_TOKEN_HEX);
    EXPECT(strcmp(parent, child) != 0 && strcmp(first, child) != 0);
}

static void test_store_urls(void)
{
    dlock_store *s = (dlock_store *)&s;
    char *ddl = NULL;

    EXPECT(dlock_store_open(&s, "nosuch://x") == DLOCK_EINVAL && s == NULL);
    EXPECT(strstr(dlock_errmsg(), "unknown") != NULL);
    EXPECT(dlock_store_open(&s, "sqlite://remotehost/x.db") == DLOCK_EINVAL);
    EXPECT(dlock_store_open(&s, "sqlite:///") == DLOCK_EINVAL);
    EXPECT(dlock_store_open(&s, "sqlite:///tmp/x.db?bogus=1") == DLOCK_EINVAL);
    EXPECT(dlock_store_open(&s, "sqlite:///nonexistent-dir/x/y.db") ==
           DLOCK_EUNAVAIL);
    EXPECT(dlock_ddl(&ddl, "sqlite:///x.db") == DLOCK_OK && ddl != NULL);
    EXPECT(ddl != NULL && strstr(ddl, "dlock_fences") != NULL);
    dlock_free(ddl);
    dlock_store_close(NULL);
}

/* An unencoded '&' in a ?password= value makes the password's tail look
 * like an unknown option: the message must not name it, on any scheme
 * (PostgreSQL checks libpq's keywords itself: libpq would quote it). */
static void test_password_tail(void)
{
    static const char *const urls[] = {
        "sqlite:///tmp/dlock-unit-tail.db?password=ab&Zq9TailSecret",
        "redis://127.0.0.1:1/0?password=abcd&Zq9TailSecret",
        "redis://127.0.0.1:1/0?password=abcd&Zq9TailSecret=1",
        "postgres://u@127.0.0.1:1/d?password=abcd&Zq9TailSecret",
        "postgres://u@127.0.0.1:1/d?password=abcd&Zq9TailSecret=1",
        "mysql://u@127.0.0.1:1/d?password=abcd&Zq9TailSecret=1",
    };

    for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
        dlock_store *s = NULL;
        const char *scheme_end = strstr(urls[i], "://");
        int rc = dlock_store_open(&s, urls[i]);

        if (rc == DLOCK_EINVAL && strstr(dlock_errmsg(), "Zq9") == NULL)
            continue;
        /* A store that is not compiled in cannot tell. */
        if (rc == DLOCK_EINVAL && strstr(dlock_errmsg(), "scheme") != NULL)
            continue;
        fprintf(stderr, "  %.*s: %s: %s\n", (int)(scheme_end - urls[i]),
                urls[i], dlock_strerror(rc), dlock_errmsg());
        failures++;
        dlock_store_close(s);
    }
}

/* A handle's share of a server resource (?max_keys=, ?max_conns=):
 * without the option, half the server's capacity once read, and no limit
 * before; with it, that limit whatever the server says; 0: no limit.
 * A refused take counts nothing. */
static void test_quota(void)
{
    struct dlock_url *u = NULL;
    struct dlock__quota q;
    int64_t held = -1;

    EXPECT(dlock__url_parse(&u, "postgres://h/d?n=3&z=0&bad=x") == DLOCK_OK);
    if (u == NULL)
        return;
    /* auto */
    EXPECT(dlock__quota_init(&q, u, "absent") == DLOCK_OK && q.is_auto);
    EXPECT(dlock__quota_take(&q, 1000, &held) && held == 0);
    dlock__quota_give(&q, 1000);
    dlock__quota_server(&q, 21);
    EXPECT(q.max == 10 && q.server == 21);
    EXPECT(dlock__quota_take(&q, 7, &held) && held == 0);
    EXPECT(dlock__quota_take(&q, 3, &held) && held == 7);
    EXPECT(!dlock__quota_take(&q, 1, &held) && held == 10 && q.used == 10);
    dlock__quota_give(&q, 3);
    EXPECT(!dlock__quota_take(&q, 4, &held) && q.used == 7);
    EXPECT(dlock__quota_take(&q, 3, &held) && q.used == 10);
    /* ?n=3: the server's capacity does not change it */
    EXPECT(dlock__quota_init(&q, u, "n") == DLOCK_OK && !q.is_auto);
    dlock__quota_server(&q, 1000);
    EXPECT(q.max == 3);
    EXPECT(dlock__quota_take(&q, 3, &held));
    EXPECT(!dlock__quota_take(&q, 1, &held) && held == 3);
    /* ?z=0: no limit */
    EXPECT(dlock__quota_init(&q, u, "z") == DLOCK_OK && !q.is_auto);
    dlock__quota_server(&q, 2);
    EXPECT(dlock__quota_take(&q, 1000000, &held));
    EXPECT(dlock__quota_init(&q, u, "bad") == DLOCK_EINVAL);
    dlock__url_free(u);
}

/* {{placeholder}} expansion of statement templates (src/core/text.h). */
static void test_text_expand(void)
{
    const char *const vars[] = {"table", "dlock_locks", "x", "",
                                "v",     NULL,          NULL};
    char *s;

    s = dlock__text_expand("SELECT * FROM {{table}} WHERE a{{x}}b", vars);
    EXPECT(s != NULL && strcmp(s, "SELECT * FROM dlock_locks WHERE ab") == 0);
    free(s);
    s = dlock__text_expand("{{v}}{{table}}{", vars); /* NULL value: "" */
    EXPECT(s != NULL && strcmp(s, "dlock_locks{") == 0);
    free(s);
    s = dlock__text_expand("no placeholders", NULL);
    EXPECT(s != NULL && strcmp(s, "no placeholders") == 0);
    free(s);
    EXPECT(dlock__text_expand("a {{missing}} b", vars) == NULL);
    EXPECT(strstr(dlock_errmsg(), "{{missing}}") != NULL);
    EXPECT(dlock__text_expand("a {{table b", vars) == NULL);
    /* A value is copied, never expanded again: the builders insert
     * expanded fragments (mysql's fence_next, idle_set) as values. */
    {
        const char *const frag[] = {"f", "{{table}} %s }}{{", "table", "t",
                                    NULL};

        s = dlock__text_expand("[{{f}}|{{table}}]", frag);
        EXPECT(s != NULL && strcmp(s, "[{{table}} %s }}{{|t]") == 0);
        free(s);
    }
}

static void test_bounds(void);

/* A store built for another version of store.h is refused, by name. */
static void test_ops_version(void)
{
    struct dlock_store_ops ops = {.version = DLOCK_STORE_OPS_VERSION,
                                  .name = "mock"};

    EXPECT(dlock__ops_check(&ops) == DLOCK_OK);
    ops.version = DLOCK_STORE_OPS_VERSION - 1;
    EXPECT(dlock__ops_check(&ops) == DLOCK_ENOTSUP);
    EXPECT(strstr(dlock_errmsg(), "mock store") != NULL &&
           strstr(dlock_errmsg(), "contract version") != NULL);
}

/* A grant without a fencing token is refused by the core (acquire.c's
 * no_fence()), and let go again: a mock store whose try_acquire answers
 * OK without setting one.  The fence is the core's to zero before every
 * attempt: a store whose earlier attempt set one and then backed out
 * (BUSY) must not pass a later bare OK off as fenced. */
static int mock_calls, mock_releases;

static int mock_try(struct dlock_store *s, struct dlock_lock *lk,
                    int64_t deadline, int64_t *retry_ms)
{
    (void)s;
    (void)deadline;
    *retry_ms = 0;
    if (mock_calls++ == 0) {
        lk->fence = 7; /* a round that backed out, leaving its fence */
        return DLOCK_BUSY;
    }
    return DLOCK_OK; /* granted, but no fence */
}

static int mock_release(struct dlock_store *s, struct dlock_lock *lk)
{
    (void)s;
    (void)lk;
    mock_releases++;
    return DLOCK_OK;
}

static void test_grant_without_fence(void)
{
    static const struct dlock_store_ops ops = {
        .version = DLOCK_STORE_OPS_VERSION,
        .name = "mock",
        .try_acquire = mock_try,
        .release = mock_release,
    };
    struct dlock_store st = {.ops = &ops, .url = (char *)"mock://"};
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;

    st.pid = getpid();
    st.gen = dlock__generation();
    o.wait_ms = 2000;
    o.auto_renew = 0;
    EXPECT(dlock_acquire(&l, &st, "no-fence", &o) == DLOCK_ESTORE);
    EXPECT(l == NULL);
    if (l != NULL) /* taken (the bug): let go while the mock lives */
        (void)dlock_release(l);
    EXPECT(mock_calls == 2);    /* BUSY (fence 7 left), then a bare OK */
    EXPECT(mock_releases == 1); /* the bare grant let go again */
    EXPECT(strstr(dlock_errmsg(), "without a fencing token") != NULL);
}

/* dlock_store_probe() (issue 47, `dlock check`): the struct's version is
 * checked, every field is "unknown" before the store's op runs, and a
 * store without the op is DLOCK_ENOTSUP with those unknowns. */
static int mock_probe_saw_defaults;

static int mock_probe(struct dlock_store *s, dlock_probe *out)
{
    (void)s;
    mock_probe_saw_defaults =
        out->version == 1 && out->server_ms == 0 && out->tls == -1 &&
        out->tables_ok == -1 && out->resolution_ms == 1 &&
        out->cert_not_after_ms == 0 && out->tables[0] == '\0';
    out->server_ms = 42;
    out->tls = 1;
    return DLOCK_OK;
}

static void test_probe(void)
{
    struct dlock_store_ops ops = {.version = DLOCK_STORE_OPS_VERSION,
                                  .name = "mock"};
    struct dlock_store s;
    dlock_probe p;

    memset(&s, 0, sizeof(s));
    s.ops = &ops;
    s.gen = dlock__generation();
    memset(&p, 0x5a, sizeof(p));
    p.version = DLOCK_PROBE_VERSION;
    EXPECT(dlock_store_probe(&s, &p) == DLOCK_ENOTSUP);
    EXPECT(strstr(dlock_errmsg(), "mock store") != NULL);
    EXPECT(p.server_ms == 0 && p.tls == -1 && p.tables_ok == -1 &&
           p.cert_not_after_ms == 0 && p.tls_version[0] == '\0');
    ops.probe = mock_probe;
    p.version = DLOCK_PROBE_VERSION;
    EXPECT(dlock_store_probe(&s, &p) == DLOCK_OK);
    EXPECT(mock_probe_saw_defaults && p.server_ms == 42 && p.tls == 1);
    p.version = 0;
    EXPECT(dlock_store_probe(&s, &p) == DLOCK_EINVAL);
    p.version = DLOCK_PROBE_VERSION + 1;
    EXPECT(dlock_store_probe(&s, &p) == DLOCK_EINVAL);
    EXPECT(dlock_store_probe(&s, NULL) == DLOCK_EINVAL);
    p.version = DLOCK_PROBE_VERSION;
    EXPECT(dlock_store_probe(NULL, &p) == DLOCK_EINVAL);
    s.gen++; /* a fork child's copy */
    EXPECT(dlock_store_probe(&s, &p) == DLOCK_EINVAL);
}

int main(void)
{
    test_redact();
    test_scrub();
    test_ambiguous();
    test_parse();
    test_url_hosts();
    test_names();
    test_backoff();
    test_tokens_and_strings();
    test_tokens_after_fork();
    test_store_urls();
    test_password_tail();
    test_quota();
    test_bounds();
    test_text_expand();
    test_ops_version();
    test_grant_without_fence();
    test_probe();
    if (failures == 0)
        printf("unit: all passed\n");
    return failures != 0;
}

/* Issue 34, item 7: every duration from outside is clamped where it is
 * parsed, so that now + it cannot overflow. */
static void test_bounds_clamp(void)
{
    EXPECT(dlock__clamp_ms(0) == 0);
    EXPECT(dlock__clamp_ms(1500) == 1500);
    EXPECT(dlock__clamp_ms(DLOCK_DURATION_MAX_MS) == DLOCK_DURATION_MAX_MS);
    EXPECT(dlock__clamp_ms(DLOCK_DURATION_MAX_MS + 1) == DLOCK_DURATION_MAX_MS);
    EXPECT(dlock__clamp_ms(INT64_MAX) == DLOCK_DURATION_MAX_MS);
    EXPECT(dlock__clamp_ms(-1) == -1);
    EXPECT(dlock__clamp_ms(INT64_MIN) == -1);
    /* The sums the wait loop and the stores make stay in range. */
    EXPECT(dlock__now_ms() + dlock__clamp_ms(INT64_MAX) + 5000 > 0);
}

static void test_bounds_url_timeouts(void)
{
    struct dlock_url *u = NULL;
    int64_t ms = -7;

    /* The largest a URL can spell (INT64_MAX / 1000 seconds) and a
     * year and a day: a year each. */
    EXPECT(dlock__url_parse(&u, "redis://h/?timeout=9223372036854775"
                                "&connect_timeout=31622400s"
                                "&replicas_timeout=9223372036854775ms"
                                "&a=1000ms") == DLOCK_OK);
    if (u == NULL)
        return;
    EXPECT(dlock__url_param_ms(u, "timeout", 1000, &ms) == DLOCK_OK);
    EXPECT(ms == DLOCK_DURATION_MAX_MS);
    ms = -7;
    EXPECT(dlock__url_param_ms(u, "connect_timeout", 1000, &ms) == DLOCK_OK);
    EXPECT(ms == DLOCK_DURATION_MAX_MS);
    ms = -7;
    EXPECT(dlock__url_param_ms(u, "replicas_timeout", 1000, &ms) == DLOCK_OK);
    EXPECT(ms == DLOCK_DURATION_MAX_MS);
    EXPECT(dlock__url_param_ms(u, "a", 1000, &ms) == DLOCK_OK);
    EXPECT(ms == 1000); /* in range: as written */
    EXPECT(dlock__now_ms() + DLOCK_DURATION_MAX_MS > dlock__now_ms());
    dlock__url_free(u);
}

static void test_bounds(void)
{
    test_bounds_clamp();
    test_bounds_url_timeouts();
}
