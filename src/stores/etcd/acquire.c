/*
 * acquire.c - the etcd store's acquire: the try (a put if absent and the
 * queue read, one txn), the wait's slices (a watch on the key before
 * ours, or on a semaphore's window: struct etcd_keys), and forget (a wait
 * given up deletes its key).
 *
 * A try leaves its key in the queue when it answers BUSY: the wait that
 * follows keeps that place (FIFO by create revision), and forget()
 * deletes it if the acquire ends without the lock.  Every wake-up, from
 * the watch or the slice's end, re-reads the queue and our own key in
 * one linearizable txn: our key gone (its lease revoked or expired while
 * we waited, a release --force) means no place in the queue, never a
 * grant; we queue again at the end (etcd issue 11456 is the bug of
 * believing the watch).  A grant's lease counts from the grant (not
 * from the slice's start): before answering OK, the lease is refreshed
 * if its last refresh does not cover the lock's lease end, and that end
 * is never later than the refresh's send time + its TTL (grant()).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "etcd.h"
#include "strutil.h"

/* Leases of one handle a lock of one name may try before giving up:
 * each other lock of the same name and TTL on the handle takes one. */
#define MAX_SAME_NAME 16

void dlock__etcd_lock_free(struct etcd_store *es, struct etcd_lock *el)
{
    if (el == NULL)
        return;
    if (el->lease != NULL)
        dlock__etcd_lease_put(es, el->lease);
    free(el->key);
    dlock__etcd_keys_clear(&el->wait);
    free(el);
}

/* Say who is in the way (the holder: the queue's first key). */
static void busy_message(const struct etcd_store *es,
                         const struct dlock_lock *lk,
                         const struct etcd_queue *q)
{
    const struct etcd_entry *h = q->n > 0 ? &q->e[0] : NULL;

    if (h == NULL)
        dlock__seterr(DLOCK_BUSY, "lock '%s' is busy (%s)", lk->name, es->url);
    else if (h->foreign)
        dlock__seterr(DLOCK_BUSY,
                      "lock '%s' is held by a client that is not dlock "
                      "(etcd lease %llx; %s)",
                      lk->name, (unsigned long long)h->lease, es->url);
    else
        dlock__seterr(DLOCK_BUSY, "lock '%s' is held by %s pid %lld (%s)",
                      lk->name, h->host, (long long)h->pid, es->url);
}

/* Delete our own stale keys (best effort: they go with their lease
 * otherwise), each only if it is still that key. */
static void delete_stale(struct etcd_store *es, struct etcd_entry *stale,
                         size_t n)
{
    for (size_t i = 0; i < n; i++) {
        (void)dlock__etcd_commit(
            es,
            dlock__etcd_body_delete_own(stale[i].key, stale[i].key_len,
                                        stale[i].create_rev),
            ETCD_RETRY_SAFE, NULL);
        free(stale[i].key);
    }
    free(stale);
    dlock__clearerr();
}

/* Add the keys of e[0 .. n) to ks. */
static int keys_set(struct etcd_keys *ks, const struct etcd_entry *e, size_t n)
{
    char **k = realloc(ks->k, (ks->n + n + 1) * sizeof(*k));
    size_t *len;

    if (k == NULL)
        return dlock__enomem();
    ks->k = k;
    len = realloc(ks->len, (ks->n + n + 1) * sizeof(*len));
    if (len == NULL)
        return dlock__enomem();
    ks->len = len;
    for (size_t i = 0; i < n; i++) {
        if ((ks->k[ks->n] = malloc(e[i].key_len + 1)) == NULL)
            return dlock__enomem();
        memcpy(ks->k[ks->n], e[i].key, e[i].key_len);
        ks->k[ks->n][e[i].key_len] = '\0';
        ks->len[ks->n++] = e[i].key_len;
    }
    return DLOCK_OK;
}

/* Decide from q where our key stands; remember what to watch. */
static int decide(struct etcd_store *es, struct dlock_lock *lk,
                  struct etcd_lock *el, struct etcd_queue *q)
{
    struct etcd_entry *stale;
    size_t nstale = dlock__etcd_take_own(q, lk->token, el->create_rev, &stale);
    size_t from, to;
    int rc;

    if (nstale > 0)
        delete_stale(es, stale, nstale);
    rc = dlock__etcd_admit(q, lk, el->create_rev, &from, &to, es->url);

    dlock__etcd_keys_clear(&el->wait);
    el->rev = q->rev;
    el->wait_holder = 0;
    if (rc == DLOCK_BUSY) {
        int sh;

        el->wait_holder = from < dlock__etcd_holders(q, &sh);
        /* A window (a semaphore's: a range watch) wakes for our own key's
         * DELETE too (its lease revoked, a release --force): we queue
         * again at once.  Our key is the one after the window. */
        size_t n = to - from,
               own = to < q->n && n > 1 && q->e[to].create_rev == el->create_rev
                         ? 1
                         : 0;

        rc = keys_set(&el->wait, q->e + from, n);
        if (rc == DLOCK_OK && own)
            rc = keys_set(&el->wait, q->e + to, 1);
        if (rc != DLOCK_OK)
            return rc;
        rc = DLOCK_BUSY;
        busy_message(es, lk, q);
    } else if (rc == DLOCK_LOST) {
        el->create_rev = 0; /* not in the queue: queue again */
        rc = DLOCK_BUSY;
    }
    return rc;
}

/* Put our key if absent and read the queue: one txn.  On DLOCK_OK,
 * el->key/create_rev are set and q is filled; 1: the key exists and is
 * another lock's of this handle (same name, same lease). */
static int put_key(struct etcd_store *es, struct dlock_lock *lk,
                   struct etcd_lock *el, struct etcd_queue *q)
{
    size_t plen = 0, klen;
    char *pfx, *key = NULL, *rec;
    json_object *body = NULL, *reply = NULL, *kvs;
    int rc, grpc = 0;

    memset(q, 0, sizeof(*q));
    /* A candidate's value is its key's value, raw (etcdctl elect's
     * layout): one that reads as dlock's holder record would be taken
     * for a lock of another kind (a semaphore's, a shared one's). */
    if (lk->is_candidate && lk->value != NULL &&
        dlock__etcd_is_record(lk->value, lk->value_len))
        return dlock__seterr(DLOCK_EINVAL,
                             "the leader value of '%s' reads as dlock's "
                             "holder record (JSON with \"dlock\": 1), "
                             "which etcd keeps in the same place: choose "
                             "another value (%s)",
                             lk->name, es->url);
    pfx = dlock__etcd_name_prefix(es, lk->name, &plen);
    rec = dlock__etcd_key_value(lk);
    if (pfx != NULL)
        key = malloc(plen + 17);
    if (key == NULL || rec == NULL) {
        rc = dlock__enomem();
        goto out;
    }
    /* P NAME "/" <lease id, lower-case hex>: etcd's own layout. */
    memcpy(key, pfx, plen);
    klen = plen + (size_t)snprintf(key + plen, 17, "%" PRIx64,
                                   (uint64_t)el->lease->id);
    body = dlock__etcd_body_acquire(pfx, plen, key, klen, rec, el->lease->id);
    rc = body == NULL
             ? dlock__enomem()
             : dlock__etcd_post(es, "/v3/kv/txn", body, 0, &reply, &grpc);
    json_object_put(body);
    if (rc != DLOCK_OK) {
        if (grpc == 5) { /* etcdserver: requested lease not found */
            pthread_mutex_lock(&es->mu);
            el->lease->dead = 1;
            pthread_mutex_unlock(&es->mu);
        } else { /* the put may have landed */
            dlock__etcd_lease_retire(es, el->lease);
        }
        if (grpc == 5)
            rc = DLOCK_LOST;
        goto out;
    }
    kvs = dlock__etcd_txn_kvs(reply, 1);
    rc = kvs == NULL ? dlock__seterr(DLOCK_ESTORE,
                                     "etcd answered a txn without its ranges "
                                     "(%s)",
                                     es->url)
                     : dlock__etcd_queue_fill(q, kvs, plen);
    json_object_put(kvs);
    q->rev =
        dlock__etcd_int(json_object_object_get(reply, "header"), "revision");
    if (rc == DLOCK_OK &&
        !json_object_get_boolean(json_object_object_get(reply, "succeeded"))) {
        /* The key exists: ours from an earlier attempt of this acquire
         * whose reply was lost (our token), else another lock's. */
        int mine = 0;

        /* A candidate's value has no token: its lease is its own (no
         * other lock's key is named after it), so the key is ours. */
        for (size_t i = 0; i < q->n; i++)
            if (q->e[i].key_len == klen && memcmp(q->e[i].key, key, klen) == 0)
                mine = lk->is_candidate
                           ? el->lease->own && q->e[i].lease == el->lease->id
                           : strcmp(q->e[i].token, lk->token) == 0;
        if (!mine)
            rc = 1;
    }
    if (rc == DLOCK_OK) {
        for (size_t i = 0; i < q->n; i++)
            if (q->e[i].key_len == klen && memcmp(q->e[i].key, key, klen) == 0)
                el->create_rev = q->e[i].create_rev;
        if (el->create_rev == 0)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "etcd did not list the key it just put (%s)",
                               es->url);
    }
    if (rc == DLOCK_OK) {
        el->key = key;
        el->key_len = klen;
        key = NULL;
    }
out:
    if (rc != DLOCK_OK)
        dlock__etcd_queue_free(q);
    json_object_put(reply);
    free(pfx);
    free(key);
    free(rec);
    return rc;
}

static void drop_key(struct etcd_store *es, struct etcd_lock *el);

/* Take a place in the queue (a lease, our key): then decide. */
static int enqueue(struct etcd_store *es, struct dlock_lock *lk,
                   struct etcd_lock *el)
{
    struct etcd_lease *avoid[MAX_SAME_NAME];
    size_t navoid = 0;
    struct etcd_queue q;
    int rc, dead = 0;

    drop_key(es, el); /* what an earlier place left, if anything */
    for (;;) {
        /* A candidate's lease is its own, as etcdctl elect's session
         * is: its key is told from others' by its name alone. */
        rc = dlock__etcd_lease_get(es, lk->ttl_ms,
                                   !lk->auto_renew || lk->is_candidate, avoid,
                                   navoid, &el->lease);
        if (rc != DLOCK_OK)
            break;
        rc = put_key(es, lk, el, &q);
        if (rc == DLOCK_OK)
            break;
        /* Another lock of ours on this lease (1), or the lease was gone. */
        if (rc == 1 && navoid < MAX_SAME_NAME) {
            avoid[navoid++] = el->lease; /* still referenced: kept alive */
            el->lease = NULL;
            continue;
        }
        dlock__etcd_lease_put(es, el->lease);
        el->lease = NULL;
        if (rc == DLOCK_LOST && !dead++)
            continue;
        if (rc == 1)
            rc = dlock__seterr(DLOCK_ESTORE,
                               "more than %d locks of '%s' on one handle "
                               "(%s)",
                               MAX_SAME_NAME, lk->name, es->url);
        break;
    }
    for (size_t i = 0; i < navoid; i++)
        dlock__etcd_lease_put(es, avoid[i]);
    if (rc != DLOCK_OK)
        return rc;
    rc = decide(es, lk, el, &q);
    dlock__etcd_queue_free(&q);
    if (rc == DLOCK_OK)
        lk->fence = (uint64_t)el->create_rev;
    return rc;
}

static struct etcd_lock *lock_state(struct dlock_lock *lk)
{
    if (lk->priv == NULL)
        lk->priv = calloc(1, sizeof(struct etcd_lock));
    return lk->priv;
}

/* Our key went (or never was): let go of its lease and key name. */
static void drop_key(struct etcd_store *es, struct etcd_lock *el)
{
    if (el->lease != NULL)
        dlock__etcd_lease_put(es, el->lease);
    el->lease = NULL;
    free(el->key);
    el->key = NULL;
    el->create_rev = 0;
}

/* Re-read the queue and our key; decide. */
static int recheck(struct etcd_store *es, struct dlock_lock *lk,
                   struct etcd_lock *el)
{
    struct etcd_queue q;
    int64_t rev = 0, lease = 0;
    int rc = dlock__etcd_read_queue(es, lk->name, &q, el->key, el->key_len,
                                    &rev, &lease);

    if (rc != DLOCK_OK)
        return rc;
    if (rev != el->create_rev || lease != el->lease->id) {
        /* Our key is gone (lease ended, forced release): no place. */
        dlock__etcd_queue_free(&q);
        drop_key(es, el);
        return DLOCK_BUSY;
    }
    rc = decide(es, lk, el, &q);
    dlock__etcd_queue_free(&q);
    return rc;
}

/* Admitted.  A wait's grant (waited) counts its lease from now: the
 * core's lease_end dates from the slice's start, and a waiter admitted
 * late in a slice (its holder gone) would start with what was left of
 * that (65 ms, say; `dlock run` then stopped its command at once).  A
 * try's is the attempt's, a round trip ago.  The lock's lease end must
 * never outlast etcd's key: etcd keeps it at least until the lease's
 * last refresh (its send time) + the TTL that refresh was answered with.
 * So the lease is refreshed now unless its last refresh covers the lease
 * end less the reuse slack, and the lease end is the earlier of the two. */
static int grant(struct etcd_store *es, struct dlock_lock *lk,
                 struct etcd_lock *el, int waited)
{
    int64_t now = dlock__now_ms(), until;
    int rc;

    if (waited && now + lk->ttl_ms > lk->lease_end)
        lk->lease_end = now + lk->ttl_ms;
    rc = dlock__etcd_lease_cover(
        es, el->lease, lk->lease_end - ETCD_REUSE_SLACK_MS(lk->ttl_ms));

    pthread_mutex_lock(&es->mu);
    until = dlock__etcd_lease_until(el->lease);
    pthread_mutex_unlock(&es->mu);
    if (rc == DLOCK_OK && until < lk->lease_end)
        lk->lease_end = until;

    if (rc == DLOCK_LOST) {
        drop_key(es, el); /* the lease, and our key with it, are gone */
        return DLOCK_BUSY;
    }
    if (rc == DLOCK_OK) {
        lk->fence = (uint64_t)el->create_rev;
        /* The key holds lk->value since its put (move_lease keeps it). */
        el->value_fresh = lk->is_candidate;
    }
    return rc;
}

/* A copy of ks in *to (cleared first). */
static int keys_copy(struct etcd_keys *to, const struct etcd_keys *ks)
{
    dlock__etcd_keys_clear(to);
    if (ks->n == 0)
        return DLOCK_OK;
    to->k = calloc(ks->n, sizeof(*to->k));
    to->len = calloc(ks->n, sizeof(*to->len));
    if (to->k == NULL || to->len == NULL)
        return dlock__enomem();
    for (size_t i = 0; i < ks->n; i++) {
        if ((to->k[i] = malloc(ks->len[i] + 1)) == NULL)
            return dlock__enomem();
        memcpy(to->k[i], ks->k[i], ks->len[i] + 1);
        to->len[i] = ks->len[i];
        to->n = i + 1;
    }
    return DLOCK_OK;
}

static int keys_same(const struct etcd_keys *a, const struct etcd_keys *b)
{
    if (a->n != b->n)
        return 0;
    for (size_t i = 0; i < a->n; i++)
        if (a->len[i] != b->len[i] || memcmp(a->k[i], b->k[i], a->len[i]) != 0)
            return 0;
    return 1;
}

/* A wait's watch, made (dlock__etcd_watch_fresh()): see, from when it
 * sees changes, whether our last read misses any. */
struct made_ctx {
    struct etcd_store *es;
    struct dlock_lock *lk;
    struct etcd_lock *el;
    int rc;      /* recheck()'s, when decided */
    int decided; /* made() read the queue, and the wait goes on from rc */
};

/* The watch sees every change after from at once.  Nothing changed since
 * our last read (el->rev): wait on it.  Else something changed in
 * between, which the watch from our read learns of late (the server's
 * next catch-up, up to 100 ms).  Behind waiters only (a key in our way
 * goes at once only if it holds: a waiter's goes after its own hand-off,
 * or when it gives up), wait on.  Behind a holder, which may have let go
 * in between, look now.  Still behind the same keys: the watch wakes us
 * for what comes after our read (which is at least from); else the wait
 * goes on from what we read. */
static int made(void *arg, int64_t from)
{
    struct made_ctx *g = arg;
    struct etcd_keys was = {0};
    int same;

    if (from <= g->el->rev || !g->el->wait_holder)
        return 0;
    if (keys_copy(&was, &g->el->wait) != DLOCK_OK) {
        dlock__etcd_keys_clear(&was);
        g->rc = dlock__enomem();
        g->decided = 1;
        return 1;
    }
    g->rc = recheck(g->es, g->lk, g->el);
    same = g->rc == DLOCK_BUSY && g->el->create_rev != 0 &&
           keys_same(&was, &g->el->wait);
    dlock__etcd_keys_clear(&was);
    if (same)
        return 0;
    g->decided = 1;
    return 1;
}

int dlock__etcd_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                            int64_t deadline, int64_t *retry_ms)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lock_state(lk);
    int rc;

    (void)deadline;
    (void)retry_ms;
    if (el == NULL)
        return dlock__enomem();
    if (el->create_rev == 0) {
        rc = enqueue(es, lk, el);
        return rc == DLOCK_OK ? grant(es, lk, el, 0) : rc;
    }
    rc = recheck(es, lk, el);
    return rc == DLOCK_OK ? grant(es, lk, el, 0) : rc;
}

int dlock__etcd_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                           int64_t slice_ms, int64_t *retry_ms)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lock_state(lk);
    int64_t end = dlock__now_ms() + slice_ms;
    struct made_ctx g = {es, lk, el, DLOCK_OK, 0};
    int rc = DLOCK_BUSY;

    (void)retry_ms;
    if (el == NULL)
        return dlock__enomem();
    while (!dlock__cancelled()) {
        size_t plen = 0, elen = 0;
        char *pfx = NULL, *pend = NULL;
        int64_t step, watch_end;
        int woken = 0;

        if (el->create_rev == 0) {
            rc = enqueue(es, lk, el);
            if (rc == DLOCK_OK)
                rc = grant(es, lk, el, 1);
            if (rc != DLOCK_BUSY || el->create_rev == 0)
                return rc;
        }
        if (dlock__remaining_ms(end) <= 0)
            return DLOCK_BUSY;
        /* Our key must outlive the watch: a third of the lease at most,
         * then its lease is refreshed (a lock's TTL may be far shorter
         * than the slice). */
        pthread_mutex_lock(&es->mu);
        step = el->lease->granted_ms / 3;
        pthread_mutex_unlock(&es->mu);
        if (step < 300)
            step = 300;
        watch_end = dlock__now_ms() + step < end ? dlock__now_ms() + step : end;
        rc = dlock__etcd_lease_cover(es, el->lease, watch_end + step);
        if (rc == DLOCK_LOST) {
            drop_key(es, el);
            continue;
        }
        if (rc != DLOCK_OK)
            return rc;
        if (el->wait.n != 1) {
            /* A semaphore's waiter: its window's keys, in the name. */
            pfx = dlock__etcd_name_prefix(es, lk->name, &plen);
            pend =
                pfx != NULL ? dlock__etcd_prefix_end(pfx, plen, &elen) : NULL;
            if (pend == NULL) {
                free(pfx);
                return dlock__enomem();
            }
        }
        g.decided = 0;
        rc = el->wait.n == 1
                 ? dlock__etcd_watch_fresh(es, el->wait.k[0], el->wait.len[0],
                                           NULL, 0, dlock__etcd_after(el->rev),
                                           NULL, watch_end, made, &g, &woken)
                 : dlock__etcd_watch_fresh(es, pfx, plen, pend, elen,
                                           dlock__etcd_after(el->rev),
                                           el->wait.n > 0 ? &el->wait : NULL,
                                           watch_end, made, &g, &woken);
        free(pfx);
        free(pend);
        if (rc == DLOCK_EUNAVAIL) {
            /* The watch's member went away: look (through any member),
             * then watch again, elsewhere; not in a tight loop. */
            woken = 1;
            if (dlock__cancel_sleep_ms(50))
                break;
        } else if (rc != DLOCK_OK) {
            return rc;
        }
        if (dlock__cancelled())
            break;
        if (g.decided) { /* made() looked already */
            if (g.rc == DLOCK_OK)
                return grant(es, lk, el, 1);
            if (g.rc != DLOCK_BUSY)
                return g.rc;
            continue;
        }
        if (!woken && dlock__remaining_ms(end) > 0)
            continue; /* time to refresh the lease, then watch on */
        /* Woken or at the slice's end, look: a watch says "look", never
         * "yours". */
        rc = recheck(es, lk, el);
        if (rc == DLOCK_OK)
            return grant(es, lk, el, 1);
        if (rc != DLOCK_BUSY)
            return rc;
        if (!woken && el->create_rev != 0)
            return DLOCK_BUSY; /* the slice ran out */
    }
    return DLOCK_BUSY;
}

int dlock__etcd_forget(struct dlock_store *s, struct dlock_lock *lk)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lk->priv;
    int rc = DLOCK_OK;

    if (el == NULL)
        return DLOCK_OK;
    lk->priv = NULL;
    if (el->create_rev != 0) {
        rc = dlock__etcd_commit(
            es,
            dlock__etcd_body_delete_own(el->key, el->key_len, el->create_rev),
            ETCD_RETRY_SAFE, NULL);
        /* Revoke the lease, key and all, once nothing else is on it. */
        if (rc != DLOCK_OK)
            dlock__etcd_lease_retire(es, el->lease);
    }
    dlock__etcd_lock_free(es, el);
    return rc;
}
