/*
 * runs.c - the etcd store's run records (include/dlock.h, "Runs";
 * src/core/store.h: run_begin, run_end, runs, last_runs).
 *
 * Two keys per name NAME = FIRST [/REST] (FIRST: up to its first '/'),
 * each beside every name's queue, never in one: a queue is P N "/"...
 * for a name N, and a byte 0xff follows P FIRST here (names are UTF-8,
 * which has none), so no peer that locks a name (etcdctl lock,
 * concurrency.Mutex) finds them in its range, while a role granted on a
 * prefix of FIRST still covers them:
 *   P FIRST \xff runs [/REST]   JSON {"runs": [newest first,
 *                               the setting at most], "ok": the run
 *                               that succeeded, if any}
 *   P FIRST \xff start [/REST]  the last start, JSON {"fence", "at"}
 *   P FIRST \xff keep [/REST]   the setting (dlock_keep_runs), JSON
 *                               {"keep": N}; none: DLOCK_RUNS_KEPT
 * and beside them the name's suspension (suspend.c), P FIRST \xff
 * suspend [/REST].
 *
 * THE SETTING (dlock_keep_runs) is its own key, which no older dlock
 * writes: an older client's run trims the runs to DLOCK_RUNS_KEPT and
 * rewrites the runs key without the setting in it, and the setting
 * survives that; this version's next run keeps to it again (the runs
 * then grow back to it, run by run).  It is read with the records in
 * every decision's read and compared in its txn, so a run and a
 * keep_runs() are ordered; keep_runs() is that read and one txn that
 * puts the setting and, if the runs are over it, the document cut to
 * it (newest first: the oldest go).  A name's runs stay ONE value that
 * every run rewrites whole (read, then put, twice a run: run_begin and
 * run_end), so a run costs what the runs kept weigh: at most
 * ETCD_RUNS_KEPT_MAX (etcd.h), which dlock_keep_runs() refuses to pass
 * (DLOCK_EINVAL) and a planted setting over it is read as the default.
 *
 * THE CLOCK.  etcd keeps no time a client can read (a revision is not
 * time; a lease's countdown restarts at every leader change, and anyone
 * may keep it alive: etcd 3.4 checks no permission on keepalives).  What
 * it sends is the HTTP Date header of every reply: the answering
 * member's wall clock, whole seconds (ETCD_REPLY_DATE).  A start is put
 * without "at" by the txn that decides it, then stamped with "at", the
 * Date of that txn's reply, which comes after the put: the start was
 * before at + 1 s.  A decision whose read has Date D counts D - at - 2 s
 * since it (a second for the Date's truncation, one for members whose
 * clocks differ: etcd warns over 1 s).  A start never stamped (its
 * holder died, the store blinked) is stamped by the next decision that
 * sees it, with its read's Date, and that decision skips: a period may
 * run long, never short.  start_ms and end_ms are the Date of the read
 * before the write (0: no Date).  A member clock stepped back by D
 * delays the next run by up to D; stepped forward by J, it may come up
 * to J early, as on every store's clock.
 *
 * A decision is one read of the lock key, the records and the
 * suspension key, then a txn that compares the lock key's create
 * revision (we still hold it), every record key's mod revision (nobody
 * wrote in between) and the suspension key's create revision (0: still
 * not suspended); a txn that lost a race reads and decides again.  A
 * suspended name is skipped on that read, before any rule, and nothing
 * is written.
 *
 * THE EARLIER LAYOUT (before issue 43) kept P NAME \xff runs and P NAME
 * \xff start (the fence, with a 200-day lease: the old clock): the same
 * keys for a name without '/', but for FIRST/REST inside FIRST's range,
 * where they kept `etcdctl lock FIRST` waiting.  They are read too,
 * merged with these, and moved (or, in place, rewritten) by the name's
 * next run or decision: a --once success stays one, and an old start
 * counts from its lease, which gives a lower bound on the time since it
 * (a countdown only ever restarts).  That lease is never revoked (it
 * expires): whoever wrote the record chose it, maybe another holder's.
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
#define GRPC_PERMISSION_DENIED 7 /* etcd's code for it (http.c) */

/* A name's record keys: this layout's and, for a name with a '/', the
 * earlier one's (NULL for a name without: they are the same keys). */
enum { K_RUNS, K_START, K_KEEP, K_OLD_RUNS, K_OLD_START, NKEYS };

/* What a name's keep key says (ETCD_RUNS_KEPT_MAX at most: the runs are
 * one value, see the header). */
static int64_t keep_of(json_object *kv);

struct recs {
    char *key[NKEYS];
    size_t len[NKEYS];
    char *susp; /* the suspension key (suspend.c) */
    size_t susp_len;
};

/* P FIRST \xff WHAT [/REST], or (old) P NAME \xff WHAT. */
static char *rec_key(const struct etcd_store *es, const char *name,
                     const char *what, int old, size_t *len)
{
    size_t n = strlen(name), w = strlen(what), o = es->prefix_len,
           f = old ? n : strcspn(name, "/");
    char *k = malloc(o + n + w + 2);

    if (k == NULL)
        return NULL;
    memcpy(k, es->prefix, o);
    memcpy(k + o, name, f);
    k[o + f] = '\xff';
    memcpy(k + o + f + 1, what, w);
    memcpy(k + o + f + 1 + w, name + f, n - f + 1);
    *len = o + n + 1 + w;
    return k;
}

static void recs_free(struct recs *r)
{
    for (int i = 0; i < NKEYS; i++)
        free(r->key[i]);
    free(r->susp);
}

static int recs_keys(const struct etcd_store *es, const char *name,
                     struct recs *r)
{
    int n = strchr(name, '/') != NULL ? NKEYS : K_OLD_RUNS;

    memset(r, 0, sizeof(*r));
    for (int i = 0; i < n; i++) {
        r->key[i] = rec_key(es, name,
                            i == K_KEEP                      ? "keep"
                            : i == K_RUNS || i == K_OLD_RUNS ? "runs"
                                                             : "start",
                            i >= K_OLD_RUNS, &r->len[i]);
        if (r->key[i] == NULL) {
            recs_free(r);
            return dlock__enomem();
        }
    }
    r->susp = dlock__etcd_susp_key(es, name, &r->susp_len);
    if (r->susp == NULL) {
        recs_free(r);
        return dlock__enomem();
    }
    return DLOCK_OK;
}

/* A field dlock wrote as a JSON integer, or def. */
static int64_t rec_int(json_object *o, const char *f, int64_t def)
{
    json_object *v = NULL;

    if (!json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, f, &v) ||
        !json_object_is_type(v, json_type_int))
        return def;
    return json_object_get_int64(v);
}

/* Whether ok is a success dlock could have written: a run with a fence
 * that exited 0.  Anything else is unreadable: no success. */
static int ok_readable(json_object *ok)
{
    return rec_int(ok, "fence", 0) > 0 &&
           rec_int(ok, "result", -1) == DLOCK_RUN_EXITED &&
           rec_int(ok, "status", -1) == 0;
}

/* A keep key's kv (NULL: none): its setting, if dlock could have
 * written it (a JSON object whose "keep" is an integer in
 * 1..ETCD_RUNS_KEPT_MAX), else DLOCK_RUNS_KEPT: a planted 0, -1, 10^18,
 * "5" or 5.5 sizes nothing. */
static int64_t keep_of(json_object *kv)
{
    size_t n = 0;
    char *v = kv != NULL ? dlock__etcd_unb64(kv, "value", &n) : NULL;
    json_object *o = v != NULL ? dlock__etcd_parse(v, n, NULL, NULL) : NULL;
    int64_t k = rec_int(o, "keep", DLOCK_RUNS_KEPT);

    free(v);
    json_object_put(o);
    return k >= 1 && k <= ETCD_RUNS_KEPT_MAX ? k : DLOCK_RUNS_KEPT;
}

/* A reply's Date (http.c), seconds; 0: none. */
static int64_t reply_date(json_object *reply)
{
    int64_t d = dlock__etcd_int(reply, ETCD_REPLY_DATE);

    return d > 0 && d < ETCD_DATE_MAX ? d : 0;
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

/* The runs document of a runs key's kv (NULL: none): parsed, or a new
 * empty one. */
static json_object *runs_doc(json_object *kv)
{
    json_object *doc = NULL, *runs;
    size_t n = 0;
    char *v;

    if (kv != NULL) {
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

static int by_fence_desc(const void *a, const void *b)
{
    int64_t x = rec_int(*(json_object *const *)a, "fence", 0),
            y = rec_int(*(json_object *const *)b, "fence", 0);

    return x < y ? 1 : x > y ? -1 : 0;
}

/* Into doc, the runs of old it lacks (by fence), newest first, and old's
 * success if it is the later one. */
static int merge_docs(json_object *doc, json_object *old)
{
    json_object *runs = json_object_object_get(doc, "runs"),
                *oruns = json_object_object_get(old, "runs"),
                *ok = json_object_object_get(doc, "ok"),
                *ook = json_object_object_get(old, "ok"), *c;
    size_t n = dlock__etcd_alen(runs), on = dlock__etcd_alen(oruns);
    int added = 0;

    /* The kept runs of each only (the earlier layout kept
     * DLOCK_RUNS_KEPT): a document of thousands (not dlock's) costs no
     * more. */
    n = n < ETCD_RUNS_KEPT_MAX ? n : ETCD_RUNS_KEPT_MAX;
    on = on < DLOCK_RUNS_KEPT ? on : DLOCK_RUNS_KEPT;
    for (size_t i = 0; i < on; i++) {
        json_object *r = dlock__etcd_aget(oruns, i);
        int64_t f = rec_int(r, "fence", 0);
        int have = 0;

        for (size_t j = 0; j < n && !have; j++)
            have = rec_int(dlock__etcd_aget(runs, j), "fence", 0) == f;
        c = NULL;
        if (have || f <= 0 || json_object_deep_copy(r, &c, NULL) != 0)
            continue;
        if (json_object_array_add(runs, c) != 0) {
            json_object_put(c);
            return dlock__enomem();
        }
        added = 1;
    }
    if (added) {
        json_object_array_sort(runs, by_fence_desc);
        n = dlock__etcd_alen(runs);
        if (n > ETCD_RUNS_KEPT_MAX)
            json_object_array_del_idx(runs, ETCD_RUNS_KEPT_MAX,
                                      n - ETCD_RUNS_KEPT_MAX);
    }
    if (ok_readable(ook) && (!ok_readable(ok) || rec_int(ook, "fence", 0) >
                                                     rec_int(ok, "fence", 0)))
        json_object_object_add(doc, "ok", json_object_get(ook));
    return DLOCK_OK;
}

/* What one read of a name's records found. */
struct state {
    int64_t lock_rev;    /* the lock key's create revision (0: gone) */
    int64_t mod[NKEYS];  /* each record key's mod revision (0: absent) */
    json_object *doc;    /* the runs, both layouts' merged */
    int64_t start_fence; /* the last start (0: none dlock can read) */
    int64_t start_at;    /* its stamp, s (0: not stamped) */
    int64_t old_fence;   /* the earlier layout's start, and its lease */
    int64_t old_lease;
    int old_here;  /* ... in the start key (a name without '/') */
    int64_t date;  /* the read's Date, s (0: none) */
    int64_t keep;  /* the name's setting (DLOCK_RUNS_KEPT: none) */
    int suspended; /* a suspension record (read with the lock key) */
    dlock_suspension susp;
};

/* A start key's kv: its fence and stamp, if dlock can read them.
 * Whether it is a JSON object (not the earlier layout's digits). */
static int start_read(json_object *kv, struct state *st)
{
    size_t n = 0;
    char *v = dlock__etcd_unb64(kv, "value", &n);
    json_object *o = v != NULL ? dlock__etcd_parse(v, n, NULL, NULL) : NULL,
                *at = NULL;
    int64_t f = rec_int(o, "fence", 0), a = 0;

    free(v);
    if (json_object_is_type(o, json_type_object) &&
        json_object_object_get_ex(o, "at", &at)) {
        a = rec_int(o, "at", 0);
        if (a <= 0 || a >= ETCD_DATE_MAX)
            f = 0; /* a stamp that is no time: unreadable */
    }
    if (f > 0) {
        st->start_fence = f;
        st->start_at = a;
    }
    f = json_object_is_type(o, json_type_object);
    json_object_put(o);
    return (int)f;
}

/* The earlier layout's start: the fence in digits, with a lease.
 * Whether it is one. */
static int old_start_read(json_object *kv, struct state *st)
{
    size_t n = 0;
    char *v = dlock__etcd_unb64(kv, "value", &n), *end = NULL;
    long long f = v != NULL && n > 0 ? strtoll(v, &end, 10) : 0;
    int64_t lease = dlock__etcd_int(kv, "lease");
    int ok = end != NULL && end != v && *end == '\0' && f > 0 && lease != 0;

    free(v);
    if (ok) {
        st->old_fence = f;
        st->old_lease = lease;
    }
    return ok;
}

/* Read the lock key (lkey may be NULL) and the name's record keys in one
 * linearizable txn; with the lock key, its suspension key too. */
static int read_state(struct etcd_store *es, const char *name, const char *lkey,
                      size_t llen, const struct recs *r, struct state *st)
{
    json_object *ops = json_object_new_array(), *body, *reply = NULL, *kvs,
                *kv[NKEYS] = {0}, *got[NKEYS] = {0}, *old = NULL;
    size_t at[NKEYS], n = 0, at_susp = 0;
    int rc = DLOCK_OK, grpc = 0;

    memset(st, 0, sizeof(*st));
    if (ops == NULL)
        return dlock__enomem();
    if (lkey != NULL) {
        json_object_array_add(ops,
                              dlock__etcd_range_op(lkey, llen, NULL, 0, 0, 0));
        n = 1;
    }
    for (int i = 0; i < NKEYS && r->key[i] != NULL; i++) {
        at[i] = n++;
        json_object_array_add(
            ops, dlock__etcd_range_op(r->key[i], r->len[i], NULL, 0, 0, 0));
    }
    if (lkey != NULL) {
        at_susp = n++;
        json_object_array_add(
            ops, dlock__etcd_range_op(r->susp, r->susp_len, NULL, 0, 0, 0));
    }
    body = dlock__etcd_txn(NULL, ops, NULL);
    rc = body == NULL ? dlock__enomem()
                      : dlock__etcd_post(es, "/v3/kv/txn", body,
                                         ETCD_RETRY_SAFE, &reply, &grpc);
    json_object_put(body);
    if (rc != DLOCK_OK && grpc == GRPC_PERMISSION_DENIED &&
        strchr(name, '/') != NULL) {
        /* A role on FIRST/ (the names under it) does not cover them:
         * inside that range they would be FIRST's queue. */
        char said[512];
        int f = (int)strcspn(name, "/");

        dlock__strlcpy(said, dlock_errmsg(), sizeof(said));
        rc = dlock__seterr(rc,
                           "%s; the run records of '%s' (%s%.*s, a byte 0xff, "
                           "runs%s, start%s, keep%s and suspend%s) lie outside "
                           "a role on '%s%.*s/' (grant it on '%s%.*s')",
                           said, name, es->prefix, f, name, name + f, name + f,
                           name + f, name + f, es->prefix, f, name, es->prefix,
                           f, name);
    }
    if (rc != DLOCK_OK)
        return rc;
    st->date = reply_date(reply);
    if (lkey != NULL) {
        kvs = dlock__etcd_txn_kvs(reply, 0);
        if (dlock__etcd_alen(kvs) == 1)
            st->lock_rev =
                dlock__etcd_int(dlock__etcd_aget(kvs, 0), "create_revision");
        json_object_put(kvs);
        kvs = dlock__etcd_txn_kvs(reply, at_susp);
        if (dlock__etcd_alen(kvs) == 1) {
            st->suspended = 1;
            dlock__etcd_susp_fill(dlock__etcd_aget(kvs, 0), &st->susp);
        }
        json_object_put(kvs);
    }
    for (int i = 0; i < NKEYS && r->key[i] != NULL; i++) {
        got[i] = dlock__etcd_txn_kvs(reply, at[i]);
        if (dlock__etcd_alen(got[i]) == 1) {
            kv[i] = dlock__etcd_aget(got[i], 0);
            st->mod[i] = dlock__etcd_int(kv[i], "mod_revision");
        }
    }
    st->keep = keep_of(kv[K_KEEP]);
    st->doc = runs_doc(kv[K_RUNS]);
    if (st->doc != NULL && kv[K_OLD_RUNS] != NULL) {
        old = runs_doc(kv[K_OLD_RUNS]);
        rc = old == NULL ? dlock__enomem() : merge_docs(st->doc, old);
        json_object_put(old);
    }
    if (kv[K_START] != NULL && !start_read(kv[K_START], st))
        st->old_here = old_start_read(kv[K_START], st);
    if (kv[K_OLD_START] != NULL)
        old_start_read(kv[K_OLD_START], st);
    for (int i = 0; i < NKEYS; i++)
        json_object_put(got[i]);
    json_object_put(reply);
    if (rc == DLOCK_OK && st->doc == NULL)
        rc = dlock__enomem();
    if (rc != DLOCK_OK) {
        json_object_put(st->doc);
        st->doc = NULL;
    }
    return rc;
}

/* The earlier layout's start, as a stamp: its lease counted down at
 * least granted - left - 1 s (etcd truncates) since it was granted, a
 * moment before the start (one more second for that), so the start was
 * before D + 1 - that.  0: no such lease, no Date. */
static int old_start_at(struct etcd_store *es, const struct state *st,
                        int64_t *at)
{
    int64_t left, granted;
    int rc;

    *at = 0;
    if (st->old_lease == 0 || st->old_fence == 0 || st->date == 0)
        return DLOCK_OK;
    rc = dlock__etcd_lease_ttl(es, st->old_lease, &left, &granted);
    if (rc != DLOCK_OK)
        return rc;
    if (left >= 0 && granted > left)
        *at = st->date - (granted - left - 1) + 1;
    if (*at > st->date)
        *at = st->date;
    return DLOCK_OK;
}

/* The new runs document: RUNNING ones abandoned, ours first, keep in
 * all (1..ETCD_RUNS_KEPT_MAX). */
static json_object *with_new_run(json_object *doc, json_object *run,
                                 int64_t keep)
{
    json_object *old = json_object_object_get(doc, "runs"),
                *runs = json_object_new_array(), *out;
    size_t n = dlock__etcd_alen(old);

    if (runs == NULL || run == NULL) {
        json_object_put(runs);
        json_object_put(run);
        return NULL;
    }
    json_object_array_add(runs, run);
    for (size_t i = 0; i < n && (int64_t)i + 1 < keep; i++) {
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
    if (ok_readable(json_object_object_get(doc, "ok")))
        json_object_object_add(
            out, "ok", json_object_get(json_object_object_get(doc, "ok")));
    return out;
}

/* A start key's value: {"fence": F} or {"fence": F, "at": AT}. */
static char *start_value(int64_t fence, int64_t at)
{
    char *v = malloc(64);

    if (v == NULL)
        return NULL;
    if (at > 0)
        snprintf(v, 64, "{\"fence\":%lld,\"at\":%lld}", (long long)fence,
                 (long long)at);
    else
        snprintf(v, 64, "{\"fence\":%lld}", (long long)fence);
    return v;
}

/* What a write of the records puts: the runs document (NULL: left as it
 * is), the start (fence 0: left as it is); with move, the earlier
 * layout's keys that were read are deleted (what they held is in these). */
struct rec_write {
    const char *runs;
    int64_t keep; /* the setting to put (0: left as it is) */
    int64_t start_fence, start_at;
    int move;
    int move_runs;   /* the earlier layout's runs key only (keep_runs) */
    int unsuspended; /* only if the name is still not suspended */
};

/* One txn: if the lock key (lkey NULL: not compared) and every record
 * key are as st read them, write w.  DLOCK_OK with *won, and *rev the
 * revision it wrote at; or the failure. */
static int write_recs(struct etcd_store *es, const char *lkey, size_t llen,
                      int64_t create_rev, const struct recs *r,
                      const struct state *st, const struct rec_write *w,
                      int *won, int64_t *rev, int64_t *date)
{
    json_object *cmp = json_object_new_array(), *ops = json_object_new_array(),
                *body, *reply = NULL;
    char *sv =
        w->start_fence > 0 ? start_value(w->start_fence, w->start_at) : NULL;
    int rc;

    *won = 0;
    if (cmp == NULL || ops == NULL || (w->start_fence > 0 && sv == NULL)) {
        json_object_put(cmp);
        json_object_put(ops);
        free(sv);
        return dlock__enomem();
    }
    if (lkey != NULL)
        json_object_array_add(cmp,
                              dlock__etcd_cmp_create(lkey, llen, create_rev));
    for (int i = 0; i < NKEYS && r->key[i] != NULL; i++)
        json_object_array_add(
            cmp, st->mod[i] == 0
                     ? dlock__etcd_cmp_create(r->key[i], r->len[i], 0)
                     : dlock__etcd_cmp_mod(r->key[i], r->len[i], st->mod[i]));
    if (w->unsuspended)
        json_object_array_add(cmp,
                              dlock__etcd_cmp_create(r->susp, r->susp_len, 0));
    if (w->runs != NULL)
        json_object_array_add(
            ops,
            dlock__etcd_put_op(r->key[K_RUNS], r->len[K_RUNS], w->runs, 0));
    if (sv != NULL)
        json_object_array_add(
            ops, dlock__etcd_put_op(r->key[K_START], r->len[K_START], sv, 0));
    free(sv);
    if (w->keep > 0) {
        char kv[48];

        snprintf(kv, sizeof(kv), "{\"keep\":%lld}", (long long)w->keep);
        json_object_array_add(
            ops, dlock__etcd_put_op(r->key[K_KEEP], r->len[K_KEEP], kv, 0));
    }
    for (int i = K_OLD_RUNS; i <= K_OLD_START; i++)
        if (st->mod[i] != 0 && (w->move || (w->move_runs && i == K_OLD_RUNS)))
            json_object_array_add(ops,
                                  dlock__etcd_delete_op(r->key[i], r->len[i]));
    body = dlock__etcd_txn(cmp, ops, NULL);
    rc = body == NULL
             ? dlock__enomem()
             : dlock__etcd_post(es, "/v3/kv/txn", body, 0, &reply, NULL);
    json_object_put(body);
    if (rc == DLOCK_OK) {
        *won =
            json_object_get_boolean(json_object_object_get(reply, "succeeded"));
        if (rev != NULL)
            *rev = dlock__etcd_int(json_object_object_get(reply, "header"),
                                   "revision");
        if (date != NULL)
            *date = reply_date(reply);
    }
    json_object_put(reply);
    return rc;
}

/* Stamp our start (put at revision rev) with at, if nobody wrote it
 * since.  Best effort: a start left unstamped is stamped by the next
 * decision that sees it, which then skips. */
static void stamp(struct etcd_store *es, const struct recs *r, int64_t fence,
                  int64_t rev, int64_t at)
{
    json_object *cmp = json_object_new_array(), *ops = json_object_new_array();
    char *sv = start_value(fence, at);

    if (cmp == NULL || ops == NULL || sv == NULL || rev <= 0 || at <= 0) {
        json_object_put(cmp);
        json_object_put(ops);
        free(sv);
        return;
    }
    json_object_array_add(
        cmp, dlock__etcd_cmp_mod(r->key[K_START], r->len[K_START], rev));
    json_object_array_add(
        ops, dlock__etcd_put_op(r->key[K_START], r->len[K_START], sv, 0));
    free(sv);
    dlock__etcd_commit(es, dlock__etcd_txn(cmp, ops, NULL), 0, NULL);
    dlock__clearerr();
}

/* One decision on what st read: DLOCK_OK with *go, st's start made the
 * one to keep (the earlier layout's if later; one never stamped, stamped
 * with the read's Date), or a failure. */
static int decide(struct etcd_store *es, struct dlock_lock *lk,
                  const dlock_run_rule *rule, struct state *st, int *go,
                  dlock_run *last)
{
    json_object *runs = json_object_object_get(st->doc, "runs"),
                *ok = json_object_object_get(st->doc, "ok");
    int64_t old_at = 0, since;
    int rc;

    *go = 1;
    if (rule->period_ms > 0 && st->date == 0 &&
        (st->start_fence > 0 || st->old_fence > 0))
        return dlock__seterr(DLOCK_ESTORE,
                             "etcd's reply had no Date header: the period of "
                             "'%s' cannot be judged on the store's clock (a "
                             "proxy in between that drops it?) (%s)",
                             lk->name, es->url);
    /* The earlier layout's start, if it is the later one. */
    if (st->old_fence > 0) {
        rc = old_start_at(es, st, &old_at);
        if (rc != DLOCK_OK)
            return rc;
        if (old_at > 0 && (st->start_fence == 0 ||
                           (st->start_at > 0 && old_at > st->start_at))) {
            st->start_fence = st->start_fence > st->old_fence ? st->start_fence
                                                              : st->old_fence;
            st->start_at = old_at;
        }
    }
    if (dlock__etcd_alen(runs) > 0)
        run_fill(last, lk->name, dlock__etcd_aget(runs, 0));
    if (rule->once && ok_readable(ok)) {
        run_fill(last, lk->name, ok);
        *go = 0;
        return DLOCK_OK;
    }
    if (rule->period_ms <= 0 || st->start_fence == 0)
        return DLOCK_OK;
    if (st->start_at == 0) {
        /* Never stamped: it was before now + 1 s.  Stamp it now. */
        st->start_at = st->date;
        *go = 0;
        return DLOCK_OK;
    }
    since = (st->date - st->start_at - 2) * 1000;
    if (since < rule->period_ms / 2)
        *go = 0;
    return DLOCK_OK;
}

int dlock__etcd_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                          const dlock_run_rule *rule, const char *host,
                          int64_t pid, int *go, dlock_run *last)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct etcd_lock *el = lk->priv;
    struct recs r;
    int rc;

    if (el == NULL || el->key == NULL)
        return dlock__lost(lk, "it holds no etcd key");
    rc = recs_keys(es, lk->name, &r);
    if (rc != DLOCK_OK)
        return rc;
    for (int t = 0; t < TRIES; t++) {
        struct state st;
        struct rec_write w = {.move = 1, .unsuspended = 1};
        json_object *newdoc = NULL;
        int64_t rev = 0, date = 0, unstamped;
        int won = 0;

        memset(last, 0, sizeof(*last));
        rc = read_state(es, lk->name, el->key, el->key_len, &r, &st);
        if (rc != DLOCK_OK)
            break;
        if (st.lock_rev != el->create_rev) {
            json_object_put(st.doc);
            rc = dlock__lost(lk, "its etcd key is gone");
            break;
        }
        if (st.suspended) {
            /* Before any rule; nothing written (store.h). */
            json_object_put(st.doc);
            *go = 0;
            last->result = DLOCK_RUN_SUSPENDED;
            last->status = -1;
            last->start_ms = st.susp.since_ms;
            dlock__strlcpy(last->host, st.susp.by, sizeof(last->host));
            break;
        }
        unstamped = st.start_fence > 0 && st.start_at == 0;
        rc = decide(es, lk, rule, &st, go, last);
        if (rc != DLOCK_OK) {
            json_object_put(st.doc);
            break;
        }
        if (*go) {
            newdoc = with_new_run(
                st.doc, run_json(lk->fence, host, pid, st.date * 1000),
                st.keep);
            w.runs = newdoc != NULL ? json_object_to_json_string_ext(
                                          newdoc, JSON_C_TO_STRING_PLAIN)
                                    : NULL;
            w.start_fence = (int64_t)lk->fence; /* stamped once written */
            if (w.runs == NULL) {
                json_object_put(newdoc);
                json_object_put(st.doc);
                rc = dlock__enomem();
                break;
            }
        } else {
            /* A skip writes only to move the earlier layout's records,
             * or to stamp a start that never was. */
            if (st.mod[K_OLD_RUNS] == 0 && st.mod[K_OLD_START] == 0 &&
                !(st.old_here && st.start_at > 0) &&
                !(unstamped && st.start_at > 0)) {
                json_object_put(st.doc);
                break;
            }
            if (st.mod[K_OLD_RUNS] != 0)
                w.runs = json_object_to_json_string_ext(st.doc,
                                                        JSON_C_TO_STRING_PLAIN);
            if (st.start_at > 0) {
                w.start_fence = st.start_fence;
                w.start_at = st.start_at;
            }
        }
        rc = write_recs(es, el->key, el->key_len, el->create_rev, &r, &st, &w,
                        &won, &rev, &date);
        json_object_put(newdoc);
        json_object_put(st.doc);
        if (rc != DLOCK_OK && !*go) {
            /* The skip stands; its bookkeeping waits for the next one. */
            dlock__clearerr();
            rc = DLOCK_OK;
            break;
        }
        if (rc != DLOCK_OK)
            break;
        if (won) {
            /* The earlier layout's start lease is left to expire, never
             * revoked: the record names it, and etcd lets a put name any
             * lease, so it may be another holder's (listed by anyone),
             * whose key a revoke by us would delete while it runs
             * (adv43-etcd-old-start-lease). */
            if (*go)
                stamp(es, &r, (int64_t)lk->fence, rev, date);
            break;
        }
        /* Someone wrote in between (or the lock went): read again. */
        rc = dlock__seterr(DLOCK_EUNAVAIL,
                           "the run records of '%s' kept changing (%s)",
                           lk->name, es->url);
    }
    if (rc != DLOCK_OK)
        memset(last, 0, sizeof(*last));
    recs_free(&r);
    return rc;
}

int dlock__etcd_run_end(struct dlock_store *s, struct dlock_lock *lk,
                        int result, int status)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct recs r;
    int rc = recs_keys(es, lk->name, &r);

    if (rc != DLOCK_OK)
        return rc;
    for (int t = 0; t < TRIES; t++) {
        struct state st;
        struct rec_write w = {0};
        json_object *runs, *run = NULL;
        int won;
        size_t n;

        rc = read_state(es, lk->name, NULL, 0, &r, &st);
        if (rc != DLOCK_OK)
            break;
        runs = json_object_object_get(st.doc, "runs");
        n = dlock__etcd_alen(runs);
        for (size_t i = 0; i < n && run == NULL; i++)
            if ((uint64_t)rec_int(dlock__etcd_aget(runs, i), "fence", 0) ==
                lk->fence)
                run = dlock__etcd_aget(runs, i);
        if (run == NULL || st.mod[K_RUNS] == 0) {
            json_object_put(st.doc); /* dropped as too old: nothing to do */
            break;
        }
        json_object_object_add(run, "end",
                               json_object_new_int64(st.date * 1000));
        json_object_object_add(run, "result", json_object_new_int(result));
        json_object_object_add(run, "status", json_object_new_int(status));
        if (result == DLOCK_RUN_EXITED && status == 0)
            json_object_object_add(st.doc, "ok", json_object_get(run));
        w.runs = json_object_to_json_string_ext(st.doc, JSON_C_TO_STRING_PLAIN);
        rc = w.runs == NULL
                 ? dlock__enomem()
                 : write_recs(es, NULL, 0, 0, &r, &st, &w, &won, NULL, NULL);
        json_object_put(st.doc);
        if (rc != DLOCK_OK || won)
            break;
        rc = dlock__seterr(DLOCK_EUNAVAIL,
                           "the run records of '%s' kept changing (%s)",
                           lk->name, es->url);
    }
    recs_free(&r);
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
    struct recs r;
    struct state st;
    int rc = recs_keys(es, name, &r);

    if (rc != DLOCK_OK)
        return rc;
    rc = read_state(es, name, NULL, 0, &r, &st);
    recs_free(&r);
    if (rc != DLOCK_OK)
        return rc;
    rc = each_run(name, st.doc, max, cb, payload);
    json_object_put(st.doc);
    return rc;
}

/* In one txn: the setting n, and the runs over it dropped (oldest
 * first: the document is newest first), if nobody wrote the records
 * since they were read. */
int dlock__etcd_keep_runs(struct dlock_store *s, const char *name, unsigned n)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct recs r;
    int rc;

    if (n > ETCD_RUNS_KEPT_MAX)
        return dlock__seterr(DLOCK_EINVAL,
                             "the etcd store keeps 1..%d runs of a name, not "
                             "%u: its runs are one value that each run "
                             "rewrites whole, and more would near etcd's "
                             "request limit (docs/stores/etcd.md, Run records)",
                             ETCD_RUNS_KEPT_MAX, n);
    rc = recs_keys(es, name, &r);
    if (rc != DLOCK_OK)
        return rc;
    for (int t = 0; t < TRIES; t++) {
        struct state st;
        struct rec_write w = {.keep = n};
        json_object *runs;
        size_t have;
        int won = 0;

        rc = read_state(es, name, NULL, 0, &r, &st);
        if (rc != DLOCK_OK)
            break;
        runs = json_object_object_get(st.doc, "runs");
        have = dlock__etcd_alen(runs);
        if (have > n) {
            /* The earlier layout's runs are in st.doc: they go too, or
             * the next read would merge the dropped ones back. */
            json_object_array_del_idx(runs, n, have - n);
            w.move_runs = 1;
            w.runs =
                json_object_to_json_string_ext(st.doc, JSON_C_TO_STRING_PLAIN);
            if (w.runs == NULL) {
                json_object_put(st.doc);
                rc = dlock__enomem();
                break;
            }
        }
        rc = write_recs(es, NULL, 0, 0, &r, &st, &w, &won, NULL, NULL);
        json_object_put(st.doc);
        if (rc != DLOCK_OK || won)
            break;
        rc = dlock__seterr(DLOCK_EUNAVAIL,
                           "the run records of '%s' kept changing (%s)", name,
                           es->url);
    }
    recs_free(&r);
    return rc;
}

int dlock__etcd_kept_runs(struct dlock_store *s, const char *name, unsigned *n)
{
    struct etcd_store *es = (struct etcd_store *)s;
    json_object *reply = NULL, *kv = NULL;
    size_t len;
    char *key = rec_key(es, name, "keep", 0, &len);
    int rc;

    *n = DLOCK_RUNS_KEPT;
    if (key == NULL)
        return dlock__enomem();
    rc = dlock__etcd_get(es, key, len, &reply, &kv);
    free(key);
    if (rc == DLOCK_OK)
        *n = (unsigned)keep_of(kv);
    json_object_put(reply);
    return rc;
}
