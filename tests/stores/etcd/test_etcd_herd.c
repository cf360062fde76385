/*
 * test_etcd_herd.c - what one release costs among many etcd waiters, and
 * the order they get the lock in (issue 38: "FIFO waiting by revision
 * with no herd").
 *
 *     test_etcd_herd URL lock|sem
 *
 *   lock  20 waiters queue behind a holder, which lets go;
 *   sem   20 waiters queue behind the 2 holders of a semaphore of 2,
 *         which let go.
 *
 * Each waiter gets the lock in its order of arrival (its fence, the key's
 * create revision, is higher than the one before), and all of them
 * together made at most 3 KV calls each beyond their release: the
 * server counts (grpc_server_started_total of etcdserverpb.KV in
 * /metrics; a serial test, so that nobody else's calls are counted).
 * Measured: 2.00 (a lock: the re-read that admits it, and its record),
 * 2.10 (the semaphore: a release wakes the 2 waiters whose window holds
 * its key); a herd (the semaphore's waiters watching the whole name, as
 * they did) made 5.45, and more with more waiters.
 *
 * Every waiter has its own store handle (its own connections, as a
 * process of its own would), in a thread.  Arrival order is made certain
 * by a barrier on the queue itself: waiter i+1 starts once the server
 * holds i+1 keys of waiters under the name, not after a sleep.
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

enum { N = 20 };

static char base[256]; /* http://host:port of the URL's first member */
static char prefix[128];

struct buf {
    char *p;
    size_t n;
};

static size_t on_data(char *d, size_t sz, size_t nm, void *arg)
{
    struct buf *b = arg;
    char *p = realloc(b->p, b->n + sz * nm + 1);

    if (p == NULL)
        return 0;
    memcpy(p + b->n, d, sz * nm);
    b->p = p;
    b->n += sz * nm;
    p[b->n] = '\0';
    return sz * nm;
}

/* GET (body NULL) or POST path; the reply, malloc'd, or NULL. */
static char *http(const char *path, const char *body)
{
    CURL *h = curl_easy_init();
    struct buf b = {0};
    char u[512];
    CURLcode rc;

    if (h == NULL)
        return NULL;
    snprintf(u, sizeof(u), "%s%s", base, path);
    curl_easy_setopt(h, CURLOPT_URL, u);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
    if (body != NULL)
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    rc = curl_easy_perform(h);
    curl_easy_cleanup(h);
    if (rc != CURLE_OK) {
        fprintf(stderr, "  %s: %s\n", u, curl_easy_strerror(rc));
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* KV calls the member has started, of every client. */
static long long kv_calls(void)
{
    char *m = http("/metrics", NULL);
    long long total = -1;

    for (const char *l = m; l != NULL && *l; l = strchr(l, '\n')) {
        const char *v;

        if (*l == '\n')
            l++;
        if (strncmp(l, "grpc_server_started_total{", 26) != 0 ||
            strstr(l, "grpc_service=\"etcdserverpb.KV\"") == NULL)
            continue;
        v = strchr(l, '}');
        if (v != NULL)
            total = (total < 0 ? 0 : total) + (long long)strtod(v + 1, NULL);
    }
    free(m);
    return total;
}

/* The number of keys under "<name>/" (its holders and waiters). */
static long keys_of(const char *name)
{
    char k[300], end[300], kb[420], eb[420], body[1000], *r;
    json_object *o, *c;
    long n = -1;
    size_t len = (size_t)snprintf(k, sizeof(k), "%s%s/", prefix, name);

    memcpy(end, k, len);
    end[len - 1] = '/' + 1; /* the range of the prefix */
    EVP_EncodeBlock((unsigned char *)kb, (const unsigned char *)k, (int)len);
    EVP_EncodeBlock((unsigned char *)eb, (const unsigned char *)end, (int)len);
    snprintf(body, sizeof(body),
             "{\"key\":\"%s\",\"range_end\":\"%s\",\"count_only\":true}", kb,
             eb);
    r = http("/v3/kv/range", body);
    o = r != NULL ? json_tokener_parse(r) : NULL;
    if (o != NULL)
        n = json_object_object_get_ex(o, "count", &c)
                ? (long)json_object_get_int64(c)
                : 0; /* etcd leaves out a count of 0 */
    json_object_put(o);
    free(r);
    return n;
}

static int await_keys(const char *name, long n)
{
    int64_t end = now_ms() + 10000;

    while (now_ms() < end) {
        if (keys_of(name) >= n)
            return 1;
        sleep_ms(2);
    }
    return 0;
}

struct waiter {
    dlock_store *s;
    const char *name;
    unsigned limit;
    int rc;
    uint64_t fence;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    dlock_options o = DLOCK_OPTIONS_INIT;
    dlock_lock *l = NULL;

    o.wait_ms = 30000;
    o.ttl_ms = 30000;
    o.limit = w->limit;
    w->rc = dlock_acquire(&l, w->s, w->name, &o);
    if (w->rc == DLOCK_OK) {
        w->fence = dlock_fence(l);
        w->rc = dlock_release(l);
    }
    return NULL;
}

/* holders (1 or 2) hold name (a semaphore of holders), N wait, they let
 * go. */
static void herd(const char *url, const char *name, unsigned holders)
{
    dlock_store *s = NULL;
    dlock_lock *h[2] = {NULL, NULL};
    dlock_options o = DLOCK_OPTIONS_INIT;
    struct waiter w[N];
    pthread_t t[N];
    long long before, after, calls;
    int late = 0, started = 0;

    memset(w, 0, sizeof(w));
    o.ttl_ms = 30000;
    o.limit = holders;
    CHECK_RC(dlock_store_open(&s, url), DLOCK_OK);
    for (unsigned i = 0; i < holders; i++)
        CHECK_RC(dlock_acquire(&h[i], s, name, &o), DLOCK_OK);
    for (int i = 0; i < N; i++) {
        w[i].name = name;
        w[i].limit = holders;
        w[i].rc = -99;
        if (dlock_store_open(&w[i].s, url) != DLOCK_OK) {
            EXPECT(0);
            break;
        }
        if (pthread_create(&t[i], NULL, waiter_main, &w[i]) != 0) {
            dlock_store_close(w[i].s);
            EXPECT(0);
            break;
        }
        started++;
        if (!await_keys(name, (long)holders + i + 1)) {
            EXPECT(0);
            break;
        }
    }
    before = kv_calls();
    for (unsigned i = 0; i < holders; i++)
        EXPECT_RC(dlock_release(h[i]), DLOCK_OK);
    for (int i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        EXPECT_RC(w[i].rc, DLOCK_OK);
        dlock_store_close(w[i].s);
    }
    after = kv_calls();
    /* Served in the order they queued: the order of the grants is that
     * of their fences. */
    for (int i = 1; i < started; i++)
        late += w[i].fence <= w[i - 1].fence;
    /* Less the holders' and the waiters' releases (one txn each). */
    calls = after - before - (long long)holders - started;
    printf("  %d waiters behind %u holder(s): %.2f KV calls each beyond "
           "their release, %d served later than their turn\n",
           started, holders, (double)calls / (started ? started : 1), late);
    EXPECT(started == N);
    EXPECT(before >= 0 && after >= before);
    EXPECT(calls <= 3LL * N);
    EXPECT(late == 0);
    EXPECT(keys_of(name) == 0);
    dlock_store_close(s);
}

int main(int argc, char **argv)
{
    const char *url = argc == 3 ? argv[1] : NULL, *p, *q;
    char name[128];

    if (url == NULL || *url == '\0') {
        fprintf(stderr, "usage: test_etcd_herd URL lock|sem\n");
        if (getenv("CI") != NULL && strcmp(getenv("CI"), "true") == 0)
            return 1;
        return 77;
    }
    if (strncmp(url, "etcd://", 7) != 0) {
        fprintf(stderr, "test_etcd_herd: an etcd:// URL without TLS\n");
        return 1;
    }
    /* The first member, and ?prefix= if any. */
    p = url + 7;
    if ((q = strchr(p, '@')) != NULL)
        p = q + 1;
    snprintf(base, sizeof(base), "http://%.*s", (int)strcspn(p, ",/?"), p);
    if ((q = strstr(url, "prefix=")) != NULL)
        snprintf(prefix, sizeof(prefix), "%.*s", (int)strcspn(q + 7, "&"),
                 q + 7);
    snprintf(name, sizeof(name), "herd-%s-%ld-%ld", argv[2], (long)getpid(),
             (long)time(NULL));
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (strcmp(argv[2], "lock") == 0)
        herd(url, name, 1);
    else if (strcmp(argv[2], "sem") == 0)
        herd(url, name, 2);
    else {
        fprintf(stderr, "test_etcd_herd: lock or sem, not %s\n", argv[2]);
        return 2;
    }
    curl_global_cleanup();
    printf("%s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
