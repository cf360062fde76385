/*
 * handoff_etcd.c - etcd's hand-off floor (handoff.h), with bare libcurl
 * and json-c on the v3 JSON gateway, in the layout of etcd's own Mutex:
 * a contender puts NAME/<lease hex> on its lease if absent and reads the
 * name's keys by create revision, in one txn (the fence: its key's create
 * revision); first, it holds.  Else it watches the DELETE of the key just
 * before its own, from the read's revision + 1 (FIFO, no herd) and, woken,
 * takes the lock with one linearizable read of the queue that finds its
 * own key first: the event is a wake-up, never the lock (rule R1).  The
 * releaser's one request deletes its key.  Four requests a contended
 * cycle: txn, watch, read, delete.
 *
 * Why not a single key that every waiter watches and races to create
 * (the txn being the take): each delete wakes every waiter, one wins, the
 * others send a txn and a watch for nothing.  Measured so (8 contenders):
 * 12.81 requests a cycle and a hand-off p50 of 3.3 ms, above dlock's 2.6
 * ms: a herd, which the rules forbid, and no floor.
 *
 * etcd puts a watch whose start revision is not past the store's into
 * its "unsynced" group, which one loop catches up every 100 ms (etcd 3.4
 * mvcc/watchable_store.go, watch() and syncWatchersLoop()): a delete that
 * lands between the read and the watch's creation would wake the waiter
 * up to 100 ms late.  So the waiter's watch is dlock's (src/stores/etcd/
 * http.c, dlock__etcd_watch_fresh()): two watches from the store's
 * revision now, which the created headers show in step, and one from the
 * read's revision + 1 that misses nothing, in one request; a waiter
 * behind the holder reads again at once if the store moved in between.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/evp.h>

#include "bench.h"
#include "contract.h"
#include "handoff.h"

struct etcd_floor {
    struct bench_noop *n;
    struct cfloor_etcd *c;  /* n's client: requests */
    CURL *w;                /* the watch's, a connection per watch */
    char *txn, *read, *del; /* the bodies, built once */
    char *k64;              /* our key, base64 */
    char key[160];
};

/* The watch stream being read. */
struct watch_read {
    json_tokener *tok;
    long long rev; /* the read's revision */
    int front;     /* the key watched held at that read */
    int created;   /* created responses so far */
    long long made[3];
    int done; /* 1: an event (a delete) or the stream's end; 2: the
               * holder may have let go between the read and the watch */
};

static char *b64(const char *s)
{
    size_t n = strlen(s);
    char *b = malloc(4 * ((n + 2) / 3) + 1);

    if (b != NULL)
        EVP_EncodeBlock((unsigned char *)b, (const unsigned char *)s, (int)n);
    return b;
}

static long long get_ll(json_object *o, const char *k1, const char *k2)
{
    json_object *v;

    if (!json_object_object_get_ex(o, k1, &v))
        return 0;
    if (k2 != NULL && !json_object_object_get_ex(v, k2, &v))
        return 0;
    return strtoll(json_object_get_string(v), NULL, 10);
}

static size_t on_watch(char *d, size_t sz, size_t nm, void *arg)
{
    struct watch_read *r = arg;
    size_t len = sz * nm, off = 0;

    while (off < len && !r->done) {
        json_object *o, *res, *ev;

        if (d[off] == '\n' || d[off] == '\r' || d[off] == ' ') {
            off++;
            continue;
        }
        o = json_tokener_parse_ex(r->tok, d + off, (int)(len - off));
        off += (size_t)json_tokener_get_parse_end(r->tok);
        if (o == NULL) {
            if (json_tokener_get_error(r->tok) != json_tokener_continue)
                r->done = 1; /* garbage: look again */
            continue;
        }
        json_tokener_reset(r->tok);
        if (!json_object_object_get_ex(o, "result", &res) ||
            json_object_get_boolean(json_object_object_get(res, "canceled")))
            r->done = 1;
        else if (json_object_object_get_ex(res, "events", &ev) &&
                 json_object_array_length(ev) > 0)
            r->done = 1; /* DELETEs only: look */
        else if (json_object_get_boolean(
                     json_object_object_get(res, "created"))) {
            if (r->created < 3)
                r->made[r->created] = get_ll(res, "header", "revision");
            /* The two watches from "now" made: the first is in step from
             * made[1] if made[2] is the same, else the second most
             * likely from made[2].  Past our read, and a holder watched:
             * it may have let go in between, which only the watch from
             * our read sees, by the next catch-up: look now. */
            if (++r->created == 3 && r->front &&
                (r->made[2] > r->made[1] ? r->made[2] : r->made[1]) > r->rev)
                r->done = 2;
        }
        json_object_put(o);
    }
    return r->done ? 0 : len; /* 0: ends the transfer, and the watch */
}

/* Watch key k (base64) for its DELETE after revision rev (front: it
 * held then), as dlock does: two watches from the store's revision now
 * (etcd puts a watch from a revision not past its own in its "unsynced"
 * group, caught up only every 100 ms: mvcc/watchable_store.go) after one
 * from rev + 1 that misses nothing, in one request; 0 when woken (or the
 * holder may have gone), -1 on an error. */
static int watch_key(struct etcd_floor *f, const char *k, long long rev,
                     int front)
{
    char body[1200], url[400];
    struct watch_read r = {json_tokener_new(), rev, front, 0, {0, 0, 0}, 0};
    CURLcode rc;

    if (r.tok == NULL)
        return -1;
    snprintf(body, sizeof(body),
             "{\"create_request\":{\"key\":\"%s\",\"start_revision\":%lld,"
             "\"filters\":[\"NOPUT\"]}}\n"
             "{\"create_request\":{\"key\":\"%s\",\"filters\":[\"NOPUT\"]}}\n"
             "{\"create_request\":{\"key\":\"%s\",\"filters\":[\"NOPUT\"]}}",
             k, rev + 1, k, k);
    snprintf(url, sizeof(url), "%s/v3/watch", f->c->base);
    curl_easy_setopt(f->w, CURLOPT_URL, url);
    curl_easy_setopt(f->w, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(f->w, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(f->w, CURLOPT_WRITEDATA, &r);
    rc = curl_easy_perform(f->w);
    json_tokener_free(r.tok);
    /* A transfer we ended is the watch's end; a timeout, look again. */
    if (rc == CURLE_OK || rc == CURLE_WRITE_ERROR ||
        rc == CURLE_OPERATION_TIMEDOUT)
        return 0;
    fprintf(stderr, "dlock-bench: hand-off floor: etcd watch: %s\n",
            curl_easy_strerror(rc));
    return -1;
}

static void *etcd_open(const char *url, const char *name)
{
    struct etcd_floor *f = calloc(1, sizeof(*f));
    json_object *r;
    char *k = NULL, *v = NULL, *p = NULL, *e = NULL, buf[300];
    size_t tl;

    if (f == NULL || bench_noop_open(&f->n, url) != 0) {
        free(f);
        return NULL;
    }
    f->c = bench_noop_conn(f->n);
    /* A lease of its own, 600 s, never kept alive: longer than a run
     * (bench_noop_close() revokes it). */
    if (cfloor_etcd_req(f->c, "/v3/lease/grant", "{\"TTL\":600}") != 0 ||
        (r = json_tokener_parse(f->c->buf)) == NULL)
        goto fail;
    f->c->lease = get_ll(r, "ID", NULL);
    json_object_put(r);
    /* NAME "/" <lease hex>: etcd's own Mutex layout; the name's keys by
     * create revision are its queue. */
    snprintf(buf, sizeof(buf), "dlock-handoff-floor/%s/", name);
    p = b64(buf);
    buf[strlen(buf) - 1] = '0'; /* the range's end: '/' + 1 */
    e = b64(buf);
    snprintf(f->key, sizeof(f->key), "dlock-handoff-floor/%s/%llx", name,
             (unsigned long long)f->c->lease);
    k = b64(f->key);
    v = b64("holder");
    if (f->c->lease == 0 || k == NULL || v == NULL || p == NULL || e == NULL)
        goto fail;
    f->k64 = k;
    tl = 2 * strlen(k) + strlen(v) + 2 * strlen(p) + 2 * strlen(e) + 600;
    if ((f->txn = malloc(tl)) == NULL || (f->read = malloc(tl)) == NULL ||
        (f->del = malloc(tl)) == NULL)
        goto fail;
    /* The queue, by create revision, keys only. */
    snprintf(f->read, tl,
             "{\"key\":\"%s\",\"range_end\":\"%s\",\"sort_order\":"
             "\"ASCEND\",\"sort_target\":\"CREATE\",\"keys_only\":true}",
             p, e);
    snprintf(f->txn, tl,
             "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\","
             "\"result\":\"EQUAL\",\"create_revision\":0}],"
             "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\","
             "\"lease\":%lld}},{\"request_range\":%s}],"
             "\"failure\":[{\"request_range\":%s}]}",
             k, k, v, f->c->lease, f->read, f->read);
    snprintf(f->del, tl, "{\"key\":\"%s\"}", k);
    f->w = curl_easy_init();
    if (f->w == NULL)
        goto fail;
    curl_easy_setopt(f->w, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(f->w, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(f->w, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(f->w, CURLOPT_PROXY, "");
    curl_easy_setopt(f->w, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(f->w, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(f->w, CURLOPT_WRITEFUNCTION, on_watch);
    curl_easy_setopt(f->w, CURLOPT_HTTPHEADER, f->c->hdrs);
    free(v);
    free(p);
    free(e);
    return f;
fail:
    fprintf(stderr, "dlock-bench: hand-off floor: etcd open failed\n");
    free(k);
    free(v);
    free(p);
    free(e);
    free(f->txn);
    free(f->read);
    free(f->del);
    if (f->w != NULL)
        curl_easy_cleanup(f->w);
    bench_noop_close(f->n);
    free(f);
    return NULL;
}

/* Where our key stands in the queue kvs (keys by create revision): 0
 * first (held; *fence its create revision), 1 behind *pred (base64, the
 * key before ours), -1 not there. */
static int stand(struct etcd_floor *f, json_object *kvs, long long *fence,
                 const char **pred, int *front)
{
    size_t n = kvs != NULL ? json_object_array_length(kvs) : 0;

    for (size_t i = 0; i < n; i++) {
        json_object *kv = json_object_array_get_idx(kvs, i), *k;

        if (!json_object_object_get_ex(kv, "key", &k) ||
            strcmp(json_object_get_string(k), f->k64) != 0)
            continue;
        if (i == 0) {
            *fence = get_ll(kv, "create_revision", NULL);
            return 0;
        }
        json_object_object_get_ex(json_object_array_get_idx(kvs, i - 1), "key",
                                  &k);
        *pred = json_object_get_string(k);
        *front = i == 1;
        return 1;
    }
    return -1;
}

static int etcd_acquire(void *p)
{
    struct etcd_floor *f = p;
    const char *body = f->txn, *path = "/v3/kv/txn";

    for (;;) {
        json_object *r, *kvs = NULL;
        const char *pred = NULL;
        long long rev, fence = 0;
        char pk[300];
        int at, front = 0;

        if (cfloor_etcd_req(f->c, path, body) != 0 ||
            (r = json_tokener_parse(f->c->buf)) == NULL)
            return -1;
        rev = get_ll(r, "header", "revision");
        if (body == f->txn) { /* the txn's range: its last response */
            json_object *rs = json_object_object_get(r, "responses");
            size_t n = rs != NULL ? json_object_array_length(rs) : 0;

            if (n > 0)
                json_object_object_get_ex(
                    json_object_object_get(json_object_array_get_idx(rs, n - 1),
                                           "response_range"),
                    "kvs", &kvs);
        } else {
            json_object_object_get_ex(r, "kvs", &kvs);
        }
        at = stand(f, kvs, &fence, &pred, &front);
        if (at == 1)
            snprintf(pk, sizeof(pk), "%s", pred);
        json_object_put(r);
        if (at == 0 && fence > 0)
            return 0;
        if (rev <= 0 || (at < 0 && body == f->txn))
            return -1; /* the txn did not list the key it put */
        if (at < 0) {  /* our key is gone: queue again */
            body = f->txn;
            path = "/v3/kv/txn";
            continue;
        }
        /* Behind pk: its DELETE wakes us, and we look (never "yours"). */
        if (watch_key(f, pk, rev, front) != 0)
            return -1;
        body = f->read;
        path = "/v3/kv/range";
    }
}

static int etcd_release(void *p)
{
    struct etcd_floor *f = p;
    json_object *r;
    long long deleted;

    if (cfloor_etcd_req(f->c, "/v3/kv/deleterange", f->del) != 0 ||
        (r = json_tokener_parse(f->c->buf)) == NULL)
        return -1;
    deleted = get_ll(r, "deleted", NULL);
    json_object_put(r);
    return deleted == 1 ? 0 : -1;
}

static void etcd_close(void *p)
{
    struct etcd_floor *f = p;

    curl_easy_cleanup(f->w);
    free(f->txn);
    free(f->read);
    free(f->del);
    free(f->k64);
    bench_noop_close(f->n); /* revokes the lease */
    free(f);
}

const struct handoff_ops handoff_floor_etcd = {
    "a txn put-if-absent of NAME/<lease> + the queue read (fence: its "
    "create revision); a watch of the key before ours (dlock's: two from "
    "now, one from the read), woken: a read of the queue; a deleterange",
    NULL,
    etcd_open,
    etcd_acquire,
    etcd_release,
    etcd_close,
    NULL};
