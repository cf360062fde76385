/*
 * http.c - the etcd store's transport: one POST to etcd's v3 JSON gateway
 * with libcurl, within a deadline, the reply parsed by json-c.
 *
 * One libcurl easy handle is one keep-alive HTTP/1.1 connection; idle
 * ones wait in the handle's list.  Endpoints are tried in turn from the
 * one that answered last, each for its share of the deadline (a member
 * that accepts and never answers must not take all of it): a request
 * goes to the next one only when it cannot have reached the server (no
 * connection) or is safe to send twice (reads, keepalives); a write
 * whose fate is unknown is an error, which the caller treats as such,
 * and the next call starts at the next endpoint.  Every reply's header must
 * name the cluster the first reply named: a member of another cluster is not
 * believed.  etcd's errors ({"error", "code"}) become DLOCK_* codes:
 * Unavailable, DeadlineExceeded, Canceled and Aborted (no leader, a
 * member cut off from the quorum or shutting down), and any HTTP 408 or
 * 5xx, are DLOCK_EUNAVAIL and move on to the next endpoint;
 * an expired auth token is renewed once a call (never by the login
 * itself); the rest are DLOCK_ESTORE.  A server's error text is shown
 * scrubbed, and when the URL holds a password only if it is one of etcd's
 * own messages (server_text()).
 *
 * The watch (dlock__etcd_watch) is a streamed POST on a connection of its
 * own, driven by a curl multi handle so that it also wakes on the
 * acquire's cancel; closing the connection ends the watch on the server.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cancel.h"
#include "clock.h"
#include "errors.h"
#include "etcd.h"
#include "iobound.h"
#include "strutil.h"
#include "url.h"

#define MAX_IDLE 8

/* gRPC status codes etcd answers with. */
enum {
    GRPC_CANCELED = 1,
    GRPC_DEADLINE = 4,
    GRPC_ABORTED = 10,
    GRPC_NOT_FOUND = 5,
    GRPC_UNAVAILABLE = 14,
    GRPC_UNAUTHENTICATED = 16
};

struct reply_buf {
    char *p;
    size_t n, cap;
    int over; /* more than ETCD_REPLY_MAX */
};

static size_t on_data(char *d, size_t sz, size_t nm, void *arg)
{
    struct reply_buf *b = arg;
    size_t len = sz * nm;

    if (b->n + len + 1 > ETCD_REPLY_MAX) {
        b->over = 1;
        return 0; /* libcurl stops: CURLE_WRITE_ERROR */
    }
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        char *p;

        while (cap < b->n + len + 1)
            cap *= 2;
        p = realloc(b->p, cap);
        if (p == NULL)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, len);
    b->n += len;
    b->p[b->n] = '\0';
    return len;
}

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

int dlock__etcd_http_init(struct etcd_store *es)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;

    (void)es;
    /* curl_global_init is not thread-safe before 7.84: once, here. */
    pthread_once(&once, global_init);
    return DLOCK_OK;
}

void dlock__etcd_http_free(struct etcd_store *es)
{
    while (es->idle != NULL) {
        struct etcd_conn *c = es->idle;

        es->idle = c->next;
        curl_easy_cleanup(c->curl);
        free(c);
    }
    es->nidle = 0;
}

static CURL *conn_get(struct etcd_store *es)
{
    struct etcd_conn *c;
    CURL *h;

    pthread_mutex_lock(&es->mu);
    c = es->idle;
    if (c != NULL) {
        es->idle = c->next;
        es->nidle--;
    }
    pthread_mutex_unlock(&es->mu);
    if (c == NULL)
        return curl_easy_init();
    h = c->curl;
    free(c);
    return h;
}

static void conn_put(struct etcd_store *es, CURL *h)
{
    struct etcd_conn *c = malloc(sizeof(*c));

    pthread_mutex_lock(&es->mu);
    if (c != NULL && es->nidle < MAX_IDLE) {
        c->curl = h;
        c->next = es->idle;
        es->idle = c;
        es->nidle++;
        h = NULL;
        c = NULL;
    }
    pthread_mutex_unlock(&es->mu);
    free(c);
    if (h != NULL)
        curl_easy_cleanup(h);
}

/* The options every request sets.  TLS verification is always on. */
static void setup(struct etcd_store *es, CURL *h, const char *url,
                  struct curl_slist *hdrs, struct reply_buf *b, int64_t left_ms,
                  char *errbuf)
{
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, es->tls ? "https" : "http");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)(es->connect_timeout_ms < left_ms
                                ? es->connect_timeout_ms
                                : left_ms));
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    /* No proxy from the environment: the URL says where the store is. */
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    if (es->tls) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
        if (es->cacert != NULL)
            curl_easy_setopt(h, CURLOPT_CAINFO, es->cacert);
        if (es->cert != NULL)
            curl_easy_setopt(h, CURLOPT_SSLCERT, es->cert);
        if (es->key != NULL) {
            curl_easy_setopt(h, CURLOPT_SSLKEY, es->key);
            /* A pass phrase that unlocks nothing: libcurl then gives
             * OpenSSL its own callback, never the prompting default (open
             * refused an encrypted key; this holds if the file changes
             * later). */
            curl_easy_setopt(h, CURLOPT_KEYPASSWD, "");
        }
    }
}

static struct curl_slist *headers(struct etcd_store *es)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: "
                                                   "application/json");
    char *auth = NULL;

    pthread_mutex_lock(&es->mu);
    if (es->token != NULL) {
        size_t n = strlen(es->token) + 32;

        auth = malloc(n);
        if (auth != NULL)
            snprintf(auth, n, "Authorization: %s", es->token);
    }
    pthread_mutex_unlock(&es->mu);
    if (auth != NULL && h != NULL) {
        struct curl_slist *t = curl_slist_append(h, auth);

        if (t == NULL) {
            curl_slist_free_all(h);
            h = NULL;
        } else {
            h = t;
        }
    }
    free(auth);
    return h;
}

/* Check the reply's header: the cluster must be the one we met first. */
static int check_header(struct etcd_store *es, json_object *reply, int ep)
{
    json_object *hdr = NULL, *res = NULL;
    uint64_t id;

    if (!json_object_object_get_ex(reply, "header", &hdr) &&
        json_object_object_get_ex(reply, "result", &res))
        json_object_object_get_ex(res, "header", &hdr);
    if (hdr == NULL || !json_object_is_type(hdr, json_type_object))
        return dlock__seterr(DLOCK_ESTORE,
                             "etcd at %s answered without a header: not "
                             "an etcd v3 gateway? (%s)",
                             es->endpoints[ep], es->url);
    id = (uint64_t)dlock__etcd_int(hdr, "cluster_id");
    pthread_mutex_lock(&es->mu);
    if (es->cluster_id == 0)
        es->cluster_id = id;
    else if (id != es->cluster_id) {
        pthread_mutex_unlock(&es->mu);
        return dlock__seterr(DLOCK_EUNAVAIL,
                             "etcd at %s belongs to another cluster (id %llu, "
                             "not %llu) in %s",
                             es->endpoints[ep], (unsigned long long)id,
                             (unsigned long long)es->cluster_id, es->url);
    }
    pthread_mutex_unlock(&es->mu);
    return DLOCK_OK;
}

/* etcd's own error messages (api/v3rpc/rpctypes/error.go, and the
 * gateway's context errors): fixed words that hold nothing a client sent. */
static const char *const etcd_words[] = {
    "etcdserver: key is not provided",
    "etcdserver: key not found",
    "etcdserver: value is provided",
    "etcdserver: lease is provided",
    "etcdserver: ttl is 0",
    "etcdserver: too many operations in txn request",
    "etcdserver: duplicate key given in txn request",
    "etcdserver: mvcc: required revision has been compacted",
    "etcdserver: mvcc: required revision is a future revision",
    "etcdserver: mvcc: database space exceeded",
    "etcdserver: requested lease not found",
    "etcdserver: lease already exists",
    "etcdserver: too large lease TTL",
    "etcdserver: request is too large",
    "etcdserver: too many requests",
    "etcdserver: root user does not exist",
    "etcdserver: root user does not have root role",
    "etcdserver: user name is empty",
    "etcdserver: user name not found",
    "etcdserver: role name not found",
    "etcdserver: authentication failed, invalid user ID or password",
    "etcdserver: permission denied",
    "etcdserver: role is not granted to the user",
    "etcdserver: permission is not granted to the role",
    "etcdserver: authentication is not enabled",
    "etcdserver: invalid auth token",
    "etcdserver: invalid auth management",
    "etcdserver: revision of auth store is old",
    "etcdserver: no leader",
    "etcdserver: not leader",
    "etcdserver: leader changed",
    "etcdserver: not capable",
    "etcdserver: server stopped",
    "etcdserver: request timed out",
    "etcdserver: request timed out, possibly due to previous leader failure",
    "etcdserver: request timed out, possibly due to connection lost",
    "etcdserver: request timed out, waiting for the applied index took too "
    "long",
    "etcdserver: unhealthy cluster",
    "etcdserver: corrupt cluster",
    "etcdserver: rpc not supported for learner",
    "etcdserver: request cancelled",
    "etcdserver: watch canceled",
    "context deadline exceeded",
    "context canceled",
    NULL};

/* What a server's error text may show, into dst[cap].  Without a secret
 * in the URL, the text scrubbed (there is nothing of ours to echo).  With
 * one, only etcd's own fixed words: a gateway that got the password (the
 * login sends it) may echo it cut (a half, a third, one letter a
 * message), reversed or encoded (base64), which no scrubber recognises;
 * so its own words are never quoted, only the code and status are. */
static void server_text(const struct etcd_store *es, char *dst, size_t cap,
                        const char *said)
{
    /* The password itself too: without memory for the list of secrets,
     * es->secrets is NULL. */
    int secret = es->password != NULL && es->password[0] != '\0';

    if (said == NULL) {
        snprintf(dst, cap, "no message");
        return;
    }
    for (size_t k = 0; es->secrets != NULL && es->secrets[k] != NULL; k++)
        if (es->secrets[k][0] != '\0')
            secret = 1;
    if (!secret) {
        dlock__scrub(dst, cap, said, es->secrets);
        return;
    }
    for (size_t i = 0; etcd_words[i] != NULL; i++)
        if (strcmp(said, etcd_words[i]) == 0) {
            snprintf(dst, cap, "%s", etcd_words[i]);
            return;
        }
    snprintf(dst, cap,
             "an error in words that are not shown (not one of "
             "etcd's own messages, and the URL holds a password)");
}

/* The login request: never renewed by another login (flags). */
#define NO_REAUTH 0x100

static int authenticate(struct etcd_store *es, int64_t deadline);

/* The reply's Date header (ETCD_REPLY_DATE): the answering member's wall
 * clock, whole seconds, parsed by libcurl; 0 when there is none or it is
 * not a date this side of ETCD_DATE_MAX. */
static int64_t reply_date(CURL *h)
{
    struct curl_header *d = NULL;
    time_t t;

    if (curl_easy_header(h, "Date", 0, CURLH_HEADER, -1, &d) != CURLHE_OK ||
        d == NULL || d->value == NULL)
        return 0;
    t = curl_getdate(d->value, NULL);
    return t > 0 && (int64_t)t < ETCD_DATE_MAX ? (int64_t)t : 0;
}

/* One request to endpoint ep: DLOCK_OK with *out, or a code; *sent: the
 * request may have reached the server; *next: worth another endpoint. */
static int post_once(struct etcd_store *es, int ep, const char *path,
                     const char *text, int64_t deadline, json_object **out,
                     int *grpc, int *sent, int *next)
{
    char url[512], errbuf[CURL_ERROR_SIZE] = "", msg[512];
    struct reply_buf b = {0};
    struct curl_slist *hdrs;
    long status = 0;
    int64_t left = dlock__remaining_ms(deadline);
    CURLcode cr;
    CURL *h;
    json_object *reply, *err;
    size_t end = 0;
    int64_t date;
    int rc, over = 0;

    *sent = 0;
    *next = 1;
    if (left <= 0)
        return dlock__seterr(DLOCK_EUNAVAIL, "etcd did not answer in time (%s)",
                             es->url);
    snprintf(url, sizeof(url), "%s%s", es->endpoints[ep], path);
    h = conn_get(es);
    hdrs = headers(es);
    if (h == NULL || hdrs == NULL) {
        if (h != NULL)
            curl_easy_cleanup(h);
        curl_slist_free_all(hdrs);
        return dlock__enomem();
    }
    setup(es, h, url, hdrs, &b, left, errbuf);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(text));
    cr = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdrs);
    if (cr != CURLE_OK) {
        /* No connection: the request never left.  Anything later may
         * have reached the server. */
        {
            curl_off_t started = 0;

            curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &started);
            *sent = !(cr == CURLE_COULDNT_CONNECT ||
                      cr == CURLE_COULDNT_RESOLVE_HOST || started == 0);
        }
        curl_easy_cleanup(h);
        free(b.p);
        dlock__scrub(msg, sizeof(msg),
                     errbuf[0] ? errbuf : curl_easy_strerror(cr), es->secrets);
        if (b.over)
            return dlock__seterr(DLOCK_ESTORE,
                                 "etcd at %s sent a reply over %u bytes (%s)",
                                 es->endpoints[ep], ETCD_REPLY_MAX, es->url);
        return dlock__seterr(DLOCK_EUNAVAIL, "etcd at %s: %s (%s)",
                             es->endpoints[ep], msg, es->url);
    }
    *sent = 1;
    date = reply_date(h);
    conn_put(es, h);
    reply = b.p != NULL ? dlock__etcd_parse(b.p, b.n, &end, &over) : NULL;
    if (over) {
        free(b.p);
        *next = 0;
        return dlock__seterr(DLOCK_ESTORE,
                             "etcd at %s sent a reply of more than %u "
                             "objects and arrays (%s)",
                             es->endpoints[ep], ETCD_JSON_CONTAINERS, es->url);
    }
    if (reply != NULL && end < b.n) {
        /* Only whitespace may follow the object. */
        for (size_t i = end; i < b.n; i++)
            if (b.p[i] != '\n' && b.p[i] != ' ' && b.p[i] != '\r') {
                json_object_put(reply);
                reply = NULL;
                break;
            }
    }
    free(b.p);
    if (reply == NULL || !json_object_is_type(reply, json_type_object)) {
        json_object_put(reply);
        if (status >= 500)
            return dlock__seterr(DLOCK_EUNAVAIL,
                                 "etcd at %s answered HTTP %ld (%s)",
                                 es->endpoints[ep], status, es->url);
        *next = 0;
        return dlock__seterr(DLOCK_ESTORE,
                             "etcd at %s answered HTTP %ld with something "
                             "that is not a JSON object: not an etcd v3 "
                             "gateway? (%s)",
                             es->endpoints[ep], status, es->url);
    }
    if (json_object_object_get_ex(reply, "error", &err) ||
        (json_object_object_get_ex(reply, "result", &err) &&
         json_object_object_get_ex(err, "error", &err)) ||
        status != 200) {
        json_object *holder = reply, *res;
        const char *said;
        int code, auth;

        if (json_object_object_get_ex(reply, "result", &res) &&
            json_object_object_get_ex(res, "error", NULL))
            holder = res;
        code = (int)dlock__etcd_int(holder, "code");
        said =
            json_object_get_string(json_object_object_get(holder, "message"));
        auth = code == GRPC_UNAUTHENTICATED ||
               (said != NULL && strstr(said, "auth token") != NULL);
        server_text(es, msg, sizeof(msg), said);
        if (grpc != NULL)
            *grpc = code;
        json_object_put(reply);
        rc = code == GRPC_UNAVAILABLE || code == GRPC_DEADLINE ||
                     code == GRPC_CANCELED || code == GRPC_ABORTED ||
                     status == 408 || status >= 500
                 ? DLOCK_EUNAVAIL
                 : DLOCK_ESTORE;
        *next = rc == DLOCK_EUNAVAIL;
        if (auth)
            *next = 2; /* authenticate again */
        return dlock__seterr(rc, "etcd at %s: %s (HTTP %ld, code %d; %s)",
                             es->endpoints[ep], msg, status, code, es->url);
    }
    rc = check_header(es, reply, ep);
    if (rc != DLOCK_OK) {
        json_object_put(reply);
        return rc;
    }
    /* Ours, whatever the server put under that name. */
    json_object_object_add(reply, ETCD_REPLY_DATE, json_object_new_int64(date));
    *out = reply;
    return DLOCK_OK;
}

int dlock__etcd_post_until(struct etcd_store *es, const char *path,
                           json_object *body, int flags, int64_t deadline,
                           json_object **out, int *grpc_code)
{
    const char *text =
        json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
    int rc = DLOCK_EUNAVAIL, reauth = 0, ep, start;

    *out = NULL;
    if (grpc_code != NULL)
        *grpc_code = 0;
    if (text == NULL)
        return dlock__enomem();
    pthread_mutex_lock(&es->mu);
    start = es->next_ep;
    pthread_mutex_unlock(&es->mu);
    for (int k = 0; k < es->nendpoints; k++) {
        int sent = 0, next = 0, left = es->nendpoints - k;
        /* This endpoint's share of what is left (all of it for the last). */
        int64_t mine = dlock__now_ms() + dlock__remaining_ms(deadline) / left;

        ep = (start + k) % es->nendpoints;
        rc = post_once(es, ep, path, text, left > 1 ? mine : deadline, out,
                       grpc_code, &sent, &next);
        if (rc == DLOCK_OK) {
            pthread_mutex_lock(&es->mu);
            es->next_ep = ep;
            pthread_mutex_unlock(&es->mu);
            return DLOCK_OK;
        }
        if (next == 2 && !reauth && !(flags & NO_REAUTH) && es->user != NULL) {
            /* The token expired (300 s by default): once more, same
             * endpoint, with a new one.  An auth error means the request
             * was refused, so sending it again is safe.  Once a call: a
             * login answered "Unauthenticated" is that login's error, not
             * a reason to log in again (it once did, until the deadline,
             * and showed "Operation timed out"). */
            reauth = 1;
            rc = authenticate(es, deadline);
            if (rc != DLOCK_OK)
                return rc;
            k--;
            continue;
        }
        /* The next call starts at the next endpoint. */
        pthread_mutex_lock(&es->mu);
        if (es->next_ep == ep)
            es->next_ep = (ep + 1) % es->nendpoints;
        pthread_mutex_unlock(&es->mu);
        if (!next || (sent && !(flags & ETCD_RETRY_SAFE)) ||
            dlock__remaining_ms(deadline) <= 0)
            return rc;
    }
    return rc;
}

int dlock__etcd_post(struct etcd_store *es, const char *path, json_object *body,
                     int flags, json_object **out, int *grpc_code)
{
    int64_t deadline = dlock__now_ms() + dlock__io_bound(es->timeout_ms);

    return dlock__etcd_post_until(es, path, body, flags, deadline, out,
                                  grpc_code);
}

int dlock__etcd_commit(struct etcd_store *es, json_object *body, int flags,
                       int *succeeded)
{
    json_object *reply = NULL;
    int rc = body == NULL ? dlock__enomem()
                          : dlock__etcd_post(es, "/v3/kv/txn", body, flags,
                                             &reply, NULL);

    json_object_put(body);
    if (succeeded != NULL)
        *succeeded =
            rc == DLOCK_OK &&
            json_object_get_boolean(json_object_object_get(reply, "succeeded"));
    json_object_put(reply);
    return rc;
}

/* POST /v3/auth/authenticate; keeps the token for every later request. */
static int authenticate(struct etcd_store *es, int64_t deadline)
{
    json_object *body = json_object_new_object(), *reply = NULL;
    char *old;
    int rc;

    if (body == NULL)
        return dlock__enomem();
    json_object_object_add(body, "name", json_object_new_string(es->user));
    json_object_object_add(
        body, "password",
        json_object_new_string(es->password != NULL ? es->password : ""));
    pthread_mutex_lock(&es->mu);
    old = es->token;
    es->token = NULL;
    pthread_mutex_unlock(&es->mu);
    free(old);
    rc = dlock__etcd_post_until(es, "/v3/auth/authenticate", body,
                                ETCD_RETRY_SAFE | NO_REAUTH, deadline, &reply,
                                NULL);
    json_object_put(body);
    if (rc == DLOCK_OK) {
        const char *t =
            json_object_get_string(json_object_object_get(reply, "token"));

        if (t == NULL || *t == '\0')
            rc = dlock__seterr(DLOCK_ESTORE,
                               "etcd gave no auth token for user %s (%s)",
                               es->user, es->url);
        else {
            pthread_mutex_lock(&es->mu);
            es->token = dlock__strdup(t);
            rc = es->token != NULL ? DLOCK_OK : dlock__enomem();
            pthread_mutex_unlock(&es->mu);
        }
    }
    json_object_put(reply);
    return rc;
}

int dlock__etcd_authenticate(struct etcd_store *es)
{
    return authenticate(es, dlock__now_ms() + dlock__io_bound(es->timeout_ms));
}

/* --- the watch --------------------------------------------------------- */

struct watch_state {
    json_tokener *tok;
    const struct etcd_keys *only; /* the keys whose DELETE wakes; NULL: any */
    int woken;         /* an event, a cancel by the server, a compaction */
    int64_t event_rev; /* the greatest mod revision of the events read */
    int created;       /* the server confirmed the watch (how many) */
    int64_t made[3];   /* the first three created headers' revisions */
    int bad;           /* not a watch stream: garbage */
    size_t partial;    /* bytes of the message being read (ETCD_REPLY_MAX) */
    size_t containers; /* its '{' and '[' so far (ETCD_JSON_CONTAINERS) */
};

/* Whether events (DELETEs: the watch filters out PUTs) wake the waiter:
 * one of a key it waits on; a key that cannot be read wakes it too (it
 * looks, and believes what it reads). */
static int wakes(struct watch_state *w, json_object *events)
{
    size_t n = dlock__etcd_alen(events);

    for (size_t i = 0; i < n; i++) {
        int64_t r = dlock__etcd_int(
            json_object_object_get(dlock__etcd_aget(events, i), "kv"),
            "mod_revision");

        if (r > w->event_rev)
            w->event_rev = r;
    }
    if (w->only == NULL)
        return n > 0;
    for (size_t i = 0; i < n; i++) {
        json_object *kv =
            json_object_object_get(dlock__etcd_aget(events, i), "kv");
        json_object *kj = NULL;
        size_t len = 0;
        char *k = json_object_object_get_ex(kv, "key", &kj) &&
                          json_object_is_type(kj, json_type_string)
                      ? dlock__etcd_unb64(kv, "key", &len)
                      : NULL;
        /* etcd has no empty key: "" is a key it did not send. */
        int hit =
            k == NULL || len == 0 || dlock__etcd_keys_has(w->only, k, len);

        free(k);
        if (hit)
            return 1;
    }
    return 0;
}

static size_t on_watch(char *d, size_t sz, size_t nm, void *arg)
{
    struct watch_state *w = arg;
    size_t len = sz * nm, off = 0;

    /* A message may be at most ETCD_REPLY_MAX; the stream as long as the
     * watch lasts (a filtered watch reads every DELETE under the name
     * until one of its keys goes, or its deadline).  Objects and arrays
     * are counted before json-c builds them: the message's so far and
     * every '{' or '[' of this chunk (a bound); more than
     * ETCD_JSON_CONTAINERS is a wake-up, and nothing more is read. */
    if (w->containers + dlock__etcd_containers(d, len) > ETCD_JSON_CONTAINERS) {
        w->woken = 1;
        return 0;
    }
    while (off < len) {
        json_object *o, *res = NULL, *ev = NULL;
        size_t used;

        /* Newlines between messages are not JSON (inside one, they may be
         * in a string: the tokener's). */
        if (w->partial == 0 &&
            (d[off] == '\n' || d[off] == '\r' || d[off] == ' ')) {
            off++;
            continue;
        }
        o = json_tokener_parse_ex(w->tok, d + off, (int)(len - off));
        used = (size_t)json_tokener_get_parse_end(w->tok);
        w->partial += used;
        if (w->partial > ETCD_REPLY_MAX) {
            json_object_put(o);
            w->bad = 1;
            return 0;
        }
        if (o == NULL) {
            if (json_tokener_get_error(w->tok) != json_tokener_continue) {
                w->bad = 1;
                return 0;
            }
            w->containers += dlock__etcd_containers(d + off, used);
            return len; /* the rest of this message comes later */
        }
        off += used;
        w->partial = 0;
        w->containers = 0;
        json_tokener_reset(w->tok);
        if (!json_object_object_get_ex(o, "result", &res)) {
            /* {"error": ...}: the watch is over; re-read and see. */
            w->woken = 1;
        } else if (json_object_get_boolean(
                       json_object_object_get(res, "canceled")) ||
                   (json_object_object_get_ex(res, "events", &ev) &&
                    wakes(w, ev))) {
            w->woken = 1;
        } else if (json_object_get_boolean(
                       json_object_object_get(res, "created"))) {
            if (w->created < 3)
                w->made[w->created] = dlock__etcd_int(
                    json_object_object_get(res, "header"), "revision");
            w->created++;
        }
        json_object_put(o);
        if (w->woken)
            return 0; /* stop reading: the caller re-reads the queue */
    }
    return len;
}

int dlock__etcd_watch(struct etcd_store *es, const char *key, size_t len,
                      const char *end, size_t end_len, int64_t rev,
                      const struct etcd_keys *only, int64_t deadline,
                      int *woken)
{
    return dlock__etcd_watch_ex(es, key, len, end, end_len, rev, only, 0,
                                deadline, woken, NULL);
}

/* The watch whose request is body (a JSON text: one create_request, or
 * three), as dlock__etcd_watch_ex() and dlock__etcd_watch_fresh() say. */
static int watch_body(struct etcd_store *es, const char *body,
                      const struct etcd_keys *only, int64_t deadline,
                      int *woken, int64_t *event_rev,
                      int (*made)(void *arg, int64_t from), void *arg)
{
    struct watch_state w = {.only = only};
    struct reply_buf unused = {0};
    char url[512], errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    CURLM *m = NULL;
    CURL *h = NULL;
    int rc = DLOCK_OK, ep, running = 1;

    *woken = 0;
    pthread_mutex_lock(&es->mu);
    ep = es->next_ep;
    pthread_mutex_unlock(&es->mu);
    snprintf(url, sizeof(url), "%s/v3/watch", es->endpoints[ep]);
    w.tok = json_tokener_new();
    h = curl_easy_init();
    m = curl_multi_init();
    hdrs = headers(es);
    /* clientv3's WithRequireLeader: a member without a leader (cut off
     * from the quorum) ends the watch instead of keeping it silent. */
    if (hdrs != NULL) {
        struct curl_slist *t =
            curl_slist_append(hdrs, "Grpc-Metadata-hasleader: true");

        if (t == NULL) {
            curl_slist_free_all(hdrs);
            hdrs = NULL;
        } else {
            hdrs = t;
        }
    }
    if (w.tok == NULL || h == NULL || m == NULL || hdrs == NULL) {
        rc = dlock__enomem();
        goto out;
    }
    setup(es, h, url, hdrs, &unused, dlock__remaining_ms(deadline) + 1000,
          errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    /* A connection of its own, closed when the watch ends: that is how
     * a gateway watch is cancelled. */
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    curl_multi_add_handle(m, h);
    while (running) {
        struct curl_waitfd cfd = {.fd = dlock__cancel_fd(),
                                  .events = CURL_WAIT_POLLIN};
        int64_t left = dlock__remaining_ms(deadline);
        CURLMsg *msg;
        int q;

        if (dlock__cancelled())
            break; /* the core turns it into DLOCK_ECANCELED */
        if (left <= 0)
            break;
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            rc = dlock__seterr(DLOCK_EUNAVAIL, "etcd watch failed (%s)",
                               es->url);
            break;
        }
        if (w.woken || w.bad)
            break;
        if (made != NULL && w.created >= 3) {
            /* The watches from now are made: the first is in step from
             * made[1] when made[2] is the same (below); else the second
             * most likely is, from made[2]. */
            int r = made(arg, w.made[2] > w.made[1] ? w.made[2] : w.made[1]);

            made = NULL;
            if (r != 0) {
                w.woken = 1;
                break;
            }
        }
        while ((msg = curl_multi_info_read(m, &q)) != NULL)
            if (msg->msg == CURLMSG_DONE && !w.woken) {
                char s[256];
                long status = 0;

                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
                dlock__scrub(s, sizeof(s),
                             errbuf[0] ? errbuf
                                       : curl_easy_strerror(msg->data.result),
                             es->secrets);
                if (msg->data.result == CURLE_OK && status == 200)
                    w.woken = 1; /* the server ended it: re-read */
                else
                    rc = dlock__seterr(DLOCK_EUNAVAIL,
                                       "etcd watch at %s: %s (HTTP %ld; %s)",
                                       es->endpoints[ep], s, status, es->url);
                running = 0;
            }
        if (!running || w.woken)
            break;
        curl_multi_poll(m, cfd.fd >= 0 ? &cfd : NULL, cfd.fd >= 0 ? 1 : 0,
                        (int)(left < 1000 ? left : 1000), NULL);
    }
    if (rc != DLOCK_OK) { /* the next watch or call starts elsewhere */
        pthread_mutex_lock(&es->mu);
        if (es->next_ep == ep)
            es->next_ep = (ep + 1) % es->nendpoints;
        pthread_mutex_unlock(&es->mu);
    }
    if (w.bad && rc == DLOCK_OK)
        rc = dlock__seterr(DLOCK_ESTORE,
                           "etcd at %s sent a watch reply that is not a "
                           "JSON stream (%s)",
                           es->endpoints[ep], es->url);
    *woken = w.woken;
    if (event_rev != NULL)
        *event_rev = w.event_rev;
out:
    if (m != NULL && h != NULL)
        curl_multi_remove_handle(m, h);
    if (h != NULL)
        curl_easy_cleanup(h);
    if (m != NULL)
        curl_multi_cleanup(m);
    curl_slist_free_all(hdrs);
    if (w.tok != NULL)
        json_tokener_free(w.tok);
    return rc;
}

int dlock__etcd_watch_ex(struct etcd_store *es, const char *key, size_t len,
                         const char *end, size_t end_len, int64_t rev,
                         const struct etcd_keys *only, int puts,
                         int64_t deadline, int *woken, int64_t *event_rev)
{
    json_object *body =
        dlock__etcd_body_watch(key, len, end, end_len, rev, puts);
    int rc;

    *woken = 0;
    if (body == NULL)
        return dlock__enomem();
    rc = watch_body(
        es, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN), only,
        deadline, woken, event_rev, NULL, NULL);
    json_object_put(body);
    return rc;
}

/*
 * Why watches from "now" and not only one from the read's revision + 1:
 * etcd (3.4, mvcc/watchable_store.go watch()) puts a watch whose start
 * revision is not past the store's into its "unsynced" group, which
 * syncWatchersLoop() catches up once every 100 ms: a delete that lands
 * between the waiter's read and its watch's creation woke it up to 100
 * ms late (the p99 of 78 ms).  The first create is that watch, from rev
 * (the waiter's read + 1): it misses nothing, late when the store moved
 * (and all a gateway that read only one request would make).  A start of
 * 0 is the store's revision + 1 as the server reads it (the created
 * header's revision) just before it makes the watch; a write between
 * that read and the watch (a commit holds the watch store's lock while
 * it notifies) makes the watch unsynced all the same.  The next create,
 * handled after the second is made, reads the revision again: the same,
 * and no write came between: the second is in step, and sees every
 * change after made[1] at once.  Else a write raced it, and the third,
 * made after it, is in step from made[2] unless another write raced it
 * too (and then the first still brings it, by the catch-up).
 */
int dlock__etcd_watch_fresh(struct etcd_store *es, const char *key, size_t len,
                            const char *end, size_t end_len, int64_t rev,
                            const struct etcd_keys *only, int64_t deadline,
                            int (*made)(void *arg, int64_t from), void *arg,
                            int *woken)
{
    json_object *now = dlock__etcd_body_watch(key, len, end, end_len, 0, 0),
                *old = dlock__etcd_body_watch(key, len, end, end_len, rev, 0);
    const char *a, *b;
    char *three = NULL;
    size_t n, m;
    int rc;

    *woken = 0;
    if (now != NULL && old != NULL) {
        a = json_object_to_json_string_ext(now, JSON_C_TO_STRING_PLAIN);
        b = json_object_to_json_string_ext(old, JSON_C_TO_STRING_PLAIN);
        n = strlen(a);
        m = strlen(b);
        /* The gateway reads the body as a stream of requests. */
        if ((three = malloc(2 * n + m + 3)) != NULL)
            snprintf(three, 2 * n + m + 3, "%s\n%s\n%s", b, a, a);
    }
    json_object_put(now);
    json_object_put(old);
    if (three == NULL)
        return dlock__enomem();
    rc = watch_body(es, three, only, deadline, woken, NULL, made, arg);
    free(three);
    return rc;
}
