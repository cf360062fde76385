/*
 * runs.c - the etcd store's run records (include/dlock.h, "Runs";
 * src/core/store.h: run_begin, run_end, runs, last_runs).
 *
 * Two keys per name, outside every name's queue (no name is P NAME
 * followed by a byte 0xff: names are UTF-8):
 *   P NAME \xff runs     JSON {"runs": [newest first, DLOCK_RUNS_KEPT at
 *                        most], "ok": the run that succeeded, if any}
 *   P NAME \xff start    the last start, put with a lease of its own,
 *                        granted START_LEASE_S at the start
 *
 * etcd has no clock a client can read, but a lease counts down on the
 * leader's: the time since the last start is the start lease's granted
 * TTL less its TTL left (whole seconds, rounded against going early), so
 * "not again within half the period" never trusts a host's clock.  A
 * leader change restarts every lease: then a period may run long (one
 * run skipped), never short.  start_ms and end_ms are the writing host's
 * wall clock, for display only.  A decision is read, then written by a
 * txn that compares the lock key's create revision (we still hold it),
 * the runs key's and the start key's mod revisions (nobody wrote in
 * between); a txn that lost a race reads and decides again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "errors.h"
#include "etcd.h"
#include "iobound.h"
#include "names.h"
#include "process.h"
#include "strutil.h"

#define TRIES 8
/* The start lease: longer than half the longest period (a year), and
 * shorter than the year dlock__etcd_ttl() clamps what etcd says to. */
#define START_LEASE_S (200LL * 24 * 3600)

static char *run_key(const struct etcd_store *es, const char *name,
                     const char *what, size_t *len)
{
    size_t n = strlen(name), w = strlen(what);
    char *k = malloc(es->prefix_len + n + 1 + w + 1);

    if (k == NULL)
        return NULL;
    memcpy(k, es->prefix, es->prefix_len);
    memcpy(k + es->prefix_len, name, n);
    k[es->prefix_len + n] = '\xff';
    memcpy(k + es->prefix_len + n + 1, what, w + 1);
    *len = es->prefix_len + n + 1 + w;
    return k;
}

static json_object *run_json(uint64_t fence, const char *host, int64_t pid,
                             int64_t start)
{
    json_object *r = json_object_new_object();

    if (r == NULL)
        return NULL;
    json_object_object_add(r, "fence", json_object_new_int64((int64_t)fence));
    json_object_object_add(r, "host", json_object_new_string(host));
    json_object_object_add(r, "pid", json_object_new_int64(pid));
    json_object_object_add(r, "start", json_object_new_int64(start));
    json_object_object_add(r, "end", json_object_new_int64(0));
    json_object_object_add(r, "result", json_object_new_int(DLOCK_RUN_RUNNING));
    json_object_object_add(r, "status", json_object_new_int(-1));
    return r;
}

static void run_fill(dlock_run *out, const char *name, json_object *r)
{
    json_object *h;

    memset(out, 0, sizeof(*out));
    dlock__strlcpy(out->name, name, sizeof(out->name));
    out->fence = (uint64_t)dlock__etcd_int(r, "fence");
    if (json_object_object_get_ex(r, "host", &h) &&
        json_object_is_type(h, json_type_string))
        dlock__strlcpy(out->host, json_object_get_string(h), sizeof(out->host));
    out->pid = dlock__etcd_int(r, "pid");
    out->start_ms = dlock__etcd_int(r, "start");
    out->end_ms = dlock__etcd_int(r, "end");
    out->result = (int)dlock__etcd_int(r, "result");
    out->status = (int)dlock__etcd_int(r, "status");
}

/* The runs document of the runs key's kv (NULL: none): parsed, or a new
 * empty one; *mod its mod revision (0: absent). */
static json_object *runs_doc(json_object *kv, int64_t *mod)
{
    json_object *doc = NULL, *runs;
    size_t n = 0;
    char *v;

    *mod = 0;
    if (kv != NULL) {
        *mod = dlock__etcd_int(kv, "mod_revision");
        v = dlock__etcd_unb64(kv, "value", &n);
        if (v != NULL)
            doc = dlock__etcd_parse(v, n, NULL, NULL);
        free(v);
    }
    if (doc == NULL || !json_object_is_type(doc, json_type_object)) {
        json_object_put(doc);
        doc = json_object_new_object();
    }
    if (doc != NULL && (!json_object_object_get_ex(doc, "runs", &runs) ||
                        !json_object_is_type(runs, json_type_array)))
        json_object_object_add(doc, "runs", json_object_new_array());
    return doc;
}

/* Read the lock key, the runs key and the start key in one txn. */
static int read_state(struct etcd_store *es, const char *lkey, size_t llen,
                      const char *rkey, size_t rlen, const char *skey,
                      size_t slen, int64_t *lock_rev, json_object **doc,
                      int64_t *mod, int64_t *start_mod, int64_t *start_lease)
{
    json_object *ops = json_object_new_array(), *body, *reply = NULL, *kvs;
    int rc;

    if (ops == NULL)
        return dlock__enomem();
    json_object_array_add(ops, dlock__etcd_range_op(lkey, llen, NULL, 0, 0, 0));
    json_object_array_add(ops, dlock__etcd_range_op(rkey, rlen, NULL, 0, 0, 0));
    json_object_array_add(ops, dlock__etcd_range_op(skey, slen, NULL, 0, 0, 0));
    body = dlock__etcd_txn(NULL, ops, NULL);
    rc = body == NULL ? dlock__enomem()
                      : dlock__etcd_post(es, "/v3/kv/txn", body,
                                         ETCD_RETRY_SAFE, &reply, NULL);
    json_object_put(body);
    if (rc != DLOCK_OK)
        return rc;
    kvs = dlock__etcd_txn_kvs(reply, 0);
    *lock_rev =
        kvs != NULL && dlock__etcd_alen(kvs) == 1
            ? dlock__etcd_int(dlock__etcd_aget(kvs, 0), "create_revision")
            : 0;
    json_object_put(kvs);
    kvs = dlock__etcd_txn_kvs(reply, 1);
    *doc = runs_doc(
        dlock__etcd_alen(kvs) == 1 ? dlock__etcd_aget(kvs, 0) : NULL, mod);
    json_object_put(kvs);
    kvs = dlock__etcd_txn_kvs(reply, 2);
    *start_mod = *start_lease = 0;
    if (kvs != NULL && dlock__etcd_alen(kvs) == 1) {
        json_object *kv = dlock__etcd_aget(kvs, 0);

        *start_mod = dlock__etcd_int(kv, "mod_revision");
        *start_lease = dlock__etcd_int(kv, "lease");
    }
    json_object_put(kvs);
    json_object_put(reply);
    return *doc != NULL ? DLOCK_OK : dlock__enomem();
}

/* Time since the last start by the start lease, ms, rounded down to be
 * sure (-1: unknown, the lease is gone: over half a year ago). */
static int since_start(struct etcd_store *es, int64_t lease, int64_t *ms)
{
    int64_t left, granted;
    int rc;

    *ms = -1;
    if (lease == 0)
        return DLOCK_OK;
    rc = dlock__etcd_lease_ttl(es, lease, &left, &granted);
    if (rc != DLOCK_OK)
        return rc;
    /* etcd truncates the seconds left, so granted - left may be up to a
     * second more than the time passed: take one off. */
    if (left >= 0 && granted > 0)
        *ms = (granted - left - 1) * 1000;
    if (*ms < -1)
        *ms = 0;
    return DLOCK_OK;
}

/* Revoke a start lease that is no start any more (best effort: it
 * expires by itself), leaving the caller's message alone. */
static void revoke_start(struct etcd_store *es, int64_t id)
{
    if (id == 0)
        return;
    dlock__etcd_lease_revoke(es, id,
                             dlock__now_ms() + dlock__io_bound(es->timeout_ms));
    dlock__clearerr();
}

/* The runs key's document and mod revision, read on its own. */
static int read_runs(struct etcd_store *es, const char *rkey, size_t rlen,
                     json_object **doc, int64_t *mod)
{
    json_object *reply, *kv;
    int rc = dlock__etcd_get(es, rkey, rlen, &reply, &kv);

    *doc = NULL;
    if (rc == DLOCK_OK && (*doc = runs_doc(kv, mod)) == NULL)
        rc = dlock__enomem();
    json_object_put(reply);
    return rc;
}

/* The new runs document: RUNNING ones abandoned, ours first, kept N. */
static json_object *with_new_run(json_object *doc, json_object *run)
{
    json_object *old = json_object_object_get(doc, "runs"),
                *runs = json_object_new_array(), *out;
    size_t n = dlock__etcd_alen(old);

    if (runs == NULL)
        return NULL;
    json_object_array_add(runs, run);
    for (size_t i = 0; i < n && i + 1 < DLOCK_RUNS_KEPT; i++) {
        json_object *r = dlock__etcd_aget(old, i), *c = NULL;

        if (!json_object_is_type(r, json_type_object) ||
            json_object_deep_copy(r, &c, NULL) != 0)
            continue; /* not a run dlock wrote: dropped */
        if (dlock__etcd_int(c, "result") == DLOCK_RUN_RUNNING)
            json_object_object_add(c, "result",
                                   json_object_new_int(DLOCK_RUN_ABANDONED));
        json_object_array_add(runs, c);
    }
    out = json_object_new_object();
    if (out == NULL) {
        json_object_put(runs);
        return NULL;
    }
    json_object_object_add(out, "runs", runs);
    if (json_object_object_get(doc, "ok") != NULL)
        json_object_object_add(
            out, "ok", json_object_get(json_object_object_get(doc, "ok")));
    return out;
}

int dlock__etcd_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                          const dlock_run_rule *rule, const char *host,
                          int64_t pid, int *go, dlock_run *last)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lk->priv;
    size_t rlen = 0, plen = 0;
    char *rkey = run_key(es, lk->name, "runs", &rlen),
         *pkey = run_key(es, lk->name, "start", &plen);
    int rc = DLOCK_OK;

    if (rkey == NULL || pkey == NULL || el == NULL || el->key == NULL) {
        free(rkey);
        free(pkey);
        return el == NULL || el->key == NULL
                   ? dlock__lost(lk, "it holds no etcd key")
                   : dlock__enomem();
    }
    for (int t = 0; t < TRIES; t++) {
        json_object *doc = NULL, *runs, *ok, *newdoc, *cmp, *ops;
        int won;
        int64_t lock_rev = 0, mod = 0, lease = 0, start_mod = 0,
                start_lease = 0, since = -1, granted;
        const char *text;

        rc = read_state(es, el->key, el->key_len, rkey, rlen, pkey, plen,
                        &lock_rev, &doc, &mod, &start_mod, &start_lease);
        if (rc != DLOCK_OK)
            break;
        if (lock_rev != el->create_rev) {
            json_object_put(doc);
            rc = dlock__lost(lk, "its etcd key is gone");
            break;
        }
        runs = json_object_object_get(doc, "runs");
        ok = json_object_object_get(doc, "ok");
        if (!json_object_is_type(ok, json_type_object))
            ok = NULL; /* not a run dlock wrote */
        if (rule->once && ok != NULL) {
            run_fill(last, lk->name, ok);
            *go = 0;
            json_object_put(doc);
            break;
        }
        if (rule->period_ms > 0)
            rc = since_start(es, start_lease, &since);
        if (rc != DLOCK_OK) {
            json_object_put(doc);
            break;
        }
        if (rule->period_ms > 0 && since >= 0 && since < rule->period_ms / 2) {
            if (dlock__etcd_alen(runs) > 0)
                run_fill(last, lk->name, dlock__etcd_aget(runs, 0));
            *go = 0;
            json_object_put(doc);
            break;
        }
        if (dlock__etcd_alen(runs) > 0)
            run_fill(last, lk->name, dlock__etcd_aget(runs, 0));
        rc = dlock__etcd_lease_grant(es, START_LEASE_S, &lease, &granted);
        if (rc != DLOCK_OK) {
            json_object_put(doc);
            break;
        }
        newdoc =
            with_new_run(doc, run_json(lk->fence, host, pid, dlock__wall_ms()));
        json_object_put(doc);
        cmp = json_object_new_array();
        ops = json_object_new_array();
        text =
            newdoc != NULL
                ? json_object_to_json_string_ext(newdoc, JSON_C_TO_STRING_PLAIN)
                : NULL;
        if (text == NULL || cmp == NULL || ops == NULL) {
            json_object_put(newdoc);
            json_object_put(cmp);
            json_object_put(ops);
            rc = dlock__enomem();
            break;
        }
        json_object_array_add(
            cmp, dlock__etcd_cmp_create(el->key, el->key_len, el->create_rev));
        json_object_array_add(cmp, mod == 0
                                       ? dlock__etcd_cmp_create(rkey, rlen, 0)
                                       : dlock__etcd_cmp_mod(rkey, rlen, mod));
        {
            char f[24];

            snprintf(f, sizeof(f), "%llu", (unsigned long long)lk->fence);
            json_object_array_add(
                cmp, start_mod == 0
                         ? dlock__etcd_cmp_create(pkey, plen, 0)
                         : dlock__etcd_cmp_mod(pkey, plen, start_mod));
            json_object_array_add(ops,
                                  dlock__etcd_put_op(pkey, plen, f, lease));
        }
        json_object_array_add(ops, dlock__etcd_put_op(rkey, rlen, text, 0));
        json_object_put(newdoc);
        rc = dlock__etcd_commit(es, dlock__etcd_txn(cmp, ops, NULL), 0, &won);
        if (rc == DLOCK_OK && won) {
            *go = 1;
            revoke_start(es, start_lease); /* the start before ours */
            break;
        }
        /* Ours is not the start: its lease goes (or expires). */
        if (rc == DLOCK_OK)
            revoke_start(es, lease);
        if (rc != DLOCK_OK)
            break;
        /* Someone wrote in between (or the lock went): read again. */
        memset(last, 0, sizeof(*last));
        rc = dlock__seterr(DLOCK_EUNAVAIL,
                           "the run records of '%s' kept changing (%s)",
                           lk->name, es->url);
    }
    free(rkey);
    free(pkey);
    return rc;
}

int dlock__etcd_run_end(struct dlock_store *s, struct dlock_lock *lk,
                        int result, int status)
{
    struct etcd_store *es = (struct etcd_store *)s;
    size_t rlen = 0;
    char *rkey = run_key(es, lk->name, "runs", &rlen);
    int rc = DLOCK_OK;

    if (rkey == NULL)
        return dlock__enomem();
    for (int t = 0; t < TRIES; t++) {
        json_object *doc, *runs, *r = NULL, *cmp, *ops;
        int64_t mod = 0;
        int won;
        size_t n;

        rc = read_runs(es, rkey, rlen, &doc, &mod);
        if (rc != DLOCK_OK)
            break;
        runs = json_object_object_get(doc, "runs");
        n = dlock__etcd_alen(runs);
        for (size_t i = 0; i < n && r == NULL; i++)
            if ((uint64_t)dlock__etcd_int(dlock__etcd_aget(runs, i), "fence") ==
                lk->fence)
                r = dlock__etcd_aget(runs, i);
        if (r == NULL || mod == 0) { /* dropped as too old: nothing to do */
            json_object_put(doc);
            break;
        }
        json_object_object_add(r, "end",
                               json_object_new_int64(dlock__wall_ms()));
        json_object_object_add(r, "result", json_object_new_int(result));
        json_object_object_add(r, "status", json_object_new_int(status));
        if (result == DLOCK_RUN_EXITED && status == 0)
            json_object_object_add(doc, "ok", json_object_get(r));
        cmp = json_object_new_array();
        ops = json_object_new_array();
        if (cmp == NULL || ops == NULL) {
            json_object_put(cmp);
            json_object_put(ops);
            json_object_put(doc);
            rc = dlock__enomem();
            break;
        }
        json_object_array_add(cmp, dlock__etcd_cmp_mod(rkey, rlen, mod));
        json_object_array_add(
            ops, dlock__etcd_put_op(rkey, rlen,
                                    json_object_to_json_string_ext(
                                        doc, JSON_C_TO_STRING_PLAIN),
                                    0));
        json_object_put(doc);
        rc = dlock__etcd_commit(es, dlock__etcd_txn(cmp, ops, NULL), 0, &won);
        if (rc == DLOCK_OK && won)
            break;
        if (rc != DLOCK_OK)
            break;
        rc = dlock__seterr(DLOCK_EUNAVAIL,
                           "the run records of '%s' kept changing (%s)",
                           lk->name, es->url);
    }
    free(rkey);
    return rc;
}

/* Pass the first max runs of doc to cb. */
static int each_run(const char *name, json_object *doc, unsigned max,
                    dlock_run_cb cb, void *payload)
{
    json_object *runs = json_object_object_get(doc, "runs");
    size_t n = runs != NULL ? dlock__etcd_alen(runs) : 0;
    int rc = 0;

    for (size_t i = 0; i < n && i < max && rc == 0; i++) {
        dlock_run r;

        run_fill(&r, name, dlock__etcd_aget(runs, i));
        rc = cb(&r, payload);
    }
    return rc;
}

int dlock__etcd_runs(struct dlock_store *s, const char *name, unsigned max,
                     dlock_run_cb cb, void *payload)
{
    struct etcd_store *es = (struct etcd_store *)s;
    size_t rlen = 0;
    char *rkey = run_key(es, name, "runs", &rlen);
    json_object *doc;
    int64_t mod;
    int rc;

    if (rkey == NULL)
        return dlock__enomem();
    rc = read_runs(es, rkey, rlen, &doc, &mod);
    free(rkey);
    if (rc != DLOCK_OK)
        return rc;
    rc = each_run(name, doc, max, cb, payload);
    json_object_put(doc);
    return rc;
}

/* A key P NAME \xff runs of a valid name: NAME goes in the list. */
struct runs_scan {
    struct etcd_store *es;
    struct dlock__names names;
};

static int runs_key(const char *key, size_t klen, void *arg)
{
    static const char sfx[] = "\xffruns";
    struct runs_scan *rs = arg;
    size_t off = rs->es->prefix_len, sl = sizeof(sfx) - 1;

    if (klen <= off + sl || memcmp(key + klen - sl, sfx, sl) != 0 ||
        dlock__check_name(key + off, klen - sl - off) != DLOCK_OK) {
        dlock__clearerr();
        return DLOCK_OK;
    }
    return dlock__names_add(&rs->names, key + off, klen - sl - off);
}

int dlock__etcd_last_runs(struct dlock_store *s, const char *prefix,
                          dlock_run_cb cb, void *payload)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct runs_scan rs = {.es = es};
    int rc = dlock__etcd_scan_keys(es, prefix, runs_key, &rs);

    /* Keys come in byte order, so names do too: newest run of each. */
    for (size_t i = 0; rc == DLOCK_OK && i < rs.names.n; i++)
        rc = dlock__etcd_runs(s, rs.names.v[i], 1, cb, payload);
    dlock__names_free(&rs.names);
    return rc;
}
