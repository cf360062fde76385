/*
 * suspend.c - a job's suspension on the etcd store (store.h: suspend,
 * resume, suspension, suspensions; run_begin's check is in runs.c).
 *
 * THE RECORD of NAME = FIRST [/REST] is one key, placed as the run
 * records are (runs.c): beside every name's queue, never in one, so no
 * peer that locks a name (etcdctl lock, concurrency.Mutex) finds it in
 * its range, while a role granted on a prefix of FIRST covers it:
 *   P FIRST \xff suspend [/REST]   JSON {"by": TEXT, "since_ms": MS,
 *                                  "reason": TEXT ("" for none)}
 *
 * THE CLOCK is run_begin's (runs.c): the HTTP Date header of etcd's
 * replies, the answering member's wall clock in whole seconds.  A value
 * holds its time when it is put, and the Date of a reply comes after it,
 * so since_ms is the Date of the read before the put (as a run's
 * start_ms), times 1000; 0 when the reply had none (a proxy that drops
 * it: the suspension still stands, its time is unknown).
 *
 * suspend is that read (a record there: reported, one round trip), then
 * one txn: if the key's create revision is 0 (absent), put the record;
 * else read it (someone suspended in between: reported, left as it is).
 * resume is one deleterange with prev_kv: what it deleted is what it
 * reports.  suspension is one linearizable read; suspensions a scan of
 * the keys under the prefix (exactly the suspension keys when it has a
 * '/'), then their values in txns of reads.
 *
 * A record is read as anyone who can write the prefix may have left it:
 * not JSON, a field of another type, a text too long or with a NUL in
 * it shows as "?" (a time that is no time as 0); the core vets the rest
 * (UTF-8, control characters).  It still suspends.
 */
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "etcd.h"
#include "names.h"
#include "strutil.h"

#define SUSP_WHAT "suspend"
#define SUSP_WHAT_LEN (sizeof(SUSP_WHAT) - 1)

char *dlock__etcd_susp_key(const struct etcd_store *es, const char *name,
                           size_t *len)
{
    size_t n = strlen(name), o = es->prefix_len, f = strcspn(name, "/");
    char *k = malloc(o + n + SUSP_WHAT_LEN + 2);

    if (k == NULL)
        return NULL;
    memcpy(k, es->prefix, o);
    memcpy(k + o, name, f);
    k[o + f] = '\xff';
    memcpy(k + o + f + 1, SUSP_WHAT, SUSP_WHAT_LEN);
    memcpy(k + o + f + 1 + SUSP_WHAT_LEN, name + f, n - f + 1);
    *len = o + n + 1 + SUSP_WHAT_LEN;
    return k;
}

/* Text field f of o into dst (size bytes); "?" for what dlock cannot
 * have written there. */
static void text_field(json_object *o, const char *f, char *dst, size_t size)
{
    json_object *v = NULL;
    const char *s;
    size_t n;

    if (!json_object_object_get_ex(o, f, &v) ||
        !json_object_is_type(v, json_type_string)) {
        dlock__strlcpy(dst, "?", size);
        return;
    }
    s = json_object_get_string(v);
    n = (size_t)json_object_get_string_len(v);
    if (s == NULL || n >= size || memchr(s, '\0', n) != NULL) {
        dlock__strlcpy(dst, "?", size);
        return;
    }
    memcpy(dst, s, n);
    dst[n] = '\0';
}

void dlock__etcd_susp_fill(json_object *kv, dlock_suspension *cur)
{
    size_t n = 0;
    char *v = dlock__etcd_unb64(kv, "value", &n);
    json_object *o = v != NULL ? dlock__etcd_parse(v, n, NULL, NULL) : NULL,
                *t = NULL;

    free(v);
    if (!json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        o = NULL;
    }
    text_field(o, "by", cur->by, sizeof(cur->by));
    text_field(o, "reason", cur->reason, sizeof(cur->reason));
    cur->since_ms = 0;
    if (o != NULL && json_object_object_get_ex(o, "since_ms", &t) &&
        json_object_is_type(t, json_type_int)) {
        int64_t ms = json_object_get_int64(t);

        cur->since_ms = ms > 0 && ms < ETCD_DATE_MAX * 1000 ? ms : 0;
    }
    json_object_put(o);
}

/* The record's value: {"by", "since_ms", "reason"} (malloc'd). */
static char *record(const char *by, int64_t since_ms, const char *reason)
{
    json_object *o = json_object_new_object();
    char *s = NULL;

    if (o == NULL)
        return NULL;
    json_object_object_add(o, "by", json_object_new_string(by));
    json_object_object_add(o, "since_ms", json_object_new_int64(since_ms));
    json_object_object_add(o, "reason", json_object_new_string(reason));
    s = dlock__strdup(
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return s;
}

int dlock__etcd_suspend(struct dlock_store *s, const char *name, const char *by,
                        const char *reason, int *was, dlock_suspension *cur)
{
    struct etcd_store *es = (struct etcd_store *)s;
    json_object *reply = NULL, *kv = NULL, *kvs, *body;
    size_t klen;
    char *key = dlock__etcd_susp_key(es, name, &klen), *val;
    int64_t date;
    int rc;

    *was = 0;
    if (key == NULL)
        return dlock__enomem();
    rc = dlock__etcd_get(es, key, klen, &reply, &kv);
    if (rc == DLOCK_OK && kv != NULL) {
        *was = 1;
        dlock__etcd_susp_fill(kv, cur);
    }
    date = dlock__etcd_int(reply, ETCD_REPLY_DATE);
    json_object_put(reply);
    reply = NULL;
    if (rc != DLOCK_OK || *was) {
        free(key);
        return rc;
    }
    val =
        record(by, date > 0 && date < ETCD_DATE_MAX ? date * 1000 : 0, reason);
    body = val != NULL ? dlock__etcd_body_suspend(key, klen, val) : NULL;
    free(val);
    /* Not sent again elsewhere: a put that landed unseen would read
     * back as someone else's suspension. */
    rc = body == NULL
             ? dlock__enomem()
             : dlock__etcd_post(es, "/v3/kv/txn", body, 0, &reply, NULL);
    json_object_put(body);
    free(key);
    if (rc != DLOCK_OK)
        return rc;
    if (!json_object_get_boolean(json_object_object_get(reply, "succeeded"))) {
        /* Suspended in between: its record, read in the same txn. */
        kvs = dlock__etcd_txn_kvs(reply, 0);
        if (dlock__etcd_alen(kvs) == 1) {
            *was = 1;
            dlock__etcd_susp_fill(dlock__etcd_aget(kvs, 0), cur);
        } else {
            rc = dlock__seterr(DLOCK_ESTORE,
                               "etcd neither put the suspension of '%s' nor "
                               "showed the one there (%s)",
                               name, es->url);
        }
        json_object_put(kvs);
    }
    json_object_put(reply);
    return rc;
}

int dlock__etcd_resume(struct dlock_store *s, const char *name, int *was,
                       dlock_suspension *cur)
{
    struct etcd_store *es = (struct etcd_store *)s;
    json_object *reply = NULL, *prev = NULL, *body;
    size_t klen;
    char *key = dlock__etcd_susp_key(es, name, &klen);
    int rc;

    *was = 0;
    if (key == NULL)
        return dlock__enomem();
    body = dlock__etcd_body_resume(key, klen);
    free(key);
    /* Not sent again: a second delete would find nothing and say so. */
    rc = body == NULL ? dlock__enomem()
                      : dlock__etcd_post(es, "/v3/kv/deleterange", body, 0,
                                         &reply, NULL);
    json_object_put(body);
    if (rc == DLOCK_OK && json_object_object_get_ex(reply, "prev_kvs", &prev) &&
        dlock__etcd_alen(prev) >= 1) {
        *was = 1;
        dlock__etcd_susp_fill(dlock__etcd_aget(prev, 0), cur);
    }
    json_object_put(reply);
    return rc;
}

int dlock__etcd_suspension(struct dlock_store *s, const char *name, int *was,
                           dlock_suspension *cur)
{
    struct etcd_store *es = (struct etcd_store *)s;
    json_object *reply = NULL, *kv = NULL;
    size_t klen;
    char *key = dlock__etcd_susp_key(es, name, &klen);
    int rc;

    *was = 0;
    if (key == NULL)
        return dlock__enomem();
    rc = dlock__etcd_get(es, key, klen, &reply, &kv);
    free(key);
    if (rc == DLOCK_OK && kv != NULL) {
        *was = 1;
        dlock__etcd_susp_fill(kv, cur);
    }
    json_object_put(reply);
    return rc;
}

/* The suspension keys a scan found, and the names they are of. */
struct susp_scan {
    struct etcd_store *es;
    const char *prefix;
    size_t n, cap;
    char **key;
    size_t *klen;
    char (*name)[DLOCK_NAME_MAX + 1];
};

/* P FIRST \xff suspend [/REST] of a valid name under the prefix: kept. */
static int susp_key_seen(const char *key, size_t klen, void *arg)
{
    struct susp_scan *ss = arg;
    size_t off = ss->es->prefix_len, f, rest, len;
    const char *k = key + off, *ff;
    char name[DLOCK_NAME_MAX + 1];

    if (klen <= off || (ff = memchr(k, '\xff', klen - off)) == NULL)
        return DLOCK_OK;
    f = (size_t)(ff - k);
    rest = klen - off - f - 1;
    if (rest < SUSP_WHAT_LEN || memcmp(ff + 1, SUSP_WHAT, SUSP_WHAT_LEN) != 0 ||
        (rest > SUSP_WHAT_LEN &&
         (ff[1 + SUSP_WHAT_LEN] != '/' || memchr(k, '/', f) != NULL)))
        return DLOCK_OK; /* a run record, or not dlock's */
    len = f + rest - SUSP_WHAT_LEN;
    if (len > DLOCK_NAME_MAX)
        return DLOCK_OK;
    memcpy(name, k, f);
    memcpy(name + f, ff + 1 + SUSP_WHAT_LEN, rest - SUSP_WHAT_LEN);
    name[len] = '\0';
    if (memchr(name, '\0', len) != NULL ||
        dlock__check_name(name, len) != DLOCK_OK ||
        strncmp(name, ss->prefix, strlen(ss->prefix)) != 0) {
        dlock__clearerr();
        return DLOCK_OK;
    }
    if (ss->n == ss->cap) {
        size_t c = ss->cap ? ss->cap * 2 : 16;
        char **kk = realloc(ss->key, c * sizeof(*kk));
        size_t *kl;
        char(*nn)[DLOCK_NAME_MAX + 1];

        if (kk == NULL)
            return dlock__enomem();
        ss->key = kk;
        kl = realloc(ss->klen, c * sizeof(*kl));
        if (kl == NULL)
            return dlock__enomem();
        ss->klen = kl;
        nn = realloc(ss->name, c * sizeof(*nn));
        if (nn == NULL)
            return dlock__enomem();
        ss->name = nn;
        ss->cap = c;
    }
    ss->key[ss->n] = malloc(klen + 1);
    if (ss->key[ss->n] == NULL)
        return dlock__enomem();
    memcpy(ss->key[ss->n], key, klen);
    ss->key[ss->n][klen] = '\0';
    ss->klen[ss->n] = klen;
    memcpy(ss->name[ss->n], name, len + 1);
    ss->n++;
    return DLOCK_OK;
}

static void susp_scan_free(struct susp_scan *ss)
{
    for (size_t i = 0; i < ss->n; i++)
        free(ss->key[i]);
    free(ss->key);
    free(ss->klen);
    free(ss->name);
}

/* Read keys [from, to) of ss in one txn and pass each still there to
 * cb. */
static int read_batch(struct susp_scan *ss, size_t from, size_t to,
                      dlock_suspension_cb cb, void *payload)
{
    json_object *ops = json_object_new_array(), *body, *reply = NULL;
    int rc;

    if (ops == NULL)
        return dlock__enomem();
    for (size_t i = from; i < to; i++)
        json_object_array_add(
            ops, dlock__etcd_range_op(ss->key[i], ss->klen[i], NULL, 0, 0, 0));
    body = dlock__etcd_txn(NULL, ops, NULL);
    rc = body == NULL ? dlock__enomem()
                      : dlock__etcd_post(ss->es, "/v3/kv/txn", body,
                                         ETCD_RETRY_SAFE, &reply, NULL);
    json_object_put(body);
    for (size_t i = from; rc == DLOCK_OK && i < to; i++) {
        json_object *kvs = dlock__etcd_txn_kvs(reply, i - from);
        dlock_suspension cur;

        if (dlock__etcd_alen(kvs) == 1) {
            memset(&cur, 0, sizeof(cur));
            memcpy(cur.name, ss->name[i], sizeof(cur.name));
            dlock__etcd_susp_fill(dlock__etcd_aget(kvs, 0), &cur);
            rc = cb(&cur, payload);
        }
        json_object_put(kvs);
    }
    json_object_put(reply);
    return rc;
}

int dlock__etcd_suspensions(struct dlock_store *s, const char *prefix,
                            dlock_suspension_cb cb, void *payload)
{
    struct etcd_store *es = (struct etcd_store *)s;
    struct susp_scan ss = {.es = es, .prefix = prefix};
    size_t f = strcspn(prefix, "/"), n = strlen(prefix);
    /* The keys of names under a prefix with a '/' are exactly those
     * under P FIRST \xff suspend /REST...; without one, every key of a
     * name under it starts with P prefix (a longer FIRST). */
    char *scan = malloc(n + SUSP_WHAT_LEN + 2);
    int rc;

    if (scan == NULL)
        return dlock__enomem();
    if (prefix[f] == '/') {
        memcpy(scan, prefix, f);
        scan[f] = '\xff';
        memcpy(scan + f + 1, SUSP_WHAT, SUSP_WHAT_LEN);
        memcpy(scan + f + 1 + SUSP_WHAT_LEN, prefix + f, n - f + 1);
    } else {
        memcpy(scan, prefix, n + 1);
    }
    rc = dlock__etcd_scan_keys(es, scan, susp_key_seen, &ss);
    free(scan);
    /* In no set order (dlock.h); a key gone since the scan is passed
     * over. */
    for (size_t i = 0; rc == DLOCK_OK && i < ss.n; i += ETCD_TXN_OPS)
        rc = read_batch(&ss, i,
                        i + ETCD_TXN_OPS < ss.n ? i + ETCD_TXN_OPS : ss.n, cb,
                        payload);
    susp_scan_free(&ss);
    return rc;
}
