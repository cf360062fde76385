/*
 * scan.c - SCAN the Redis store's server (every master of a cluster) for
 * the keys matching a pattern, within one ?timeout= (list, the last
 * runs).
 */
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
