/*
 * url.h - store URLs (url.c): parsing, query parameters, and keeping
 * their secrets out of every message.
 *
 * A parsed store URL: scheme://[user[:password]@]host[:port][/path][?k=v&..]
 * Every component is percent-decoded; absent ones are NULL (port: 0).
 */
#ifndef DLOCK_CORE_URL_H
#define DLOCK_CORE_URL_H

#include <stddef.h>
#include <stdint.h>

struct dlock_url_param {
    char *key;
    char *value;
};

struct dlock_url {
    char *scheme; /* lower case */
    char *user;
    char *password;
    char *host; /* "[v6]" brackets removed */
    int port;
    char *path;     /* from the first '/' after the authority, decoded */
    char *query;    /* raw text after '?', not decoded (libpq wants it) */
    char *redacted; /* the whole URL with the password as "***" */
    char *raw;      /* the whole URL as given: may hold a password */
    size_t nparams;
    struct dlock_url_param *params;
};

int dlock__url_parse(struct dlock_url **out, const char *url);
void dlock__url_free(struct dlock_url *url);
/* The value of ?key=, or NULL if absent ("" if present without value). */
const char *dlock__url_param(const struct dlock_url *url, const char *key);
/* DLOCK_EINVAL for the unknown option u->params[i]: named, unless it
 * follows a credential (then it may be a password's tail). */
int dlock__url_unknown_option(const struct dlock_url *u, size_t i);
/* DLOCK_EINVAL (with a message) if the URL has a parameter not in the
 * NULL-terminated list `known`. */
int dlock__url_check_params(const struct dlock_url *url,
                            const char *const *known);
/* Parse a non-negative integer parameter with an optional unit suffix
 * "ms" or "s" (no suffix: `unit_ms` per unit).  Absent: *out untouched. */
int dlock__url_param_ms(const struct dlock_url *url, const char *key,
                        int64_t unit_ms, int64_t *out);
/* The hosts of an authority that lists several (h1[:p1],h2[:p2]...: a
 * Sentinel's sentinels, a cluster's seeds, etcd's endpoints): *n entries,
 * hosts malloc'd into *hosts (free each and the array), ports into *ports
 * (default_port where none is given); an IPv6 address in a list is in
 * brackets ([::1]:2379), and comes out without them.  An empty entry, a
 * bad port or an IPv6 address without brackets in a list is
 * DLOCK_EINVAL, with `what` ("sentinel", "etcd") in the message; on
 * a failure the caller still frees the *n hosts filled. */
int dlock__url_hosts(const struct dlock_url *u, int default_port,
                     const char *what, char ***hosts, int **ports, int *n);
/* Parse a whole number parameter, 0 or more (a count: ?max_keys=).
 * Absent: *out untouched. */
int dlock__url_param_count(const struct dlock_url *url, const char *key,
                           int64_t *out);

/* What in the URL text may be a secret: the password (up to the
 * authority's last '@', and up to the URL's last '@'), and the values of
 * credential parameters (?password=...), each as written and decoded.
 * A NULL-terminated malloc'd list for dlock__scrub(); NULL if out of
 * memory.  dlock__secrets_free() wipes and frees it. */
char **dlock__url_secrets(const char *url);
void dlock__secrets_free(char **secrets);
/* Copy src (a driver's or server's text) to dst[cap] with every secret of
 * the NULL-terminated list replaced by "***"; a secret under 4 bytes that
 * occurs drops the whole text.  No text from libpq, the Redis transport
 * or libmariadb reaches a message without passing here. */
void dlock__scrub(char *dst, size_t cap, const char *src,
                  const char *const *secrets);
/* dlock__scrub() on the thread's message. */
void dlock__scrub_errmsg(const char *const *secrets);

#endif /* DLOCK_CORE_URL_H */
