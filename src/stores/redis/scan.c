/*
 * scan.c - SCAN the Redis store's server (every master of a cluster) for
 * the keys matching a pattern, within one ?timeout= (list, the last
 * runs, the suspensions); and the names that have a key of one word
 * (runs.c's summaries, suspend.c's records), found so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locks.h"

/* SCAN one server (with Cluster: the master of slot) for the keys that
 * match pattern, each to take. */
struct scan {
    const char *pattern;
    int (*take)(struct redis_store *rs, const char *key, size_t len, void *arg);
    void *arg;
    int64_t deadline; /* monotonic ms: the whole scan's */
    size_t pages;
};

static int scan_node(struct redis_store *rs, int slot, void *arg)
{
    struct scan *sc = arg;
    char cursor[32] = "0";
    int rc = DLOCK_OK;

    do {
        /* The whole scan is one answer (R10): a server whose cursor never
         * comes back to 0 (the same keys or none, page after page) is cut
         * off at one ?timeout= after the scan began; one that feeds new
         * keys for ever, at DLOCK__LIST_NAMES names (names.h). */
        if (strcmp(cursor, "0") != 0 && dlock__now_ms() > sc->deadline)
            return dlock__seterr(DLOCK_EUNAVAIL,
                                 "Redis's keys matching '%s' were not all "
                                 "scanned within ?timeout= (%lld ms; %zu "
                                 "pages): a server whose SCAN never ends, "
                                 "or raise ?timeout= (%s)",
                                 sc->pattern, (long long)rs->timeout_ms,
                                 sc->pages, rs->url);
        sc->pages++;
        const char *argv[6] = {"SCAN",      cursor,  "MATCH",
                               sc->pattern, "COUNT", "1000"};
        size_t lens[6] = {4, strlen(cursor), 5, strlen(sc->pattern), 5, 4};
        redisReply *r;

        rc = dlock__redis_cmd(rs, slot, 1, &r, 6, argv, lens);
        if (rc != DLOCK_OK)
            break;
        if (r->type == REDIS_REPLY_ERROR) {
            rc = dlock__redis_reply_error(rs, r, "SCAN");
            freeReplyObject(r);
            break;
        }
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            rc = dlock__redis_bad_reply(rs, r);
            break;
        }
        dlock__strlcpy(cursor, r->element[0]->str, sizeof(cursor));
        for (size_t i = 0; i < r->element[1]->elements && rc == DLOCK_OK; i++) {
            redisReply *key = r->element[1]->element[i];

            if (key->type == REDIS_REPLY_STRING)
                rc = sc->take(rs, key->str, key->len, sc->arg);
        }
        freeReplyObject(r);
    } while (rc == DLOCK_OK && strcmp(cursor, "0") != 0);
    return rc;
}

int dlock__redis_scan(struct redis_store *rs, const char *pattern,
                      int (*take)(struct redis_store *rs, const char *key,
                                  size_t len, void *arg),
                      void *arg)
{
    struct scan sc = {pattern, take, arg, 0, 0};
    int rc;

    sc.deadline = dlock__now_ms() + dlock__io_bound(rs->timeout_ms);

    /* A cluster's masters are scanned one after the other. */
    pthread_mutex_lock(&rs->mu);
    rc = rs->cluster ? dlock__redis_cluster_each_master(rs, scan_node, &sc)
                     : scan_node(rs, -1, &sc);
    pthread_mutex_unlock(&rs->mu);
    return rc;
}

/* --- the names with a key of one word -------------------------------- */

#define FENCE_WORD "fence"

/* Such a key is the fence key with its word replaced (runs.c, elect.c):
 * same tag, same slot. */
int dlock__redis_derived_key(struct redis_store *rs, const char *name,
                             size_t len, const char *suffix, char **key,
                             size_t *key_len)
{
    struct dlock__rkeys k;
    int rc = dlock__redis_keys_of(rs, name, len, &k);

    *key = NULL;
    if (rc != DLOCK_OK)
        return rc;
    *key = malloc(k.klen[1] + strlen(suffix) + 1);
    if (*key == NULL) {
        free(k.buf);
        return dlock__enomem();
    }
    *key_len = k.klen[1] - (sizeof(FENCE_WORD) - 1) - 1;
    memcpy(*key, k.k[1], *key_len);
    memcpy(*key + *key_len, suffix, strlen(suffix) + 1);
    *key_len += strlen(suffix);
    free(k.buf);
    return DLOCK_OK;
}

/* SCAN's keys of one word (the run summaries, the suspensions) under a
 * prefix: the names they are that key of.  A key is taken only if it is
 * exactly that key of the name read from it (a key spelt to look like one
 * is passed over). */
struct take_arg {
    const char *want; /* the names' prefix */
    size_t want_len;
    const char *suffix; /* "\xff" and the word */
    struct dlock__names *names;
};

static int is_key_of(struct redis_store *rs, const char *key, size_t len,
                     const char *name, size_t nlen, const struct take_arg *ta)
{
    char *k;
    size_t kl;
    int same;

    if (nlen == 0 || nlen > DLOCK_NAME_MAX || nlen < ta->want_len ||
        memcmp(name, ta->want, ta->want_len) != 0 ||
        memchr(name, '\0', nlen) != NULL ||
        dlock__check_name(name, nlen) != DLOCK_OK)
        return 0;
    if (dlock__redis_derived_key(rs, name, nlen, ta->suffix, &k, &kl) !=
        DLOCK_OK)
        return 0;
    same = kl == len && memcmp(k, key, len) == 0;
    free(k);
    return same;
}

static int take_key(struct redis_store *rs, const char *key, size_t len,
                    void *arg)
{
    const struct take_arg *ta = arg;
    const char *p = rs->prefix, *close;
    size_t pl = rs->prefix_len, bl, sl = strlen(ta->suffix);

    if (len < sl || memcmp(key + len - sl, ta->suffix, sl) != 0)
        return DLOCK_OK;
    bl = len - sl; /* the key less its word */
    /* P NAME (a plain server; a cluster when P NAME has a tag) */
    if (bl >= pl && memcmp(key, p, pl) == 0 &&
        is_key_of(rs, key, len, key + pl, bl - pl, ta))
        return dlock__names_add(ta->names, key + pl, bl - pl);
    if (!rs->cluster || bl < 3 || key[0] != '{' || key[bl - 1] != '\xfe')
        return DLOCK_OK;
    /* "{" P NAME "}" 0xfe */
    if (bl >= pl + 3 && key[bl - 2] == '}' && memcmp(key + 1, p, pl) == 0 &&
        is_key_of(rs, key, len, key + 1 + pl, bl - 3 - pl, ta))
        return dlock__names_add(ta->names, key + 1 + pl, bl - 3 - pl);
    /* "{" tag "}" P NAME 0xfe */
    close = memchr(key, '}', bl);
    if (close != NULL) {
        size_t at = (size_t)(close - key) + 1;

        if (bl >= at + pl + 1 && memcmp(key + at, p, pl) == 0 &&
            is_key_of(rs, key, len, key + at + pl, bl - 1 - at - pl, ta))
            return dlock__names_add(ta->names, key + at + pl, bl - 1 - at - pl);
    }
    return DLOCK_OK;
}

int dlock__redis_derived_names(struct redis_store *rs, const char *prefix,
                               const char *suffix, struct dlock__names *names)
{
    struct take_arg ta = {prefix, strlen(prefix), suffix, names};
    size_t plen = strlen(prefix), gl, pat;
    char *lit, *glob, *pattern;
    int rc;

    /* MATCH: the prefix (glob characters escaped), any name's rest, the
     * key's word; with Cluster a tag may come first. */
    lit = malloc(rs->prefix_len + plen + 1);
    if (lit == NULL)
        return dlock__enomem();
    memcpy(lit, rs->prefix, rs->prefix_len);
    memcpy(lit + rs->prefix_len, prefix, plen + 1);
    glob = dlock__redis_glob_prefix(lit, rs->prefix_len + plen);
    free(lit);
    if (glob == NULL)
        return dlock__enomem();
    gl = strlen(glob);
    pat = 1 + gl + strlen(suffix) + 1;
    pattern = malloc(pat);
    if (pattern == NULL) {
        free(glob);
        return dlock__enomem();
    }
    snprintf(pattern, pat, "%s%s%s", rs->cluster ? "*" : "", glob, suffix);
    free(glob);
    rc = dlock__redis_scan(rs, pattern, take_key, &ta);
    free(pattern);
    return rc;
}
