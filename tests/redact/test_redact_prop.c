/*
 * test_redact_prop.c - property test (issue 33, items 7 and 8): for random
 * store URLs holding a marker password (random mixes of '@', '/', '?',
 * '#', ':', '%', '&', percent-encoded bytes, user names with '@'; every
 * scheme), no output of the library holds the marker: dlock_url_redact(),
 * the parser's message or redacted form, what the parser would hand a
 * driver (host, user, path, options: a host goes to DNS), and
 * dlock_store_open()'s message, rc text and dlock_store_url().
 *
 *   test_redact_prop [COUNT [SEED]]   run (seed printed; DLOCK_SEED too)
 *   test_redact_prop --gen COUNT SEED DIR
 *                                      print "URL<TAB>M1<TAB>M2" lines for
 *                                      tests/redact/test_redact_cli.sh
 *
 * The marker's two halves M1 and M2 (5 random letters each) are looked
 * for: a leak of the marker as written, decoded or in part shows one.
 * Stores are opened only when the parsed host is one of the loopback
 * addresses written (port 1: refused at once), so no name is ever looked
 * up; a parsed host that is not one of them is a failure in itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"
#include "url.h"

static uint64_t rng;

static uint64_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * UINT64_C(2685821657736338717);
}

static size_t pick(size_t n)
{
    return (size_t)(next() % n);
}

struct gen {
    char url[1024];
    char m1[6], m2[6];
    int loopback_only; /* every host written is a loopback address */
};

/* Every buffer cat() appends to is 1024 bytes. */
static void cat(char *b, const char *s)
{
    size_t l = strlen(b), n = strlen(s);

    if (n > 1023 - l)
        n = 1023 - l;
    memcpy(b + l, s, n);
    b[l + n] = '\0';
}

/* Noise a password may hold around the marker. */
static void noise(char *b, int no_amp)
{
    static const char *const bits[] = {
        "@",   "/",   "?", "#", ":", "%", "%40", "%2F", "%3F",  "%23",
        "%25", "%3A", "x", "9", "&", "=", "@@",  "%2",  "/x?y", ":@"};
    size_t n = pick(4);

    for (size_t i = 0; i < n; i++) {
        const char *s = bits[pick(sizeof(bits) / sizeof(bits[0]))];

        if (no_amp && strchr(s, '&') != NULL)
            continue;
        cat(b, s);
    }
}

static void generate(struct gen *g, const char *dir)
{
    static const char letters[] =
        "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghjkmnpqrstuvwxyz";
    static const char *const schemes[] = {
        "sqlite",   "redis",      "rediss", "redis-sentinel", "redis-cluster",
        "postgres", "postgresql", "mysql",  "mariadb",        "unix"};
    static const char *const users[] = {"",      "u",           "admin@corp",
                                        "a@b",   "us%40er",     "alice",
                                        "x.y-z", "admin@server"};
    const char *scheme = schemes[pick(sizeof(schemes) / sizeof(schemes[0]))];
    char marker[16], written[32], pw[1024] = "", host[64], path[300] = "",
                                  query[300] = "";
    int form = (int)pick(10); /* 0..6 userinfo, 7..8 ?password=, 9 both */

    for (int i = 0; i < 10; i++)
        marker[i] = letters[pick(sizeof(letters) - 1)];
    marker[10] = '\0';
    memcpy(g->m1, marker, 5);
    g->m1[5] = '\0';
    memcpy(g->m2, marker + 5, 5);
    g->m2[5] = '\0';
    /* The marker as written: sometimes one byte percent-encoded. */
    if (pick(3) == 0) {
        size_t k = 1 + pick(8);

        snprintf(written, sizeof(written), "%.*s%%%02X%s", (int)k, marker,
                 (unsigned char)marker[k], marker + k + 1);
    } else {
        snprintf(written, sizeof(written), "%s", marker);
    }
    g->loopback_only = 1;
    if (strcmp(scheme, "sqlite") == 0) {
        snprintf(host, sizeof(host), "%s", pick(2) ? "" : "localhost");
        g->loopback_only = 0; /* no network at all */
        snprintf(path, sizeof(path), "%s/p%u.db", dir, (unsigned)pick(4));
    } else if (strcmp(scheme, "unix") == 0) {
        host[0] = '\0';
        snprintf(path, sizeof(path), "%s/nonexistent.sock", dir);
    } else if (strstr(scheme, "sentinel") != NULL) {
        snprintf(host, sizeof(host), "127.0.0.1:1,127.0.0.1:2");
        snprintf(path, sizeof(path), "/mymaster");
    } else if (strstr(scheme, "cluster") != NULL) {
        snprintf(host, sizeof(host), "127.0.0.1:1,127.0.0.1:2");
    } else if (strncmp(scheme, "postgres", 8) == 0) {
        static const char *const h[] = {"127.0.0.1:1", "[::1]:1",
                                        "127.0.0.1:1,127.0.0.1:2"};

        snprintf(host, sizeof(host), "%s", h[pick(3)]);
        snprintf(path, sizeof(path), "%s", pick(3) ? "/db" : "");
        if (pick(2))
            snprintf(query, sizeof(query), "?sslmode=disable");
    } else if (strncmp(scheme, "redis", 5) == 0) {
        snprintf(host, sizeof(host), "%s", pick(2) ? "127.0.0.1:1" : "[::1]:1");
        snprintf(path, sizeof(path), "%s", pick(2) ? "/0" : "");
    } else {
        snprintf(host, sizeof(host), "127.0.0.1:1");
        snprintf(path, sizeof(path), "/db");
    }
    g->url[0] = '\0';
    cat(g->url, scheme);
    cat(g->url, "://");
    if (form <= 6 || form == 9) {
        noise(pw, 0);
        cat(pw, written);
        noise(pw, 0);
        cat(g->url, users[pick(sizeof(users) / sizeof(users[0]))]);
        cat(g->url, ":");
        cat(g->url, pw);
        cat(g->url, "@");
    } else if (pick(2)) {
        cat(g->url, users[pick(sizeof(users) / sizeof(users[0]))]);
        cat(g->url, "@");
    }
    cat(g->url, host);
    cat(g->url, path);
    cat(g->url, query);
    if (form >= 7) {
        char qp[1024] = "";
        static const char *const keys[] = {"password", "sslpassword",
                                           "Pass%77ord", "pwd"};

        noise(qp, 1);
        cat(qp, written);
        noise(qp, 1);
        cat(g->url, strchr(g->url + strlen(scheme) + 3, '?') ? "&" : "?");
        cat(g->url, keys[pick(sizeof(keys) / sizeof(keys[0]))]);
        cat(g->url, "=");
        cat(g->url, qp);
    }
}

static int failures;

static void no_marker(const struct gen *g, const char *what, const char *s)
{
    if (s != NULL && (strstr(s, g->m1) != NULL || strstr(s, g->m2) != NULL)) {
        failures++;
        if (failures <= 20)
            fprintf(stderr, "LEAK in %s\n  url: %s\n  out: %s\n", what, g->url,
                    s);
    }
}

static int loopback(const char *h)
{
    return strcmp(h, "127.0.0.1") == 0 || strcmp(h, "::1") == 0 ||
           strcmp(h, "127.0.0.1:1,127.0.0.1:2") == 0;
}

static void check(const struct gen *g)
{
    struct dlock_url *u = NULL;
    dlock_store *s = NULL;
    char *red = NULL;
    int rc;

    if (dlock_url_redact(&red, g->url) == DLOCK_OK)
        no_marker(g, "dlock_url_redact", red);
    dlock_free(red);
    rc = dlock__url_parse(&u, g->url);
    if (rc != DLOCK_OK) {
        no_marker(g, "parse message", dlock_errmsg());
    } else {
        no_marker(g, "parsed redacted form", u->redacted);
        /* What a driver would get besides the password: a host goes to
         * DNS, a user name and a path into messages. */
        no_marker(g, "parsed host", u->host);
        no_marker(g, "parsed user", u->user);
        no_marker(g, "parsed path", u->path);
        for (size_t i = 0; i < u->nparams; i++) {
            no_marker(g, "parsed option name", u->params[i].key);
            /* A credential's own value goes to the driver as such. */
            if (strcasecmp(u->params[i].key, "password") != 0 &&
                strcasecmp(u->params[i].key, "sslpassword") != 0 &&
                strcasecmp(u->params[i].key, "pwd") != 0)
                no_marker(g, "parsed option value", u->params[i].value);
        }
        if (g->loopback_only && u->host != NULL && u->host[0] != '\0' &&
            !loopback(u->host)) {
            failures++;
            fprintf(stderr, "HOST not as written: %s\n  url: %s\n", u->host,
                    g->url);
            dlock__url_free(u);
            return; /* never opened: it could be looked up */
        }
    }
    dlock__url_free(u);
    rc = dlock_store_open(&s, g->url);
    no_marker(g, "dlock_store_open message", dlock_errmsg());
    no_marker(g, "dlock_strerror", dlock_strerror(rc));
    if (rc == DLOCK_OK) {
        no_marker(g, "dlock_store_url", dlock_store_url(s));
        dlock_store_close(s);
    }
}

int main(int argc, char **argv)
{
    long count = 4000;
    uint64_t seed = 33;
    const char *env = getenv("DLOCK_SEED");
    char dir[] = "/tmp/dlock-redact-XXXXXX";

    if (argc >= 5 && strcmp(argv[1], "--gen") == 0) {
        struct gen g;

        count = atol(argv[2]);
        rng = strtoull(argv[3], NULL, 0) * 2 + 1;
        for (long i = 0; i < count; i++) {
            generate(&g, argv[4]);
            printf("%s\t%s\t%s\n", g.url, g.m1, g.m2);
        }
        return 0;
    }
    if (argc >= 2)
        count = atol(argv[1]);
    if (argc >= 3)
        seed = strtoull(argv[2], NULL, 0);
    else if (env != NULL && env[0] != '\0')
        seed = strtoull(env, NULL, 0);
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    printf("redact property: seed=%llu urls=%ld (DLOCK_SEED=%llu to "
           "repeat)\n",
           (unsigned long long)seed, count, (unsigned long long)seed);
    fflush(stdout);
    rng = seed * 2 + 1;
    for (long i = 0; i < count; i++) {
        struct gen g;

        generate(&g, dir);
        check(&g);
    }
    {
        char cmd[64];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    if (failures > 0) {
        printf("redact property: %d leaks in %ld urls (seed=%llu)\n", failures,
               count, (unsigned long long)seed);
        return 1;
    }
    printf("redact property: no leak in %ld urls\n", count);
    return 0;
}
