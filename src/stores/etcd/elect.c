/*
 * elect.c - election on the etcd store (store.h: value_set, value_get,
 * watch), in the layout of Go's clientv3/concurrency Election and of
 * `etcdctl elect NAME VALUE`: a candidate's key is P NAME "/" <lease id
 * in hex>, as a lock's, and its value is the proposal, raw (not dlock's
 * holder record).  The leader is the name's first key by create
 * revision, and the term is that create revision (the lock's fence).
 *
 * value_set is Go's Proclaim: one txn that puts the new value on our key,
 * with our lease, if the key's create revision is still ours.  value_get
 * reads the name's first key: its value and create revision.  The watch
 * is an etcd watch on the name's range, PUTs included: an event wakes
 * the observer, which re-reads (R1); it never reports what changed.
 */
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "etcd.h"
#include "strutil.h"

int dlock__etcd_value_set(struct dlock_store *s, struct dlock_lock *lk,
                          const char *value, size_t len)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lk->priv;
    json_object *cmp, *ok;
    int rc, won = 0, fresh;

    if (el == NULL || el->lease == NULL || el->create_rev == 0)
        return dlock__lost(lk, "it holds no etcd key");
    fresh = el->value_fresh;
    el->value_fresh = 0;
    /* Right after the grant the key holds lk->value already. */
    if (fresh && len == lk->value_len &&
        (len == 0 || memcmp(value, lk->value, len) == 0))
        return DLOCK_OK;
    if (dlock__etcd_is_record(value, len))
        return dlock__seterr(DLOCK_EINVAL,
                             "the leader value of '%s' reads as dlock's "
                             "holder record (JSON with \"dlock\": 1), which "
                             "etcd keeps in the same place: choose another "
                             "value (%s)",
                             lk->name, es->url);
    cmp = json_object_new_array();
    ok = json_object_new_array();
    if (cmp == NULL || ok == NULL) {
        json_object_put(cmp);
        json_object_put(ok);
        return dlock__enomem();
    }
    /* Go's Proclaim: Compare(CreateRevision(key), "=", rev), then the
     * put, on the key's lease (a put without one would take the key off
     * its lease: it would outlive the leader). */
    json_object_array_add(
        cmp, dlock__etcd_cmp_create(el->key, el->key_len, el->create_rev));
    json_object_array_add(
        ok, dlock__etcd_put_op(el->key, el->key_len, value, el->lease->id));
    rc = dlock__etcd_commit(es, dlock__etcd_txn(cmp, ok, NULL), 0, &won);
    if (rc == DLOCK_OK && !won)
        rc = dlock__lost(lk, "its etcd key is gone");
    return rc;
}

/* The name's own keys (NAME/<suffix without '/'>) in kvs: the one of the
 * least create revision, or NULL. */
static json_object *first_key(json_object *kvs, size_t name_off, int64_t *rev)
{
    json_object *best = NULL;
    size_t n = dlock__etcd_alen(kvs);

    *rev = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *kv = dlock__etcd_aget(kvs, i);
        size_t klen = 0;
        char *key = dlock__etcd_unb64(kv, "key", &klen);
        int64_t r = dlock__etcd_int(kv, "create_revision");
        int own = key != NULL && klen > name_off &&
                  memchr(key + name_off, '/', klen - name_off) == NULL &&
                  dlock__utf8_valid((const unsigned char *)key, klen);

        free(key);
        if (own && r > 0 && (best == NULL || r < *rev)) {
            best = kv;
            *rev = r;
        }
    }
    return best;
}

int dlock__etcd_value_get(struct dlock_store *s, const char *name,
                          uint64_t *fence, char **value, size_t *len)
{
    struct etcd_store *es = (struct etcd_store *)s;
    size_t plen = 0, elen = 0;
    char *pfx = dlock__etcd_name_prefix(es, name, &plen), *end = NULL, *v;
    json_object *body = NULL, *reply = NULL, *kvs = NULL, *kv;
    int64_t rev;
    int rc;

    *fence = 0;
    *value = NULL;
    *len = 0;
    if (pfx != NULL)
        end = dlock__etcd_prefix_end(pfx, plen, &elen);
    if (end != NULL)
        body =
            dlock__etcd_range_req(pfx, plen, end, elen, 0, ETCD_RANGE_SORTED);
    free(end);
    rc = body == NULL ? dlock__enomem()
                      : dlock__etcd_post(es, "/v3/kv/range", body,
                                         ETCD_RETRY_SAFE, &reply, NULL);
    json_object_put(body);
    if (rc != DLOCK_OK) {
        free(pfx);
        return rc;
    }
    (void)json_object_object_get_ex(reply, "kvs", &kvs);
    kv = first_key(kvs, plen, &rev);
    free(pfx);
    v = kv != NULL ? dlock__etcd_unb64(kv, "value", len) : NULL;
    /* A peer's value is shown only as dlock would write one: UTF-8, no
     * NUL, at most DLOCK_VALUE_MAX bytes; and a dlock holder record is a
     * lock's, not a proclaimed value.  Empty is none (a candidate without
     * a value, etcdctl lock, Go's Mutex).  Else the leader has no value. */
    if (v != NULL &&
        (*len == 0 || *len > DLOCK_VALUE_MAX || strlen(v) != *len ||
         !dlock__utf8_valid((const unsigned char *)v, *len) ||
         dlock__etcd_is_record(v, *len))) {
        free(v);
        v = NULL;
    }
    json_object_put(reply);
    if (v == NULL) {
        *len = 0;
        return DLOCK_OK;
    }
    *value = v;
    *fence = (uint64_t)rev;
    return DLOCK_OK;
}

/* An observer's watch: the name's range, from the revision after rev. */
struct etcd_watch {
    char *pfx, *end;
    size_t plen, elen;
    int64_t rev;
};

/* The store's revision now: a watch from the next one misses nothing the
 * core's following read does not see. */
static int sync_rev(struct etcd_store *es, struct etcd_watch *w)
{
    json_object *body = dlock__etcd_range_req(w->pfx, w->plen, w->end, w->elen,
                                              1, ETCD_RANGE_KEYS),
                *reply = NULL;
    int rc = body == NULL ? dlock__enomem()
                          : dlock__etcd_post(es, "/v3/kv/range", body,
                                             ETCD_RETRY_SAFE, &reply, NULL);
    int64_t rev;

    json_object_put(body);
    if (rc != DLOCK_OK)
        return rc;
    rev = dlock__etcd_int(json_object_object_get(reply, "header"), "revision");
    json_object_put(reply);
    if (rev <= 0)
        return dlock__seterr(DLOCK_ESTORE,
                             "etcd answered a range without its revision (%s)",
                             es->url);
    if (rev > w->rev)
        w->rev = rev;
    return DLOCK_OK;
}

int dlock__etcd_watch_name(struct dlock_store *s, const char *name,
                           void **state, int64_t slice_ms)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_watch *w = *state;
    int64_t deadline = dlock__now_ms() + slice_ms, erev = 0;
    int rc, woken = 0;

    if (w == NULL) {
        if ((w = calloc(1, sizeof(*w))) == NULL)
            return dlock__enomem();
        *state = w;
        w->pfx = dlock__etcd_name_prefix(es, name, &w->plen);
        if (w->pfx == NULL || (w->end = dlock__etcd_prefix_end(
                                   w->pfx, w->plen, &w->elen)) == NULL)
            return dlock__enomem();
        /* Subscribing is knowing where to watch from. */
        rc = sync_rev(es, w);
        if (rc != DLOCK_OK || slice_ms <= 0)
            return rc;
    }
    if (slice_ms <= 0)
        return DLOCK_OK;
    rc = dlock__etcd_watch_ex(es, w->pfx, w->plen, w->end, w->elen,
                              dlock__etcd_after(w->rev), NULL, 1, deadline,
                              &woken, &erev);
    if (rc == DLOCK_EUNAVAIL) {
        /* The watch's member went away: the core re-reads (through any
         * member), and the next watch goes elsewhere; not in a tight
         * loop. */
        if (dlock__cancel_sleep_ms(50))
            return DLOCK_OK;
        dlock__clearerr();
        return sync_rev(es, w);
    }
    if (rc != DLOCK_OK)
        return rc;
    if (!woken)
        return DLOCK_OK; /* the slice ran out, or a cancel */
    if (erev > w->rev) {
        w->rev = erev; /* the events up to it are read */
        return DLOCK_OK;
    }
    /* Woken by no event (a cancelled or compacted watch, the stream's
     * end): watch on from the revision now. */
    return sync_rev(es, w);
}

void dlock__etcd_watch_end(struct dlock_store *s, void *state)
{
    struct etcd_watch *w = state;

    (void)s;
    if (w == NULL)
        return;
    free(w->pfx);
    free(w->end);
    free(w);
}
