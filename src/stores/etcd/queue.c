/*
 * queue.c - a name's keys in create-revision order, and the rules that
 * read holders and waiters from them.
 *
 * The keys of NAME are P NAME "/" <suffix>, suffix without '/' (a key
 * P NAME "/x/..." belongs to the longer name NAME/x).  A key's value is
 * dlock's holder record (JSON, with "dlock": 1) or anything else: a key
 * without a record is a foreign holder (Go's concurrency.Mutex, `etcdctl
 * lock`), exclusive.  The admission rules, for a key at position p:
 *
 *   lock (exclusive)   p == 0
 *   shared             no exclusive key or semaphore key before it
 *   semaphore of N     only keys of semaphores before it, and p < N
 *
 * so that the queue is FIFO whatever waits in it.  The key a waiter
 * watches is the last one before it that stands in its way; a semaphore
 * of N's waiter watches the N keys just before its own (any of them may
 * go first; a key further ahead going cannot admit it while those N are
 * there), so that one release wakes at most N waiters, not all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errors.h"
#include "etcd.h"
#include "iobound.h"
#include "process.h"
#include "strutil.h"

char *dlock__etcd_name_prefix(const struct etcd_store *es, const char *name,
                              size_t *len)
{
    size_t n = strlen(name);
    char *k = malloc(es->prefix_len + n + 2);

    if (k == NULL)
        return NULL;
    memcpy(k, es->prefix, es->prefix_len);
    memcpy(k + es->prefix_len, name, n);
    k[es->prefix_len + n] = '/';
    k[es->prefix_len + n + 1] = '\0';
    *len = es->prefix_len + n + 1;
    return k;
}

char *dlock__etcd_record(const struct dlock_lock *lk)
{
    json_object *o = json_object_new_object();
    char *s;

    if (o == NULL)
        return NULL;
    json_object_object_add(o, "dlock", json_object_new_int(1));
    json_object_object_add(o, "token", json_object_new_string(lk->token));
    json_object_object_add(o, "host",
                           json_object_new_string(dlock__hostname()));
    json_object_object_add(o, "pid", json_object_new_int64(dlock__pid()));
    json_object_object_add(o, "since_ms",
                           json_object_new_int64(dlock__wall_ms()));
    json_object_object_add(o, "ttl_ms", json_object_new_int64(lk->ttl_ms));
    json_object_object_add(o, "limit", json_object_new_int64(lk->limit));
    json_object_object_add(o, "shared", json_object_new_int(lk->shared));
    s = dlock__strdup(
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return s;
}

char *dlock__etcd_key_value(const struct dlock_lock *lk)
{
    if (!lk->is_candidate)
        return dlock__etcd_record(lk);
    return dlock__strndup(lk->value != NULL ? lk->value : "",
                          lk->value != NULL ? lk->value_len : 0);
}

/* Read a dlock record from value v (n bytes) into e; foreign otherwise. */
static void parse_record(struct etcd_entry *e, const char *v, size_t n)
{
    json_object *o = NULL, *f;
    int64_t lim;

    e->foreign = 1;
    e->limit = 1;
    if (n == 0)
        return;
    o = dlock__etcd_parse(v, n, NULL, NULL);
    if (o == NULL || !json_object_is_type(o, json_type_object) ||
        dlock__etcd_int(o, "dlock") != 1) {
        json_object_put(o);
        return;
    }
    e->foreign = 0;
    e->shared = json_object_get_boolean(json_object_object_get(o, "shared"));
    lim = dlock__etcd_int(o, "limit");
    e->limit = lim >= 1 && lim <= 1000000 ? (unsigned)lim : 1;
    if (e->shared)
        e->limit = 1;
    if (json_object_object_get_ex(o, "token", &f) &&
        json_object_is_type(f, json_type_string))
        dlock__strlcpy(e->token, json_object_get_string(f), sizeof(e->token));
    if (json_object_object_get_ex(o, "host", &f) &&
        json_object_is_type(f, json_type_string))
        dlock__strlcpy(e->host, json_object_get_string(f), sizeof(e->host));
    e->pid = dlock__etcd_int(o, "pid");
    e->since_ms = dlock__etcd_int(o, "since_ms");
    e->ttl_ms = dlock__etcd_int(o, "ttl_ms");
    json_object_put(o);
}

int dlock__etcd_is_record(const char *v, size_t n)
{
    struct etcd_entry e;

    memset(&e, 0, sizeof(e));
    parse_record(&e, v, n);
    return !e.foreign;
}

static int by_rev(const void *a, const void *b)
{
    const struct etcd_entry *x = a, *y = b;

    return x->create_rev < y->create_rev ? -1 : x->create_rev > y->create_rev;
}

int dlock__etcd_queue_fill(struct etcd_queue *q, json_object *kvs,
                           size_t name_off)
{
    size_t n = kvs != NULL && json_object_is_type(kvs, json_type_array)
                   ? dlock__etcd_alen(kvs)
                   : 0;

    q->e = n > 0 ? calloc(n, sizeof(*q->e)) : NULL;
    q->n = 0;
    if (n > 0 && q->e == NULL)
        return dlock__enomem();
    for (size_t i = 0; i < n; i++) {
        json_object *kv = dlock__etcd_aget(kvs, i);
        struct etcd_entry *e = &q->e[q->n];
        size_t klen = 0, vlen = 0;
        char *key = dlock__etcd_unb64(kv, "key", &klen), *val;

        if (key == NULL)
            continue; /* not base64: no key of ours */
        /* NAME/<suffix>: a nonempty suffix without '/'. */
        /* (UTF-8 too: P NAME \xff... are the name's run records.) */
        if (klen <= name_off ||
            memchr(key + name_off, '/', klen - name_off) != NULL ||
            !dlock__utf8_valid((const unsigned char *)key, klen)) {
            free(key);
            continue;
        }
        e->key = key;
        e->key_len = klen;
        e->create_rev = dlock__etcd_int(kv, "create_revision");
        e->lease = dlock__etcd_int(kv, "lease");
        val = dlock__etcd_unb64(kv, "value", &vlen);
        parse_record(e, val != NULL ? val : "", val != NULL ? vlen : 0);
        free(val);
        if (e->create_rev <= 0) {
            free(key);
            memset(e, 0, sizeof(*e));
            continue;
        }
        q->n++;
    }
    if (q->n > 1)
        qsort(q->e, q->n, sizeof(*q->e), by_rev);
    return DLOCK_OK;
}

void dlock__etcd_queue_free(struct etcd_queue *q)
{
    for (size_t i = 0; i < q->n; i++)
        free(q->e[i].key);
    free(q->e);
    q->e = NULL;
    q->n = 0;
}

enum kind { EXCL, SHARED, SEM };

static enum kind kind_of(const struct etcd_entry *e)
{
    if (e->foreign)
        return EXCL;
    if (e->shared)
        return SHARED;
    return e->limit > 1 ? SEM : EXCL;
}

size_t dlock__etcd_holders(const struct etcd_queue *q, int *shared)
{
    size_t n = 0;

    *shared = 0;
    if (q->n == 0)
        return 0;
    switch (kind_of(&q->e[0])) {
    case EXCL:
        return 1;
    case SHARED:
        *shared = 1;
        while (n < q->n && kind_of(&q->e[n]) == SHARED)
            n++;
        return n;
    case SEM:
        while (n < q->n && n < q->e[0].limit && kind_of(&q->e[n]) == SEM &&
               q->e[n].limit == q->e[0].limit)
            n++;
        return n;
    }
    return 0;
}

size_t dlock__etcd_take_own(struct etcd_queue *q, const char *token,
                            int64_t rev, struct etcd_entry **stale)
{
    size_t n = 0, k = 0;

    *stale = NULL;
    for (size_t i = 0; i < q->n; i++)
        n += !q->e[i].foreign && q->e[i].create_rev != rev &&
             strcmp(q->e[i].token, token) == 0;
    if (n == 0 || (*stale = calloc(n, sizeof(**stale))) == NULL)
        return 0;
    for (size_t i = 0, j = 0; i < q->n; i++) {
        if (!q->e[i].foreign && q->e[i].create_rev != rev &&
            strcmp(q->e[i].token, token) == 0)
            (*stale)[k++] = q->e[i];
        else
            q->e[j++] = q->e[i];
    }
    q->n -= k;
    return k;
}

int dlock__etcd_admit(const struct etcd_queue *q, const struct dlock_lock *lk,
                      int64_t rev, size_t *from, size_t *to, const char *url)
{
    enum kind mine = lk->shared ? SHARED : lk->limit > 1 ? SEM : EXCL;
    size_t p = 0, nh;
    int sh;

    *from = *to = 0;
    while (p < q->n && q->e[p].create_rev != rev)
        p++;
    if (p == q->n)
        return DLOCK_LOST; /* our key is not there */
    /* A holder of dlock's that asked another limit.  Not for a
     * candidate: it leads only first (EXCL below), behind whatever is
     * there, and what reads as a semaphore's record ahead of it may be a
     * peer's proposal (`etcdctl elect NAME '{"dlock":1,"limit":3}'`, any
     * bytes): it waits, as etcdctl does, never fails. */
    nh = lk->is_candidate ? 0 : dlock__etcd_holders(q, &sh);
    for (size_t i = 0; i < nh && i < p; i++)
        if (!q->e[i].foreign && !q->e[i].shared &&
            q->e[i].limit != (lk->shared ? 1 : lk->limit))
            return dlock__seterr(DLOCK_EINVAL,
                                 "lock '%s' is held with limit %u; this "
                                 "acquire asked limit %u (every holder of a "
                                 "name must ask the same limit; %s)",
                                 lk->name, q->e[i].limit,
                                 lk->shared ? 1 : lk->limit, url);
    switch (mine) {
    case EXCL:
        if (p == 0)
            return DLOCK_OK;
        *from = p - 1;
        *to = p;
        return DLOCK_BUSY;
    case SHARED:
        for (size_t i = p; i-- > 0;)
            if (kind_of(&q->e[i]) != SHARED) {
                *from = i;
                *to = i + 1;
                return DLOCK_BUSY;
            }
        return DLOCK_OK;
    case SEM:
        for (size_t i = p; i-- > 0;)
            if (kind_of(&q->e[i]) != SEM) {
                *from = i;
                *to = i + 1;
                return DLOCK_BUSY;
            }
        if (p < lk->limit)
            return DLOCK_OK;
        /* The window: while these N are there, N keys stand before ours
         * (struct etcd_keys). */
        *from = p - lk->limit;
        *to = p;
        return DLOCK_BUSY;
    }
    return DLOCK_BUSY;
}

int dlock__etcd_read_queue(struct etcd_store *es, const char *name,
                           struct etcd_queue *q, const char *k, size_t klen,
                           int64_t *k_rev, int64_t *k_lease)
{
    size_t plen = 0;
    char *pfx = dlock__etcd_name_prefix(es, name, &plen);
    json_object *body = NULL, *reply = NULL, *kvs;
    int rc;

    memset(q, 0, sizeof(*q));
    if (pfx != NULL)
        body = dlock__etcd_body_queue(pfx, plen, k, klen);
    rc = body == NULL ? dlock__enomem()
                      : dlock__etcd_post(es, "/v3/kv/txn", body,
                                         ETCD_RETRY_SAFE, &reply, NULL);
    json_object_put(body);
    if (rc == DLOCK_OK) {
        kvs = dlock__etcd_txn_kvs(reply, 0);
        if (kvs == NULL)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "etcd answered a range without a range (%s)",
                               es->url);
        else
            rc = dlock__etcd_queue_fill(q, kvs, plen);
        json_object_put(kvs);
        q->rev = dlock__etcd_int(json_object_object_get(reply, "header"),
                                 "revision");
    }
    if (rc == DLOCK_OK && k != NULL) {
        kvs = dlock__etcd_txn_kvs(reply, 1);
        *k_rev = 0;
        *k_lease = 0;
        if (kvs == NULL) {
            rc = dlock__seterr(DLOCK_ESTORE,
                               "etcd answered a range without a range (%s)",
                               es->url);
        } else if (dlock__etcd_alen(kvs) == 1) {
            json_object *kv = dlock__etcd_aget(kvs, 0);

            *k_rev = dlock__etcd_int(kv, "create_revision");
            *k_lease = dlock__etcd_int(kv, "lease");
        }
        json_object_put(kvs);
    }
    json_object_put(reply);
    free(pfx);
    if (rc != DLOCK_OK)
        dlock__etcd_queue_free(q);
    return rc;
}

#define SCAN_PAGE 1000

/* Whether key a (an bytes) sorts before key b (bn bytes), as etcd
 * orders keys: bytewise, a prefix first. */
static int key_before(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);

    return c < 0 || (c == 0 && an < bn);
}

int dlock__etcd_scan_keys(struct etcd_store *es, const char *prefix,
                          int (*cb)(const char *key, size_t klen, void *arg),
                          void *arg)
{
    size_t n = strlen(prefix), flen = es->prefix_len + n, elen = 1,
           klen = flen ? flen : 1, seen = 0;
    char *key = malloc(klen + 1), *end = NULL;
    /* The whole scan is one answer (R10): due by one ?timeout=, and at
     * most ETCD_SCAN_KEYS keys, however many pages a gateway says are
     * left ("more": true for ever once listed for ever). */
    int64_t deadline = dlock__now_ms() + dlock__io_bound(es->timeout_ms);
    int rc = DLOCK_OK, more = 1;

    if (key == NULL)
        return dlock__enomem();
    /* From P prefix to the end of its range; the whole keyspace is
     * ["\0", "\0"). */
    memcpy(key, es->prefix, es->prefix_len);
    memcpy(key + es->prefix_len, prefix, n + 1);
    if (flen > 0 && (end = dlock__etcd_prefix_end(key, flen, &elen)) == NULL) {
        free(key);
        return dlock__enomem();
    }
    while (more && rc == DLOCK_OK) {
        json_object *req = dlock__etcd_range_req(key, klen, end ? end : "",
                                                 end ? elen : 1, SCAN_PAGE,
                                                 ETCD_RANGE_KEYS),
                    *reply = NULL, *kvs;
        size_t n = 0, last_len = 0;
        char *last = NULL;

        rc = req == NULL ? dlock__enomem()
                         : dlock__etcd_post_until(es, "/v3/kv/range", req,
                                                  ETCD_RETRY_SAFE, deadline,
                                                  &reply, NULL);
        json_object_put(req);
        if (rc == DLOCK_EUNAVAIL && seen > 0 &&
            dlock__remaining_ms(deadline) <= 0)
            /* Pages came, and the whole took too long: say that. */
            rc = dlock__seterr(DLOCK_EUNAVAIL,
                               "etcd's keys under '%s%s' were not all read "
                               "within ?timeout= (%lld ms; %zu keys read): "
                               "a gateway that never ends its range, or "
                               "raise ?timeout= (%s)",
                               es->prefix, prefix, (long long)es->timeout_ms,
                               seen, es->url);
        if (rc != DLOCK_OK)
            break;
        more = json_object_get_boolean(json_object_object_get(reply, "more"));
        if (json_object_object_get_ex(reply, "kvs", &kvs) &&
            json_object_is_type(kvs, json_type_array))
            n = dlock__etcd_alen(kvs);
        if (n > SCAN_PAGE)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "etcd answered a range of at most %d keys "
                               "with %zu keys (%s)",
                               SCAN_PAGE, n, es->url);
        else if (seen + n > ETCD_SCAN_KEYS)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "etcd has more than %d keys under '%s%s': "
                               "not dlock's alone? give dlock a ?prefix= of "
                               "its own (%s)",
                               ETCD_SCAN_KEYS, es->prefix, prefix, es->url);
        seen += n;
        for (size_t i = 0; i < n && rc == DLOCK_OK; i++) {
            size_t len = 0;
            char *k = dlock__etcd_unb64(dlock__etcd_aget(kvs, i), "key", &len);

            if (k == NULL)
                continue;
            /* In the range asked, each after the one before: a page that
             * does not move on is not believed (the next page starts after
             * its last key). */
            if (key_before(k, len, key, klen) ||
                (end != NULL && !key_before(k, len, end, elen)) ||
                (last != NULL && !key_before(last, last_len, k, len))) {
                free(k);
                rc = dlock__seterr(DLOCK_ESTORE,
                                   "etcd answered a range with a key out of "
                                   "order or outside the range asked (%s)",
                                   es->url);
                break;
            }
            rc = cb(k, len, arg);
            free(last);
            last = k;
            last_len = len;
        }
        json_object_put(reply);
        if (more && last == NULL && rc == DLOCK_OK)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "etcd said more keys follow a range in which "
                               "it sent no key (%s)",
                               es->url);
        if (more && last != NULL && rc == DLOCK_OK) {
            /* The next page starts just after the last key: key "\0". */
            char *next = realloc(key, last_len + 1);

            if (next == NULL) {
                rc = dlock__enomem();
            } else {
                key = next;
                memcpy(key, last, last_len);
                key[last_len] = '\0';
                klen = last_len + 1;
            }
        } else {
            more = 0;
        }
        free(last);
    }
    free(key);
    free(end);
    return rc;
}

int dlock__etcd_get(struct etcd_store *es, const char *key, size_t klen,
                    json_object **reply, json_object **kv)
{
    json_object *body = dlock__etcd_range_req(key, klen, NULL, 0, 0, 0),
                *kvs = NULL;
    int rc;

    *reply = *kv = NULL;
    if (body == NULL)
        return dlock__enomem();
    rc = dlock__etcd_post(es, "/v3/kv/range", body, ETCD_RETRY_SAFE, reply,
                          NULL);
    json_object_put(body);
    if (rc == DLOCK_OK && json_object_object_get_ex(*reply, "kvs", &kvs) &&
        dlock__etcd_alen(kvs) == 1)
        *kv = dlock__etcd_aget(kvs, 0);
    return rc;
}
