/*
 * url.c - store URL parsing and password redaction.
 *
 * scheme://[user[:password]@]host[:port][/path][?key=value&...]
 *
 * Redaction works on the text itself, so it also covers URLs that do not
 * parse: whatever sits between "user:" and the last "@" (even one past a
 * '/', '?' or '#' that a password forgot to percent-encode), and the value
 * of every query parameter that may carry a credential (password=,
 * sslpassword=, pass=, pwd=, secret, token, auth...; names compared after
 * percent-decoding, as libpq does), becomes "***".  When where a password
 * ends cannot be told (an '@' after the authority), nothing before the
 * last '@' is shown but a plain user name.  Such a URL, and one with a
 * '#', is refused by the parser without being echoed: one URL means one
 * thing, and the drivers get the parts dlock parsed, never the text.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dlock.h"
#include "errors.h"
#include "strutil.h"
#include "url.h"

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Percent-decode s[0..n) into a new string; NULL on a bad escape, an
 * encoded NUL or no memory (*bad tells which). */
static char *decode(const char *s, size_t n, int *bad)
{
    char *out = malloc(n + 1);
    size_t o = 0;

    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 1 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;

            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                *bad = 1;
                free(out);
                return NULL;
            }
            out[o++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    return out;
}

/* Length of the scheme at the start of url, 0 if there is none. */
static size_t scheme_len(const char *url)
{
    size_t i = 0;

    if (!isalpha((unsigned char)url[0]))
        return 0;
    while (isalnum((unsigned char)url[i]) || url[i] == '+' || url[i] == '-' ||
           url[i] == '.')
        i++;
    return url[i] == ':' ? i : 0;
}

/* May the query parameter key[0..n) carry a credential?  Generous on
 * purpose: a redacted harmless value costs nothing. */
static int secret_key(const char *key, size_t n)
{
    static const char *const words[] = {"pass",  "pwd",  "secret",
                                        "token", "auth", "cred"};
    char k[64];
    size_t m = 0;

    /* Decode %XX and lower-case: "Pass%77ord" is libpq's password too. */
    for (size_t i = 0; i < n && m + 1 < sizeof(k); i++) {
        int hi, lo;

        if (key[i] == '%' && i + 2 < n && (hi = hexval(key[i + 1])) >= 0 &&
            (lo = hexval(key[i + 2])) >= 0) {
            k[m++] = (char)tolower(hi * 16 + lo);
            i += 2;
        } else {
            k[m++] = (char)tolower((unsigned char)key[i]);
        }
    }
    k[m] = '\0';
    if (m >= sizeof(k) - 1)
        return 1; /* too long to judge: hide it */
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++)
        if (strstr(k, words[w]) != NULL)
            return 1;
    return 0;
}

/* Append s[0..n) to buf at *o (buf has room: the caller sized it). */
static void put(char *buf, size_t *o, const char *s, size_t n)
{
    memcpy(buf + *o, s, n);
    *o += n;
}

/* The query (or, with any_sep, text after an ambiguous URL's last '@',
 * whose shape is unknown) with the value of every parameter that may
 * carry a credential as "***".  q starts anywhere: text before the first
 * separator is kept.  A key starts after '?' or '&' (any_sep: either, at
 * every place); a credential's value runs to the next '&' that starts
 * a key=value (or the end). */
static void put_query(char *buf, size_t *o, const char *q, int any_sep)
{
    const char *seps = any_sep ? "?&" : "&";
    size_t n = strcspn(q, any_sep ? "?&" : "?");

    put(buf, o, q, n);
    q += n;
    while (*q != '\0') {
        const char *key = q + 1; /* past the '?' or '&' */
        size_t seg = strcspn(key, seps) + 1;
        const char *eq = memchr(key, '=', seg - 1);

        if (eq != NULL && secret_key(key, (size_t)(eq - key))) {
            put(buf, o, q, (size_t)(eq - q) + 1);
            put(buf, o, "***", 3);
            seg = (size_t)(eq + 1 - q) + strcspn(eq + 1, "&");
            /* "&text" without '=' is no option: the value goes on (a
             * password holding an unencoded '&'). */
            while (q[seg] == '&') {
                size_t t = strcspn(q + seg + 1, "&");

                if (memchr(q + seg + 1, '=', t) != NULL)
                    break;
                seg += 1 + t;
            }
        } else {
            put(buf, o, q, seg);
        }
        q += seg;
    }
}

/* Does a credential parameter ("?password=", "&pwd=", ...) start in
 * [s, end)? */
static int cred_before(const char *s, const char *end)
{
    for (const char *c = s; c < end; c++) {
        if (*c == '?' || *c == '&') {
            size_t k = strcspn(c + 1, "=?&");

            if (c + 1 + k < end && c[1 + k] == '=' && secret_key(c + 1, k))
                return 1;
        }
    }
    return 0;
}

dlock_rc dlock_url_redact(char **out, const char *url)
{
    size_t len, o = 0, sl, auth, auth_end;
    const char *last_at, *colon;
    char *buf;

    dlock__clearerr();
    if (out == NULL)
        return dlock__seterr(DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (url == NULL)
        url = "";
    len = strlen(url);
    /* Every "***" replaces at least one character or is an insertion after
     * "password=" / "user:"; 3 extra per '=' or ':' bounds the growth. */
    buf = malloc(len * 4 + 8);
    if (buf == NULL)
        return dlock__enomem();

    sl = scheme_len(url);
    last_at = strrchr(url, '@');
    if (sl == 0 || strncmp(url + sl, "://", 3) != 0) {
        /* No authority to find a password in: if there is an '@', some
         * reading may take what precedes it for one.  Show nothing. */
        if (last_at != NULL) {
            put(buf, &o, url, sl);
            put(buf, &o, sl > 0 ? ":***" : "***", sl > 0 ? 4 : 3);
        } else {
            put_query(buf, &o, url, 0);
        }
        buf[o] = '\0';
        *out = buf;
        return DLOCK_OK;
    }
    auth = sl + 3;
    auth_end = auth + strcspn(url + auth, "/?#");
    if (last_at == NULL) {
        put(buf, &o, url, auth_end);
        put_query(buf, &o, url + auth_end, 0);
    } else if ((size_t)(last_at - url) < auth_end) {
        /* user[:password]@host: the password runs from the first ':' to
         * the last '@' of the authority (a user name may hold an '@'). */
        colon = memchr(url + auth, ':', (size_t)(last_at - url) - auth);
        if (colon != NULL) {
            put(buf, &o, url, (size_t)(colon - url) + 1);
            put(buf, &o, "***", 3);
            put(buf, &o, last_at, auth_end - (size_t)(last_at - url));
        } else {
            put(buf, &o, url, auth_end);
        }
        put_query(buf, &o, url + auth_end, 0);
    } else {
        /* An '@' past the authority: a '/', '?' or '#' in a user name or
         * password was not encoded, or an '@' in a path or option value
         * was not.  Where a password ends cannot be told: nothing before
         * the last '@' is shown but a user name that no reading takes
         * for more (no '/', '?', '#' before its ':'). */
        colon = memchr(url + auth, ':', (size_t)(last_at - url) - auth);
        if (cred_before(url + auth, last_at)) {
            /* The last '@' may be inside a ?password= value: what follows
             * it may be the password's tail.  Nothing is shown. */
            put(buf, &o, url, auth);
            put(buf, &o, "***", 3);
            buf[o] = '\0';
            *out = buf;
            return DLOCK_OK;
        }
        if (colon != NULL &&
            strcspn(url + auth, "/?#") >= (size_t)(colon - url) - auth) {
            put(buf, &o, url, (size_t)(colon - url) + 1);
            put(buf, &o, "***@", 4);
        } else {
            put(buf, &o, url, auth);
            put(buf, &o, "***@", 4);
        }
        put_query(buf, &o, last_at + 1, 1);
    }
    buf[o] = '\0';
    *out = buf;
    return DLOCK_OK;
}

/* Append a copy of s[0..n) (decoded if dec) to the list *v of *n; -1 if
 * out of memory (a bad escape adds nothing: such a URL is refused). */
static int add_secret(char ***v, size_t *n, const char *s, size_t len, int dec)
{
    char **nv, *c;
    int bad = 0;

    if (len == 0)
        return 0;
    c = dec ? decode(s, len, &bad) : dlock__strndup(s, len);
    if (c == NULL)
        return bad ? 0 : -1;
    nv = realloc(*v, (*n + 2) * sizeof(**v));
    if (nv == NULL) {
        free(c);
        return -1;
    }
    *v = nv;
    nv[(*n)++] = c;
    nv[*n] = NULL;
    return 0;
}

char **dlock__url_secrets(const char *url)
{
    size_t n = 0, sl = scheme_len(url), auth, auth_end;
    const char *last_at = strrchr(url, '@'), *q;
    char **v = calloc(1, sizeof(*v));
    int rc = 0;

    if (v == NULL)
        return NULL;
    if (sl > 0 && strncmp(url + sl, "://", 3) == 0 && last_at != NULL) {
        const char *colon;

        auth = sl + 3;
        auth_end = auth + strcspn(url + auth, "/?#");
        colon = memchr(url + auth, ':', (size_t)(last_at - url) - auth);
        if (colon != NULL) {
            /* Whatever may be the password: up to the authority's last
             * '@', and up to the URL's last '@' if that is further. */
            const char *in_auth = NULL;

            for (const char *c = colon; c < url + auth_end; c++)
                if (*c == '@')
                    in_auth = c;
            for (int dec = 0; dec < 2 && rc == 0; dec++) {
                if (in_auth != NULL)
                    rc = add_secret(&v, &n, colon + 1,
                                    (size_t)(in_auth - colon - 1), dec);
                if (rc == 0 && in_auth != last_at)
                    rc = add_secret(&v, &n, colon + 1,
                                    (size_t)(last_at - colon - 1), dec);
            }
        }
    }
    /* Credential parameters, as written and decoded. */
    q = strchr(url, '?');
    while (rc == 0 && q != NULL && *q != '\0') {
        const char *key = q + 1;
        size_t seg = strcspn(key, "&");
        const char *eq = memchr(key, '=', seg);

        if (eq != NULL && secret_key(key, (size_t)(eq - key)))
            for (int dec = 0; dec < 2 && rc == 0; dec++)
                rc = add_secret(&v, &n, eq + 1, seg - (size_t)(eq + 1 - key),
                                dec);
        q = key + seg;
    }
    if (rc != 0) {
        dlock__secrets_free(v);
        return NULL;
    }
    return v;
}

void dlock__secrets_free(char **v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; v[i] != NULL; i++) {
        memset(v[i], 0, strlen(v[i]));
        free(v[i]);
    }
    free(v);
}

void dlock__scrub(char *dst, size_t cap, const char *src,
                  const char *const *secrets)
{
    size_t o = 0;

    if (cap == 0)
        return;
    if (src == NULL)
        src = "";
    /* A secret too short to cut out without cutting words too: the text
     * is dropped if it holds it at all. */
    for (size_t k = 0; secrets != NULL && secrets[k] != NULL; k++)
        if (secrets[k][0] != '\0' && strlen(secrets[k]) < 4 &&
            strstr(src, secrets[k]) != NULL) {
            snprintf(dst, cap,
                     "(text not shown: it may hold the "
                     "password)");
            return;
        }
    while (*src != '\0' && o + 1 < cap) {
        size_t hit = 0;

        for (size_t k = 0; secrets != NULL && secrets[k] != NULL; k++) {
            size_t l = strlen(secrets[k]), m = 0;

            /* The whole secret, or a head of 8 bytes or more of a longer
             * one: a server or driver may echo it cut (Redis cuts each
             * argument it echoes to fit 128 bytes). */
            while (m < l && src[m] == secrets[k][m])
                m++;
            if ((m == l || m >= 8) && m > hit)
                hit = m;
        }
        if (hit > 0) {
            for (size_t j = 0; j < 3 && o + 1 < cap; j++)
                dst[o++] = '*';
            src += hit;
        } else {
            dst[o++] = *src++;
        }
    }
    dst[o] = '\0';
}

void dlock__scrub_errmsg(const char *const *secrets)
{
    char tmp[1024];

    dlock__scrub(tmp, sizeof(tmp), dlock_errmsg(), secrets);
    dlock__seterr(0, "%s", tmp);
}

void dlock__url_free(struct dlock_url *u)
{
    if (u == NULL)
        return;
    free(u->scheme);
    free(u->user);
    if (u->password != NULL) {
        memset(u->password, 0, strlen(u->password));
        free(u->password);
    }
    free(u->host);
    free(u->path);
    free(u->query);
    free(u->redacted);
    if (u->raw != NULL) {
        memset(u->raw, 0, strlen(u->raw));
        free(u->raw);
    }
    for (size_t i = 0; i < u->nparams; i++) {
        free(u->params[i].key);
        free(u->params[i].value);
    }
    free(u->params);
    free(u);
}

/* Is the last parameter's key one of an earlier parameter's?  Which of
 * two values wins differs between programs (libpq: the last), so a URL
 * that gives one twice means nothing for sure and is refused. */
static int repeated(const struct dlock_url *u)
{
    const char *key = u->params[u->nparams - 1].key;

    for (size_t i = 0; i + 1 < u->nparams; i++)
        if (strcmp(u->params[i].key, key) == 0)
            return 1;
    return 0;
}

static int parse_query(struct dlock_url *u, const char *q)
{
    const char *p = q;
    size_t n = 1;

    for (const char *c = q; *c != '\0'; c++)
        n += *c == '&';
    u->params = calloc(n, sizeof(*u->params));
    if (u->params == NULL)
        return dlock__enomem();
    while (*p != '\0') {
        size_t seg = strcspn(p, "&");
        const char *eq = memchr(p, '=', seg);
        size_t klen = eq != NULL ? (size_t)(eq - p) : seg;
        struct dlock_url_param *prm = &u->params[u->nparams];
        int bad = 0;

        if (seg > 0) {
            prm->key = decode(p, klen, &bad);
            if (prm->key != NULL)
                prm->value = eq != NULL ? decode(eq + 1, seg - klen - 1, &bad)
                                        : dlock__strdup("");
            if (prm->key == NULL || prm->value == NULL) {
                free(prm->key);
                free(prm->value);
                prm->key = prm->value = NULL;
                return bad ? dlock__seterr(DLOCK_EINVAL,
                                           "bad %%-escape in the query of "
                                           "%s",
                                           u->redacted)
                           : dlock__enomem();
            }
            u->nparams++;
            if (repeated(u))
                return dlock__seterr(DLOCK_EINVAL,
                                     "option \"%s\" is given twice in %s; "
                                     "give it once",
                                     prm->key, u->redacted);
        }
        p += seg;
        if (*p == '&')
            p++;
    }
    return DLOCK_OK;
}

/* Brackets hold an IPv6 address (RFC 3986's IP-literal), with a zone
 * after '%' if any: never a name or an IPv4 address. */
static int is_ipv6(const char *s, size_t n)
{
    char buf[INET6_ADDRSTRLEN];
    unsigned char addr[sizeof(struct in6_addr)];
    const char *pct = memchr(s, '%', n);
    size_t len = pct != NULL ? (size_t)(pct - s) : n;

    if (len == 0 || len >= sizeof(buf) || (pct != NULL && pct + 1 == s + n))
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    return inet_pton(AF_INET6, buf, addr) == 1;
}

/* One host[:port] of s (n bytes): *h and *hlen the host (an IPv6 address
 * without its brackets, which must hold one), *colon the ':' before the
 * port, or NULL.  A '[' or ']' anywhere else is refused. */
static int split_host(const struct dlock_url *u, const char *s, size_t n,
                      const char **h, size_t *hlen, const char **colon)
{
    *h = s;
    *hlen = n;
    *colon = NULL;
    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);

        if (close == NULL)
            return dlock__seterr(DLOCK_EINVAL, "unclosed '[' in %s",
                                 u->redacted);
        if (close + 1 < s + n && close[1] != ':')
            return dlock__seterr(DLOCK_EINVAL, "junk after ']' in %s",
                                 u->redacted);
        *h = s + 1;
        *hlen = (size_t)(close - s - 1);
        *colon = close + 1 < s + n ? close + 1 : NULL;
        if (!is_ipv6(*h, *hlen))
            return dlock__seterr(DLOCK_EINVAL,
                                 "brackets hold an IPv6 address, not a name "
                                 "or an IPv4 address: %s",
                                 u->redacted);
        return DLOCK_OK;
    }
    if ((*colon = memchr(s, ':', n)) != NULL)
        *hlen = (size_t)(*colon - s);
    if (memchr(s, '[', *hlen) != NULL || memchr(s, ']', *hlen) != NULL)
        return dlock__seterr(DLOCK_EINVAL, "stray '[' or ']' in %s",
                             u->redacted);
    return DLOCK_OK;
}

/* Fill host and port from the authority's host part [start, end). */
static int parse_hostport(struct dlock_url *u, const char *s, size_t n)
{
    const char *port, *h, *colon;
    size_t hlen;
    int bad = 0, rc;

    if (memchr(s, ',', n) != NULL) {
        /* A libpq host list: hand it over as it is. */
        u->host = dlock__strndup(s, n);
        return u->host != NULL ? DLOCK_OK : dlock__enomem();
    }
    rc = split_host(u, s, n, &h, &hlen, &colon);
    if (rc != DLOCK_OK)
        return rc;
    port = colon != NULL ? colon + 1 : NULL;
    if (h != s) { /* in brackets: an IPv6 address, taken as it is */
        u->host = dlock__strndup(h, hlen);
    } else {
        u->host = hlen > 0 ? decode(s, hlen, &bad) : NULL;
        if (hlen > 0 && u->host == NULL)
            return bad ? dlock__seterr(DLOCK_EINVAL,
                                       "bad %%-escape in the host of %s",
                                       u->redacted)
                       : dlock__enomem();
    }
    if (port != NULL) {
        long v = 0;
        const char *e = s + n;

        if (port == e)
            return dlock__seterr(DLOCK_EINVAL, "empty port in %s", u->redacted);
        for (const char *c = port; c < e; c++) {
            if (!isdigit((unsigned char)*c) || v > 65535)
                return dlock__seterr(DLOCK_EINVAL, "bad port in %s",
                                     u->redacted);
            v = v * 10 + (*c - '0');
        }
        if (v < 1 || v > 65535)
            return dlock__seterr(DLOCK_EINVAL,
                                 "port out of range (1..65535) in %s",
                                 u->redacted);
        u->port = (int)v;
    }
    return DLOCK_OK;
}

static int parse(struct dlock_url *u, const char *url)
{
    size_t sl = scheme_len(url), auth, auth_end;
    const char *at = NULL, *rest;
    int bad = 0, rc;

    if (sl == 0)
        return dlock__seterr(DLOCK_EINVAL,
                             "not a store URL (expected scheme://...; the "
                             "text is not shown, it may hold a password)");
    u->scheme = dlock__strndup(url, sl);
    if (u->scheme == NULL)
        return dlock__enomem();
    for (char *c = u->scheme; *c != '\0'; c++)
        *c = (char)tolower((unsigned char)*c);
    if (strncmp(url + sl, "://", 3) != 0)
        return dlock__seterr(DLOCK_EINVAL,
                             "expected \"%s://\" at the start of %s", u->scheme,
                             u->redacted);
    auth = sl + 3;
    auth_end = auth + strcspn(url + auth, "/?#");
    /* Not echoed: a '#' may be part of a password.  Neither is a URL
     * with an '@' after its authority: a '/', '?' or '#' in a user name or
     * password was not encoded, or an '@' in a path or option value was
     * not, and which cannot be told: guessing would send the wrong
     * password, or print or look up (as a host) the right one. */
    if (strchr(url, '#') != NULL)
        return dlock__seterr(DLOCK_EINVAL,
                             "a '#' in a store URL (not shown): write it "
                             "as %%23 if it is part of a password");
    if (strchr(url + auth_end, '@') != NULL)
        return dlock__seterr(DLOCK_EINVAL,
                             "ambiguous store URL (not shown): an '@' after "
                             "the host part; percent-encode '/', '?' and "
                             "'#' in a user name or password (%%2F %%3F "
                             "%%23), and '@' in a path or option value "
                             "(%%40)");
    for (const char *c = url + auth; c < url + auth_end; c++)
        if (*c == '@')
            at = c;
    if (at != NULL) {
        const char *ui = url + auth;
        const char *colon = memchr(ui, ':', (size_t)(at - ui));
        size_t ulen = colon != NULL ? (size_t)(colon - ui) : (size_t)(at - ui);

        u->user = decode(ui, ulen, &bad);
        if (u->user != NULL && colon != NULL)
            u->password = decode(colon + 1, (size_t)(at - colon - 1), &bad);
        if (u->user == NULL || (colon != NULL && u->password == NULL))
            return bad ? dlock__seterr(DLOCK_EINVAL,
                                       "bad %%-escape in the user name or "
                                       "password of %s",
                                       u->redacted)
                       : dlock__enomem();
        rc = parse_hostport(u, at + 1, (size_t)(url + auth_end - at - 1));
    } else {
        rc = parse_hostport(u, url + auth, auth_end - auth);
    }
    if (rc != DLOCK_OK)
        return rc;

    rest = url + auth_end;
    if (*rest == '/') {
        size_t plen = strcspn(rest, "?#");

        u->path = decode(rest, plen, &bad);
        if (u->path == NULL)
            return bad ? dlock__seterr(DLOCK_EINVAL,
                                       "bad %%-escape in the path of %s",
                                       u->redacted)
                       : dlock__enomem();
        rest += plen;
    }
    if (*rest == '?') {
        u->query = dlock__strdup(rest + 1);
        if (u->query == NULL)
            return dlock__enomem();
        return parse_query(u, u->query);
    }
    return DLOCK_OK;
}

int dlock__url_parse(struct dlock_url **out, const char *url)
{
    struct dlock_url *u;
    int rc;

    *out = NULL;
    u = calloc(1, sizeof(*u));
    if (u == NULL)
        return dlock__enomem();
    u->raw = dlock__strdup(url);
    if (u->raw == NULL) {
        free(u);
        return dlock__enomem();
    }
    rc = dlock_url_redact(&u->redacted, url);
    if (rc == DLOCK_OK) {
        for (const char *c = url; *c != '\0'; c++) {
            if ((unsigned char)*c <= ' ' || *c == 0x7f) {
                /* Not echoed: text that is not a URL may hide a
                 * password where redaction cannot find it. */
                rc = dlock__seterr(DLOCK_EINVAL,
                                   "store URL contains a space or a control "
                                   "character (not shown)");
                break;
            }
        }
    }
    if (rc == DLOCK_OK)
        rc = parse(u, url);
    if (rc != DLOCK_OK) {
        dlock__url_free(u);
        return rc;
    }
    *out = u;
    return DLOCK_OK;
}

const char *dlock__url_param(const struct dlock_url *u, const char *key)
{
    /* A key is there once at most: parse_query() refuses repeats. */
    for (size_t i = 0; i < u->nparams; i++)
        if (strcmp(u->params[i].key, key) == 0)
            return u->params[i].value;
    return NULL;
}

int dlock__url_unknown_option(const struct dlock_url *u, size_t i)
{
    const char *prev = i > 0 ? u->params[i - 1].key : NULL;

    /* After a credential, an unknown "option" is most likely the rest of
     * a password holding an unencoded '&' (?password=ab&cd): never
     * quoted. */
    if (prev != NULL && secret_key(prev, strlen(prev)))
        return dlock__seterr(DLOCK_EINVAL,
                             "unknown option after \"%s\" in %s (not "
                             "shown: an '&' inside a value must be "
                             "written %%26)",
                             prev, u->redacted);
    return dlock__seterr(DLOCK_EINVAL, "unknown option \"%s\" in %s",
                         u->params[i].key, u->redacted);
}

int dlock__url_check_params(const struct dlock_url *u, const char *const *known)
{
    for (size_t i = 0; i < u->nparams; i++) {
        size_t k = 0;

        while (known[k] != NULL && strcmp(known[k], u->params[i].key) != 0)
            k++;
        if (known[k] == NULL)
            return dlock__url_unknown_option(u, i);
    }
    return DLOCK_OK;
}

/* The decimal digits at the start of v (?key=v) as *n, at most max;
 * *end just after the digits read, on every return (the callers must not
 * have to know which code dlock__seterr() hands back to trust it).
 * DLOCK_EINVAL if over max. */
static int leading_digits(const struct dlock_url *u, const char *key,
                          const char *v, int64_t max, int64_t *n,
                          const char **end)
{
    const char *c;

    *n = 0;
    for (c = v; isdigit((unsigned char)*c); c++) {
        if (*n > (max - (*c - '0')) / 10) {
            *end = c;
            return dlock__seterr(DLOCK_EINVAL, "%s=%s is too large in %s", key,
                                 v, u->redacted);
        }
        *n = *n * 10 + (*c - '0');
    }
    *end = c;
    return DLOCK_OK;
}

int dlock__url_param_ms(const struct dlock_url *u, const char *key,
                        int64_t unit_ms, int64_t *out)
{
    const char *v = dlock__url_param(u, key), *c;
    int64_t n;

    if (v == NULL)
        return DLOCK_OK;
    if (leading_digits(u, key, v, INT64_MAX / 1000, &n, &c) != DLOCK_OK)
        return DLOCK_EINVAL;
    if (c == v)
        goto bad;
    if (strcmp(c, "ms") == 0)
        unit_ms = 1;
    else if (strcmp(c, "s") == 0)
        unit_ms = 1000;
    else if (*c != '\0')
        goto bad;
    /* A year at most: a deadline now + this cannot overflow. */
    *out = dlock__clamp_ms(n * unit_ms);
    return DLOCK_OK;
bad:
    return dlock__seterr(DLOCK_EINVAL,
                         "%s=%s in %s: expected a number, optionally "
                         "followed by ms or s",
                         key, v, u->redacted);
}

int dlock__url_param_count(const struct dlock_url *u, const char *key,
                           int64_t *out)
{
    const char *v = dlock__url_param(u, key), *c;
    int64_t n;

    if (v == NULL)
        return DLOCK_OK;
    if (leading_digits(u, key, v, INT64_MAX, &n, &c) != DLOCK_OK)
        return DLOCK_EINVAL;
    if (c == v || *c != '\0')
        return dlock__seterr(DLOCK_EINVAL,
                             "%s=%s in %s: expected a whole number, 0 or "
                             "more",
                             key, v, u->redacted);
    *out = n;
    return DLOCK_OK;
}

void dlock_free(char *str)
{
    free(str);
}

/* On failure the caller frees what was filled (*count hosts). */
int dlock__url_hosts(const struct dlock_url *u, int default_port,
                     const char *what, char ***hosts, int **ports, int *count)
{
    const char *p = u->host != NULL ? u->host : "";
    int n = 1;

    *count = 0;
    for (const char *c = p; *c; c++)
        n += *c == ',';
    *hosts = calloc((size_t)n, sizeof(char *));
    *ports = calloc((size_t)n, sizeof(int));
    if (*hosts == NULL || *ports == NULL)
        return dlock__enomem();
    /* n entries, as many as the commas say: an empty one at either end
     * ("h:p,") is refused like one in the middle. */
    while (*count < n) {
        size_t len = strcspn(p, ","), hlen = len;
        /* One host: the URL parser has already taken its port apart
         * (and the brackets off an IPv6 address, whose colons stay).  In
         * a list, an IPv6 address is in brackets: "[::1]:2379". */
        const char *h = p, *colon = NULL;
        char *end;
        long port = n == 1 && u->port != 0 ? u->port : default_port;
        int rc = n > 1 ? split_host(u, p, len, &h, &hlen, &colon) : DLOCK_OK;

        if (rc != DLOCK_OK)
            return rc;
        if (h == p && colon != NULL &&
            memchr(colon + 1, ':', len - hlen - 1) != NULL)
            return dlock__seterr(DLOCK_EINVAL,
                                 "an IPv6 address in the %s host list "
                                 "goes in brackets ([::1]:port): %s",
                                 what, u->redacted);
        if (colon != NULL) {
            port = strtol(colon + 1, &end, 10);
            if (end != p + len || port < 1 || port > 65535 ||
                !isdigit((unsigned char)colon[1]))
                return dlock__seterr(DLOCK_EINVAL, "bad %s port in %s", what,
                                     u->redacted);
        }
        if (hlen == 0)
            return dlock__seterr(DLOCK_EINVAL, "empty %s host in %s", what,
                                 u->redacted);
        /* (A single host was split by the URL parser, and decoded: a
         * %5B there is a bracket too.) */
        if (memchr(h, '[', hlen) != NULL || memchr(h, ']', hlen) != NULL)
            return dlock__seterr(DLOCK_EINVAL, "stray '[' or ']' in %s",
                                 u->redacted);
        (*hosts)[*count] = dlock__strndup(h, hlen);
        if ((*hosts)[*count] == NULL)
            return dlock__enomem();
        (*ports)[(*count)++] = (int)port;
        p += len;
        if (*p == ',')
            p++;
    }
    return DLOCK_OK;
}
