/*
 * store.c - the etcd store's ops table: open and close, and the calls on
 * a held lock (extend, release, ttl_left) and on names (status, list,
 * release --force).  The layout and the leases: etcd.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errors.h"
#include "etcd.h"
#include "iobound.h"
#include "names.h"
#include "strutil.h"
#include "url.h"

/* --- a held lock --------------------------------------------------------- */

/* Is our key still ours?  One range: DLOCK_OK or DLOCK_LOST. */
static int check_key(struct etcd_store *es, struct dlock_lock *lk,
                     struct etcd_lock *el)
{
    json_object *reply, *kv;
    int rc = dlock__etcd_get(es, el->key, el->key_len, &reply, &kv);

    if (rc == DLOCK_OK)
        rc = kv != NULL &&
                     dlock__etcd_int(kv, "create_revision") == el->create_rev &&
                     dlock__etcd_int(kv, "lease") == el->lease->id
                 ? DLOCK_OK
                 : dlock__lost(lk, "its etcd key is gone");
    json_object_put(reply);
    return rc;
}

/* A new TTL: move the key to a lease of that length (same key, same
 * create revision: the fence stays).  The new lease must keep the key
 * for the whole new TTL from the call (no reuse slack here: the core
 * counts the lease from the call), and a move whose answer was lost is
 * read back: the key on the new lease is kept there, on the old one it
 * stays; what cannot be told is LOST (the key may be on a lease that
 * nobody renews). */
static int move_lease(struct etcd_store *es, struct dlock_lock *lk,
                      struct etcd_lock *el, int64_t ttl_ms)
{
    int64_t t0 = dlock__now_ms(), rev, lease;
    struct etcd_lease *nl;
    json_object *cmp, *ok, *reply;
    char *rec;
    int won, rc = dlock__etcd_lease_get(
                 es, ttl_ms, !lk->auto_renew || lk->is_candidate, NULL, 0, &nl);

    if (rc != DLOCK_OK)
        return rc;
    rc = dlock__etcd_lease_cover(es, nl, t0 + ttl_ms);
    if (rc != DLOCK_OK) {
        dlock__etcd_lease_put(es, nl);
        return rc == DLOCK_LOST ? dlock__seterr(DLOCK_EUNAVAIL,
                                                "a new etcd lease went at "
                                                "once (%s)",
                                                es->url)
                                : rc;
    }
    rec = dlock__etcd_key_value(lk); /* a candidate's: its value */
    cmp = json_object_new_array();
    ok = json_object_new_array();
    if (rec == NULL || cmp == NULL || ok == NULL) {
        free(rec);
        json_object_put(cmp);
        json_object_put(ok);
        dlock__etcd_lease_put(es, nl);
        return dlock__enomem();
    }
    json_object_array_add(
        cmp, dlock__etcd_cmp_create(el->key, el->key_len, el->create_rev));
    json_object_array_add(
        ok, dlock__etcd_put_op(el->key, el->key_len, rec, nl->id));
    rc = dlock__etcd_commit(es, dlock__etcd_txn(cmp, ok, NULL), 0, &won);
    free(rec);
    if (rc == DLOCK_OK && !won)
        rc = dlock__lost(lk, "its etcd key is gone");
    if (rc != DLOCK_OK && rc != DLOCK_LOST && rc != DLOCK_ENOMEM) {
        /* Did it land?  Ask. */
        int failed = rc;
        json_object *kv;

        rc = dlock__etcd_get(es, el->key, el->key_len, &reply, &kv);
        rev = dlock__etcd_int(kv, "create_revision");
        lease = dlock__etcd_int(kv, "lease");
        json_object_put(reply);
        if (rc != DLOCK_OK) {
            rc = dlock__lost(lk, "an extend to another TTL got no answer, "
                                 "and where its key is could not be read");
            /* The key may be on the new lease: revoke it at its end. */
            dlock__etcd_lease_retire(es, nl);
        } else if (rev != el->create_rev)
            rc = dlock__lost(lk, "its etcd key is gone");
        else if (lease == nl->id)
            rc = DLOCK_OK; /* it landed */
        else /* on the old lease still, as before: the failure stands */
            rc = failed;
    }
    if (rc == DLOCK_OK) {
        dlock__etcd_lease_put(es, el->lease);
        el->lease = nl;
    } else {
        dlock__etcd_lease_put(es, nl);
    }
    return rc;
}

static int need_move(const struct etcd_lock *el, int64_t ttl_ms)
{
    return el->lease->ttl_s != ETCD_TTL_S(ttl_ms);
}

static int etcd_extend(struct dlock_store *s, struct dlock_lock *lk,
                       int64_t ttl_ms)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lk->priv;
    int rc;

    if (el == NULL || el->lease == NULL)
        return dlock__lost(lk, "it holds no etcd key");
    if (need_move(el, ttl_ms))
        return move_lease(es, lk, el, ttl_ms);
    rc = dlock__etcd_lease_cover(es, el->lease, dlock__now_ms() + ttl_ms);
    if (rc == DLOCK_LOST)
        return dlock__lost(lk, "its etcd lease is gone");
    if (rc != DLOCK_OK)
        return rc;
    return check_key(es, lk, el);
}

/* Many locks: each lease refreshed once, every key checked in one txn
 * (ETCD_TXN_OPS ranges at a time). */
static int etcd_extend_many(struct dlock_store *s,
                            struct dlock_lock *const *locks, size_t n, int *rcs)
{
    struct etcd_store *es = (struct etcd_store *)s;
    int64_t now = dlock__now_ms();
    size_t i, j;

    for (i = 0; i < n; i++) {
        struct etcd_lock *el = locks[i]->priv;

        rcs[i] = 1; /* to check */
        if (el == NULL || el->lease == NULL) {
            rcs[i] = dlock__lost(locks[i], "it holds no etcd key");
            continue;
        }
        if (need_move(el, locks[i]->ttl_ms)) {
            rcs[i] = etcd_extend(s, locks[i], locks[i]->ttl_ms);
            continue;
        }
        /* Sharing a lease, the second and later locks find it covered. */
        rcs[i] = dlock__etcd_lease_cover(es, el->lease, now + locks[i]->ttl_ms);
        if (rcs[i] == DLOCK_LOST)
            rcs[i] = dlock__lost(locks[i], "its etcd lease is gone");
        else if (rcs[i] == DLOCK_OK)
            rcs[i] = 1;
    }
    for (i = 0; i < n; i = j) {
        json_object *ops = json_object_new_array(), *body, *reply = NULL;
        size_t idx[ETCD_TXN_OPS], m = 0;
        int rc;

        for (j = i; j < n && m < ETCD_TXN_OPS; j++)
            if (rcs[j] == 1) {
                struct etcd_lock *el = locks[j]->priv;

                json_object_array_add(
                    ops, dlock__etcd_range_op(el->key, el->key_len, NULL, 0, 0,
                                              ETCD_RANGE_KEYS));
                idx[m++] = j;
            }
        if (m == 0) {
            json_object_put(ops);
            continue;
        }
        body = dlock__etcd_txn(NULL, ops, NULL);
        rc = body == NULL ? dlock__enomem()
                          : dlock__etcd_post(es, "/v3/kv/txn", body,
                                             ETCD_RETRY_SAFE, &reply, NULL);
        json_object_put(body);
        for (size_t k = 0; k < m; k++) {
            struct dlock_lock *lk = locks[idx[k]];
            struct etcd_lock *el = lk->priv;
            json_object *kvs = rc == DLOCK_OK ? dlock__etcd_txn_kvs(reply, k)
                                              : NULL,
                        *kv = kvs != NULL && dlock__etcd_alen(kvs) == 1
                                  ? dlock__etcd_aget(kvs, 0)
                                  : NULL;

            if (rc != DLOCK_OK)
                rcs[idx[k]] = rc;
            else if (kvs == NULL)
                rcs[idx[k]] = dlock__seterr(DLOCK_ESTORE,
                                            "etcd answered a txn without its "
                                            "ranges (%s)",
                                            es->url);
            else /* one create revision is one key's creation */
                rcs[idx[k]] =
                    kv != NULL && dlock__etcd_int(kv, "create_revision") ==
                                      el->create_rev
                        ? DLOCK_OK
                        : dlock__lost(lk, "its etcd key is gone");
            json_object_put(kvs);
        }
        json_object_put(reply);
    }
    return DLOCK_OK;
}

static int etcd_ttl_left(struct dlock_store *s, struct dlock_lock *lk,
                         int64_t *left_ms)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lk->priv;
    int64_t ttl, granted;
    int rc;

    if (el == NULL || el->lease == NULL)
        return dlock__lost(lk, "it holds no etcd key");
    rc = check_key(es, lk, el);
    if (rc == DLOCK_OK)
        rc = dlock__etcd_lease_ttl(es, el->lease->id, &ttl, &granted);
    if (rc != DLOCK_OK)
        return rc;
    if (ttl < 0) /* -1: no such lease */
        return dlock__lost(lk, "its etcd lease is gone");
    /* etcd counts whole seconds, rounded down, and the lease outlasts
     * the lock's own lease end (lease.c): the lock's lease end, unless
     * etcd's answer is shorter than that by more than its rounding. */
    *left_ms = lk->lease_end - dlock__now_ms();
    if (*left_ms > ttl * 1000 + 999)
        *left_ms = ttl * 1000 + 999;
    if (*left_ms <= 0)
        *left_ms = 1;
    return DLOCK_OK;
}

static int etcd_release(struct dlock_store *s, struct dlock_lock *lk)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lk->priv;
    int rc, won;

    if (el == NULL)
        return dlock__lost(lk, "it holds no etcd key");
    lk->priv = NULL;
    if (el->create_rev == 0) {
        dlock__etcd_lock_free(es, el);
        return dlock__lost(lk, "it holds no etcd key");
    }
    rc = dlock__etcd_commit(
        es, dlock__etcd_body_delete_own(el->key, el->key_len, el->create_rev),
        0, &won);
    if (rc == DLOCK_OK && !won)
        rc = dlock__lost(lk, "its etcd key was gone before the release");
    /* Unknown: the lease goes, with the key, once nothing else is on it
     * (revoked then), else at the end of its TTL. */
    if (rc != DLOCK_OK && rc != DLOCK_LOST)
        dlock__etcd_lease_retire(es, el->lease);
    dlock__etcd_lock_free(es, el);
    return rc;
}

static void etcd_forget_inherited(struct dlock_store *s, struct dlock_lock *lk)
{
    struct etcd_lock *el = lk->priv;

    (void)s;
    /* The parent's key and lease: nothing sent, nothing counted. */
    if (el != NULL) {
        free(el->key);
        dlock__etcd_keys_clear(&el->wait);
        free(el);
    }
    lk->priv = NULL;
}

/* --- names: status, list, release --force -------------------------------- */

/* The holder's lease left, ms (-1: unknown). */
static int64_t lease_left(struct etcd_store *es, int64_t id)
{
    int64_t left, granted;

    if (dlock__etcd_lease_ttl(es, id, &left, &granted) != DLOCK_OK)
        left = -1;
    dlock__clearerr();
    return left >= 0 ? left * 1000 : -1;
}

static void fill_info(struct etcd_store *es, const struct etcd_queue *q,
                      dlock_info *out)
{
    int shared;
    size_t n = dlock__etcd_holders(q, &shared);
    const struct etcd_entry *h = n > 0 ? &q->e[0] : NULL;

    out->held = n > 0;
    out->shared = shared;
    out->holders = (unsigned)n;
    out->ttl_ms = -1;
    out->limit = h != NULL ? h->limit : 0;
    for (size_t i = 0; i < n; i++)
        if ((uint64_t)q->e[i].create_rev > out->fence)
            out->fence = (uint64_t)q->e[i].create_rev;
    if (h == NULL)
        return;
    out->other_client = h->foreign;
    if (!h->foreign) {
        dlock__strlcpy(out->host, h->host, sizeof(out->host));
        out->pid = h->pid;
        out->since_ms = h->since_ms;
    }
    if (h->lease != 0)
        out->ttl_ms = lease_left(es, h->lease);
}

static int etcd_status(struct dlock_store *s, const char *name, dlock_info *out)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_queue q;
    int rc = dlock__etcd_read_queue(es, name, &q, NULL, 0, NULL, NULL);

    if (rc != DLOCK_OK)
        return rc;
    fill_info(es, &q, out);
    dlock__etcd_queue_free(&q);
    return DLOCK_OK;
}

/* A key P NAME "/" <suffix without '/'> of a valid name: NAME goes in
 * the list (the keys of run records, P NAME \xff..., are not UTF-8). */
struct list_scan {
    struct etcd_store *es;
    struct dlock__names names;
};

static int list_key(const char *key, size_t klen, void *arg)
{
    struct list_scan *ls = arg;
    size_t off = ls->es->prefix_len;
    const char *slash = klen > off ? memrchr(key + off, '/', klen - off) : NULL;

    if (slash == NULL || slash == key + off || slash + 1 == key + klen ||
        !dlock__utf8_valid((const unsigned char *)key, klen) ||
        dlock__check_name(key + off, (size_t)(slash - key) - off) != DLOCK_OK) {
        dlock__clearerr();
        return DLOCK_OK;
    }
    return dlock__names_add(&ls->names, key + off, (size_t)(slash - key) - off);
}

static int etcd_list(struct dlock_store *s, const char *prefix,
                     int (*cb)(const dlock_info *info, void *payload),
                     void *payload)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct list_scan ls = {.es = es};
    /* Keys only, a page at a time (a keyspace shared with other data may
     * be large), then each name's queue read as status reads it. */
    int rc = dlock__etcd_scan_keys(es, prefix, list_key, &ls);

    if (rc != DLOCK_OK) {
        dlock__names_free(&ls.names);
        return rc;
    }
    return dlock__names_report(&ls.names, s, etcd_status, cb, payload);
}

static int etcd_force_release(struct dlock_store *s, const char *name,
                              unsigned *removed)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_queue q;
    json_object *ops, *body, *reply = NULL, *rs;
    int shared, rc = dlock__etcd_read_queue(es, name, &q, NULL, 0, NULL, NULL);
    size_t n;

    *removed = 0;
    if (rc != DLOCK_OK)
        return rc;
    n = dlock__etcd_holders(&q, &shared);
    if (n == 0) {
        dlock__etcd_queue_free(&q);
        return DLOCK_OK;
    }
    /* The holders' keys only: a waiter's key is its place in the queue
     * (and a Go waiter believes a deleted key of its own is a grant). */
    ops = json_object_new_array();
    for (size_t i = 0; ops != NULL && i < n && i < ETCD_TXN_OPS; i++)
        json_object_array_add(
            ops, dlock__etcd_delete_op(q.e[i].key, q.e[i].key_len));
    dlock__etcd_queue_free(&q);
    body = ops != NULL ? dlock__etcd_txn(NULL, ops, NULL) : NULL;
    rc = body == NULL
             ? dlock__enomem()
             : dlock__etcd_post(es, "/v3/kv/txn", body, 0, &reply, NULL);
    json_object_put(body);
    if (rc == DLOCK_OK && json_object_object_get_ex(reply, "responses", &rs))
        for (size_t i = 0; i < dlock__etcd_alen(rs); i++) {
            json_object *d = NULL;

            if (json_object_object_get_ex(dlock__etcd_aget(rs, i),
                                          "response_delete_range", &d))
                *removed += (unsigned)dlock__etcd_int(d, "deleted");
        }
    json_object_put(reply);
    return rc;
}

static int etcd_init(struct dlock_store *s)
{
    (void)s; /* keys need no schema */
    return DLOCK_OK;
}

static int etcd_ddl(char **out, const struct dlock_url *u)
{
    (void)u;
    *out = dlock__strdup("-- etcd needs no schema: dlock keeps each holder "
                         "and waiter of a lock\n"
                         "-- in the key <prefix><name>/<lease id in hex>, as "
                         "etcdctl lock does.\n");
    return *out != NULL ? DLOCK_OK : dlock__enomem();
}

/* dlock_store_probe(): a range read of one key under the prefix (what
 * any role dlock can use may read), for its reply's Date header: the
 * member's clock in whole seconds (ETCD_REPLY_DATE), taken as the middle
 * of its second (resolution_ms 1000).  The certificate of an https://
 * endpoint is not read (libcurl's CURLINFO_CERTINFO is not asked for). */
#define PROBE_KEY                                                              \
    "\xff"                                                                     \
    "dlock-check"
static int etcd_probe(struct dlock_store *s, dlock_probe *out)
{
    struct etcd_store *es = (struct etcd_store *)s;
    json_object *body, *reply = NULL;
    int64_t t0, t1, date;
    char *key;
    int rc;

    out->tls = es->tls ? 1 : 0;
    out->tables_ok = -1;
    snprintf(out->tables, sizeof(out->tables), "no tables (keys)");
    /* A key of the prefix no lock is named (etcd refuses an empty key,
     * and a role granted on the prefix may read it). */
    key = malloc(es->prefix_len + sizeof(PROBE_KEY));
    if (key == NULL)
        return dlock__enomem();
    memcpy(key, es->prefix, es->prefix_len);
    memcpy(key + es->prefix_len, PROBE_KEY, sizeof(PROBE_KEY));
    body = dlock__etcd_range_req(key, es->prefix_len + sizeof(PROBE_KEY) - 1,
                                 NULL, 0, 1, ETCD_RANGE_KEYS);
    free(key);
    if (body == NULL)
        return dlock__enomem();
    t0 = dlock__wall_ms();
    rc = dlock__etcd_post(es, "/v3/kv/range", body, ETCD_RETRY_SAFE, &reply,
                          NULL);
    t1 = dlock__wall_ms();
    json_object_put(body);
    if (rc != DLOCK_OK)
        return rc;
    date = dlock__etcd_int(reply, ETCD_REPLY_DATE);
    json_object_put(reply);
    if (date > 0) {
        out->server_ms = date * 1000 + 500;
        out->host_ms = t0 + (t1 - t0) / 2;
        out->rtt_ms = t1 - t0;
        out->resolution_ms = 1000;
    }
    return DLOCK_OK;
}

const struct dlock_store_ops dlock__etcd_ops = {
    .version = DLOCK_STORE_OPS_VERSION,
    .name = "etcd",
    .has_shared = 1,
    .has_limit = 1,
    .open = dlock__etcd_open,
    .close = dlock__etcd_close,
    .try_acquire = dlock__etcd_try_acquire,
    .wait_slice = dlock__etcd_wait_slice,
    .extend = etcd_extend,
    .extend_many = etcd_extend_many,
    .ttl_left = etcd_ttl_left,
    .release = etcd_release,
    .forget = dlock__etcd_forget,
    .forget_inherited = etcd_forget_inherited,
    .status = etcd_status,
    .list = etcd_list,
    .force_release = etcd_force_release,
    .init = etcd_init,
    .probe = etcd_probe,
    .ddl = etcd_ddl,
    .run_begin = dlock__etcd_run_begin,
    .run_end = dlock__etcd_run_end,
    .keep_runs = dlock__etcd_keep_runs,
    .kept_runs = dlock__etcd_kept_runs,
    .runs = dlock__etcd_runs,
    .last_runs = dlock__etcd_last_runs,
    .value_set = dlock__etcd_value_set,
    .value_get = dlock__etcd_value_get,
    .suspend = dlock__etcd_suspend,
    .resume = dlock__etcd_resume,
    .suspension = dlock__etcd_suspension,
    .suspensions = dlock__etcd_suspensions,
    .watch = dlock__etcd_watch_name,
    .watch_end = dlock__etcd_watch_end,
};
