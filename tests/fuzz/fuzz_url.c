/* libFuzzer: the store URL parser and password redaction.  Besides not
 * crashing: a parsed URL's redacted form never holds its password (when
 * the password is distinctive enough to look for), and parsing is
 * deterministic.  And the property of issue 33 (items 7, 8): the input
 * also builds a URL with a marker password, the fuzzer's bytes around
 * the marker and after the '@' (any mix of '@', '/', '?', '#', ':', '%'),
 * on every scheme; neither the redacted form, nor the parser's message
 * or redacted form, nor the host, user, path or option names it would
 * hand a driver may hold the marker. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dlock.h"
#include "url.h"

/* Does the password's text also appear in another part of the URL (then
 * seeing it in the redacted form is not a leak)? */
static int elsewhere(const struct dlock_url *u, const char *pw)
{
    const char *parts[] = {u->user, u->host, u->path, u->query, u->scheme};

    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
        if (parts[i] != NULL && strstr(parts[i], pw) != NULL)
            return 1;
    return 0;
}

#define MARK "QZXKJWVTRP"

static void no_mark(const char *url, const char *what, const char *s)
{
    (void)url;
    (void)what;
    if (s != NULL && (strstr(s, "QZXKJ") != NULL || strstr(s, "WVTRP") != NULL))
        abort();
}

/* data: [scheme][user][form][where] then password bytes '\n' suffix. */
static void marker_property(const uint8_t *data, size_t size)
{
    static const char *const schemes[] = {
        "sqlite",        "redis",    "rediss",     "redis-sentinel",
        "redis-cluster", "postgres", "postgresql", "mysql",
        "mariadb",       "unix",     "etcd",       "etcds"};
    const size_t nschemes = sizeof(schemes) / sizeof(schemes[0]);
    static const char *const users[] = {"",    "u",       "admin@corp",
                                        "a@b", "us%40er", "admin@server"};
    const uint8_t *nl;
    size_t alen, blen, where, o = 0;
    char *url, *red = NULL;
    struct dlock_url *u = NULL;
    int form;

    /* The fuzzer's own bytes may spell a half of the marker. */
    if (size < 4 || memmem(data, size, "QZXKJ", 5) != NULL ||
        memmem(data, size, "WVTRP", 5) != NULL)
        return;
    form = data[2] % 2; /* 0: user:PW@suffix, 1: suffix?password=PW */
    where = data[3];
    data += 4;
    size -= 4;
    nl = memchr(data, '\n', size);
    alen = nl != NULL ? (size_t)(nl - data) : size;
    blen = nl != NULL ? size - alen - 1 : 0;
    url = malloc(alen + blen + 64 + sizeof(MARK));
    if (url == NULL)
        return;
    o = (size_t)sprintf(url, "%s://", schemes[data[-4] % nschemes]);
    if (form == 0)
        o += (size_t)sprintf(url + o, "%s:", users[data[-3] % 6]);
    else {
        for (size_t i = 0; i < blen; i++)
            url[o++] = nl[1 + i] != '\0' ? (char)nl[1 + i] : 'x';
        o += (size_t)sprintf(
            url + o, "%spassword=", memchr(url, '?', o) != NULL ? "&" : "?");
    }
    where = alen > 0 ? where % (alen + 1) : 0;
    for (size_t i = 0; i <= alen; i++) {
        if (i == where) {
            memcpy(url + o, MARK, sizeof(MARK) - 1);
            o += sizeof(MARK) - 1;
        }
        if (i < alen) {
            char ch = data[i] != '\0' ? (char)data[i] : 'x';

            /* In a ?password= value an '&' starts another option: no
             * parser can tell, so the property leaves it out. */
            url[o++] = form == 1 && ch == '&' ? 'x' : ch;
        }
    }
    if (form == 0) {
        url[o++] = '@';
        for (size_t i = 0; i < blen; i++)
            url[o++] = nl[1 + i] != '\0' ? (char)nl[1 + i] : 'x';
    }
    url[o] = '\0';
    if (dlock_url_redact(&red, url) == DLOCK_OK)
        no_mark(url, "redact", red);
    dlock_free(red);
    if (dlock__url_parse(&u, url) != DLOCK_OK) {
        no_mark(url, "parse message", dlock_errmsg());
    } else {
        no_mark(url, "redacted", u->redacted);
        no_mark(url, "host", u->host);
        no_mark(url, "user", u->user);
        no_mark(url, "path", u->path);
        for (size_t i = 0; i < u->nparams; i++)
            no_mark(url, "option name", u->params[i].key);
        {
            /* The hosts of a list (etcd://, redis-sentinel://) that a
             * store would connect to hold no part of the password. */
            char **hosts = NULL;
            int *ports = NULL, n = 0;

            if (dlock__url_hosts(u, 2379, "etcd", &hosts, &ports, &n) !=
                DLOCK_OK)
                no_mark(url, "hosts message", dlock_errmsg());
            for (int i = 0; i < n; i++) {
                no_mark(url, "host of a list", hosts[i]);
                free(hosts[i]);
            }
            free(hosts);
            free(ports);
        }
        dlock__url_free(u);
    }
    free(url);
}

/* A list of hosts (etcd://h1:p1,h2:p2,..., redis-sentinel://): either
 * one host per comma-separated entry, none empty, every port in range, or
 * EINVAL (ENOMEM), with what was filled freed by the caller. */
static void hosts_checks(const struct dlock_url *u)
{
    char **hosts = NULL;
    int *ports = NULL, n = -1, commas = 0, rc;

    for (const char *c = u->host != NULL ? u->host : ""; *c; c++)
        commas += *c == ',';
    rc = dlock__url_hosts(u, 2379, "etcd", &hosts, &ports, &n);
    if (n < 0 || n > commas + 1)
        abort();
    if (rc == DLOCK_OK) {
        if (n != commas + 1)
            abort();
        for (int i = 0; i < n; i++)
            if (hosts[i] == NULL || hosts[i][0] == '\0' ||
                strchr(hosts[i], ',') != NULL || ports[i] < 1 ||
                ports[i] > 65535)
                abort();
    } else if (rc != DLOCK_EINVAL && rc != DLOCK_ENOMEM) {
        abort();
    }
    for (int i = 0; i < n; i++)
        free(hosts[i]);
    free(hosts);
    free(ports);
}

static int raw_checks(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1), *red = NULL;
    struct dlock_url *u = NULL;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    if (dlock_url_redact(&red, s) == DLOCK_OK)
        dlock_free(red);
    if (dlock__url_parse(&u, s) == DLOCK_OK) {
        if (u->redacted == NULL || u->scheme == NULL)
            abort();
        /* A password of 6+ bytes that occurs once in the URL must be gone
         * from the redacted form. */
        if (u->password != NULL && strlen(u->password) >= 6 &&
            strstr(s, u->password) != NULL &&
            strstr(strstr(s, u->password) + 1, u->password) == NULL &&
            !elsewhere(u, u->password) &&
            strstr(u->redacted, u->password) != NULL)
            abort();
        for (size_t i = 0; i < u->nparams; i++) {
            const char *k = u->params[i].key, *v = u->params[i].value;
            const char *at = strstr(s, v);

            (void)dlock__url_param(u, k);
            /* The same for a password given as a parameter (?password=,
             * ?sslpassword=), wherever it stands after the path. */
            if ((strcasecmp(k, "password") == 0 ||
                 strcasecmp(k, "sslpassword") == 0) &&
                strlen(v) >= 8 && at != NULL && strstr(at + 1, v) == NULL &&
                strstr(u->redacted, v) != NULL)
                abort();
        }
        hosts_checks(u);
        {
            int64_t ms = 0;

            (void)dlock__url_param_ms(u, "timeout", 1000, &ms);
            (void)dlock__url_param_ms(u, "connect_timeout", 1000, &ms);
            ms = -1;
            if (dlock__url_param_count(u, "max_keys", &ms) == DLOCK_OK &&
                dlock__url_param(u, "max_keys") != NULL && ms < 0)
                abort(); /* a count is never negative */
        }
        dlock__url_free(u);
    }
    free(s);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    marker_property(data, size);
    return raw_checks(data, size);
}
