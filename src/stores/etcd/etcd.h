/*
 * etcd.h - the etcd store's private header: its handle, its leases, a
 * lock's keys, and what its files share.
 *
 *   http.c     the transport: one POST to the v3 JSON gateway with
 *              libcurl, endpoints in turn, auth, the deadline, the reply
 *              parsed by json-c and checked (cluster id, errors)
 *   json.c     request parts and reply fields: base64 keys and values,
 *              64-bit integers as strings, fields left out when zero
 *   bodies.c   the hot paths' request bodies, and their golden copies
 *   keyset.c   the keys a waiter waits on (struct etcd_keys)
 *   queue.c    a name's keys in revision order: who holds, who is next,
 *              which key a waiter watches (the admission rules)
 *   lease.c    the handle's leases, shared by the locks of one TTL
 *   acquire.c  try_acquire, the wait's slices (a watch), forget
 *   store.c    the ops table, and extend, release, status, list
 *   open.c     open and close: the URL, the first request
 *   runs.c     run records: once, once per period (the Date as the clock)
 *   suspend.c  a job's suspension: one key per name beside its run records
 *
 * etcd://[user:password@]host[:port][,host[:port]...][?prefix=P]
 *     [&timeout=5s][&connect_timeout=5s]
 * etcds://... the same over TLS, with ?cacert=, ?cert=, ?key=.
 *
 * THE LAYOUT (etcd's own clientv3/concurrency.Mutex and `etcdctl lock`):
 * a holder or waiter of NAME puts the key P NAME "/" <lease id in lower
 * case hex> with its lease, if the key does not exist, in one txn that
 * also reads the name's keys by create revision.  The keys of a name, in
 * create-revision order, are its queue: the first holds (a semaphore of
 * N: the first N; shared: the leading shared ones).  A waiter watches the
 * key before it for its DELETE and re-reads the queue, and its own key,
 * on every wake-up: a watch event is a wake-up, never a grant (etcd issue
 * 11456).  The fence is the key's create revision: cluster-wide,
 * strictly increasing, durable through Raft.  The value (ignored by Go
 * clients, empty from them) is dlock's holder record, JSON.
 *
 * LEASES.  The auto-renewed locks of one handle with the same TTL share
 * one etcd lease, so that an uncontended acquire + release is two round
 * trips (a txn and a delete).  A lock's lease end as dlock counts it is
 * never later than the server must keep its key (the lease's last
 * refresh + its TTL); a lock taking a lease refreshed a moment ago starts
 * with that much less (ETCD_REUSE_SLACK_MS at most), and its renewal
 * comes that much sooner.  A lock that is not auto-renewed has a lease of
 * its own: nobody else's renewal may keep its key.  Its release deletes
 * the key and leaves the keyless lease to expire (a grant, the txn and the
 * delete: three round trips); a lease whose key's fate is unknown is
 * revoked.
 */
#ifndef DLOCK_STORES_ETCD_H
#define DLOCK_STORES_ETCD_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "store.h"
#include "text.h"

struct dlock_url;

#define ETCD_DEFAULT_PORT 2379
#define ETCD_DEFAULT_TIMEOUT_MS 5000
/* The most bytes of one reply dlock reads: a name's queue of thousands
 * of keys fits; a server that sends more is not believed. */
#define ETCD_REPLY_MAX (16u << 20)
/* The most objects and arrays dlock lets json-c build from one reply,
 * watch message or value: json-c spends some 150 bytes on each, so a
 * reply of 16 MiB of "[[],[],...]" would take 800 MiB.  A queue page
 * (ETCD_QUEUE_PAGE keys) needs a few hundred. */
#define ETCD_JSON_CONTAINERS 65536u
/* etcd's --max-txn-ops default: the most operations of one txn. */
#define ETCD_TXN_OPS 128
/* The most keys one scan (list, the last runs) reads under the prefix,
 * a page at a time, all within one ?timeout=. */
#define ETCD_SCAN_KEYS 100000
/* The most runs one name keeps on etcd (dlock_keep_runs() refuses more,
 * a setting read over it is the default): a name's runs are one value,
 * rewritten whole by each run, and with the worst record (a host of 255
 * bytes that JSON escapes six-fold, some 1,700 bytes) 500 of them and
 * the success come to 0.85 MB, 1.14 MB in base64: under etcd's default
 * --max-request-bytes (1.5 MiB) with the rest of the txn
 * (docs/stores/etcd.md, Run records). */
#define ETCD_RUNS_KEPT_MAX 500
/* The most keys one queue read returns before dlock reads the rest. */
#define ETCD_QUEUE_PAGE 64
/* A lock's etcd lease: its TTL in whole seconds, rounded up (etcd
 * itself grants at least its minimum, 2 s with a 1 s election). */
#define ETCD_TTL_S(ttl_ms) (((ttl_ms) + 999) / 1000)
/* How much shorter than asked a lock's first lease may be when it takes
 * a lease another lock refreshed a moment ago (lease.c). */
#define ETCD_REUSE_SLACK_MS(ttl_ms) ((ttl_ms) / 4 < 1000 ? (ttl_ms) / 4 : 1000)

/* One etcd lease of the handle. */
struct etcd_lease {
    struct etcd_lease *next;
    int64_t id;
    int64_t ttl_s;      /* the TTL asked for */
    int64_t granted_ms; /* the TTL granted, ms */
    int64_t refreshed;  /* monotonic ms the last grant/keepalive was sent */
    unsigned refs;      /* locks (held or waiting) whose key is on it */
    int dead;           /* etcd said it is gone: never used again */
    int tainted;        /* a put on it may have landed unseen: retire */
    int own;            /* one lock's (not auto-renewed): never shared */
};

/* An idle libcurl handle (keep-alive connection) and its endpoint. */
struct etcd_conn {
    struct etcd_conn *next;
    void *curl; /* CURL * */
};

struct etcd_store {
    struct dlock_store base;
    const char *url;  /* redacted, owned by the core */
    char **endpoints; /* "http://host:port" */
    int nendpoints;
    int tls;
    char *cacert, *cert, *key;
    char *user, *password;
    char *prefix;
    size_t prefix_len;
    int64_t timeout_ms, connect_timeout_ms;
    const char *const *secrets; /* for scrubbing driver text */
    char **secrets_owned;

    pthread_mutex_t mu; /* everything below */
    struct etcd_conn *idle;
    unsigned nidle;
    int next_ep;         /* the endpoint that answered last */
    char *token;         /* auth token, NULL without a user */
    uint64_t cluster_id; /* the first header's; 0 until seen */
    struct etcd_lease *leases;
};

/* The keys a waiter waits on: the one before it that stands in its way
 * (a lock, a shared lock), or a semaphore of N's window: the N keys just
 * before its own.  While all N are there it cannot be admitted (it has N
 * keys before it, and a new key comes after it), so only their DELETE
 * may change its place: a deletion elsewhere in the name wakes nobody
 * it cannot admit. */
struct etcd_keys {
    size_t n;
    char **k; /* raw bytes, NUL-terminated */
    size_t *len;
};
/* keyset.c: free ks's keys and empty it. */
void dlock__etcd_keys_clear(struct etcd_keys *ks);
/* Whether k (n bytes) is one of ks's. */
int dlock__etcd_keys_has(const struct etcd_keys *ks, const char *k, size_t n);

/* The state of a lock (lk->priv) from its first put to its release. */
struct etcd_lock {
    struct etcd_lease *lease;
    char *key; /* P NAME "/" hex, raw bytes */
    size_t key_len;
    int64_t create_rev;    /* 0: no key (yet, or any more) */
    int64_t rev;           /* the header revision of the last queue read */
    struct etcd_keys wait; /* the keys before ours that stand in its way */
    int wait_holder;       /* one of them held at that read */
    /* A candidate's key holds lk->value as written at the grant: the
     * core's first value_set (with that value) sends nothing. */
    int value_fresh;
};

/* --- http.c ----------------------------------------------------------- */
#define ETCD_RETRY_SAFE 1 /* the request may be sent again elsewhere */
/* The field dlock__etcd_post*() sets in every reply it returns: the HTTP
 * Date header of that reply, the answering member's wall clock in whole
 * seconds since the epoch (0: none); always dlock's, never the server's
 * (runs.c judges periods by it). */
#define ETCD_REPLY_DATE "dlock:date"
#define ETCD_DATE_MAX (1LL << 40) /* seconds: beyond is no date */
/* POST body to path ("/v3/kv/txn"); *out the parsed reply (caller puts
 * it).  Checks the header's cluster id and turns etcd's errors into
 * DLOCK_* codes with a message; *grpc_code (may be NULL) gets etcd's code
 * when the reply is an error.  Within dlock__io_bound(timeout). */
int dlock__etcd_post(struct etcd_store *es, const char *path, json_object *body,
                     int flags, json_object **out, int *grpc_code);
/* The same with an explicit absolute deadline (monotonic ms). */
int dlock__etcd_post_until(struct etcd_store *es, const char *path,
                           json_object *body, int flags, int64_t deadline,
                           json_object **out, int *grpc_code);
/* POST body (NULL: out of memory; put either way) to /v3/kv/txn, for
 * its verdict only: DLOCK_OK with *succeeded (may be NULL) whether its
 * compares held, or the failure. */
int dlock__etcd_commit(struct etcd_store *es, json_object *body, int flags,
                       int *succeeded);
int dlock__etcd_http_init(struct etcd_store *es);
/* Get an auth token for the URL's user (open, and when one expires). */
int dlock__etcd_authenticate(struct etcd_store *es);
void dlock__etcd_http_free(struct etcd_store *es);
/* The revision a watch starts from to see what came after rev: rev + 1,
 * except after INT64_MAX (a revision is the server's word: a hostile one
 * may say "9223372036854775807", and rev + 1 would overflow). */
static inline int64_t dlock__etcd_after(int64_t rev)
{
    return rev < INT64_MAX ? rev + 1 : INT64_MAX;
}
/* Watch: wait for a DELETE of key (or of any key of the range [key, end)
 * that is one of only's; only NULL: any) after revision rev, until
 * deadline or a cancel.  DLOCK_OK with *woken 1 (such an event, a
 * cancelled or compacted watch, the stream's end: re-read) or 0 (the
 * deadline), else a DLOCK_* failure code. */
int dlock__etcd_watch(struct etcd_store *es, const char *key, size_t len,
                      const char *end, size_t end_len, int64_t rev,
                      const struct etcd_keys *only, int64_t deadline,
                      int *woken);
/* The same; puts: PUTs wake too (an observer's watch: any change of the
 * range); *event_rev (may be NULL): the greatest mod revision of the
 * events read, 0 when woken by none. */
int dlock__etcd_watch_ex(struct etcd_store *es, const char *key, size_t len,
                         const char *end, size_t end_len, int64_t rev,
                         const struct etcd_keys *only, int puts,
                         int64_t deadline, int *woken, int64_t *event_rev);
/* A waiter's watch (DELETEs of the range, or of key alone when end is
 * NULL) that does not start behind the store, in one request: one watch
 * from rev (late if the store moved since: the server's next catch-up,
 * within 100 ms) and two from the store's revision now.  Once those two
 * are made, made(arg, from) is called: the watch sees every change after
 * revision from at once (unless two writes raced the two watches' making:
 * then by the catch-up); made's non-zero return ends the watch (*woken =
 * 1).  Otherwise as dlock__etcd_watch(). */
int dlock__etcd_watch_fresh(struct etcd_store *es, const char *key, size_t len,
                            const char *end, size_t end_len, int64_t rev,
                            const struct etcd_keys *only, int64_t deadline,
                            int (*made)(void *arg, int64_t from), void *arg,
                            int *woken);

/* --- json.c ----------------------------------------------------------- */
json_object *dlock__etcd_b64(const char *s, size_t n);
/* How many objects and arrays JSON text s (n bytes) may hold: its '{'
 * and '[' (in strings too: a bound, never less). */
size_t dlock__etcd_containers(const char *s, size_t n);
/* Parse JSON text s (n bytes) unless it may hold more than
 * ETCD_JSON_CONTAINERS objects and arrays: the value (NULL: not JSON, too
 * many, out of memory), *end (may be NULL) where it ended, *over (may be
 * NULL) whether it was too many. */
json_object *dlock__etcd_parse(const char *s, size_t n, size_t *end, int *over);
/* Decode base64 field f of o into a malloc'd buffer (NUL-terminated). */
char *dlock__etcd_unb64(json_object *o, const char *f, size_t *n);
/* A 64-bit integer field (string or number; absent = 0). */
int64_t dlock__etcd_int(json_object *o, const char *f);
/* A TTL in seconds from the server: -1 (none) .. a year, whatever it
 * sent (R10: no arithmetic on a number near INT64_MAX). */
int64_t dlock__etcd_ttl(json_object *o, const char *f);
/* An array's length, 0 if a is not an array (a hostile reply's "kvs":
 * json-c asserts on a wrong type); its element i, NULL likewise. */
size_t dlock__etcd_alen(json_object *a);
json_object *dlock__etcd_aget(json_object *a, size_t i);
json_object *dlock__etcd_i64(int64_t v);
/* The end of the prefix range of s (s with its last byte + 1). */
char *dlock__etcd_prefix_end(const char *s, size_t n, size_t *end_len);
#define ETCD_RANGE_SORTED 1 /* by create revision */
#define ETCD_RANGE_KEYS 2   /* keys and revisions only (no value, no lease) */
/* A range request (the body of /v3/kv/range), and the same as a txn
 * operation. */
json_object *dlock__etcd_range_req(const char *key, size_t n, const char *end,
                                   size_t end_len, int64_t limit, int flags);
json_object *dlock__etcd_range_op(const char *key, size_t n, const char *end,
                                  size_t end_len, int64_t limit, int flags);
json_object *dlock__etcd_cmp_create(const char *key, size_t n, int64_t rev);
json_object *dlock__etcd_cmp_mod(const char *key, size_t n, int64_t rev);
json_object *dlock__etcd_put_op(const char *key, size_t n, const char *val,
                                int64_t lease);
json_object *dlock__etcd_delete_op(const char *key, size_t n);
json_object *dlock__etcd_txn(json_object *cmp, json_object *ok,
                             json_object *fail);
/* responses[i].response_range.kvs of a txn reply (NULL if absent). */
json_object *dlock__etcd_txn_kvs(json_object *reply, size_t i);

/* --- bodies.c: the bodies of the hot paths (golden copies) ------------ */
/* If key is absent put it (rec, lease); read the queue under pfx. */
json_object *dlock__etcd_body_acquire(const char *pfx, size_t plen,
                                      const char *key, size_t klen,
                                      const char *rec, int64_t lease);
/* Read the queue under pfx, and key if not NULL. */
json_object *dlock__etcd_body_queue(const char *pfx, size_t plen,
                                    const char *key, size_t klen);
/* Delete key if its create revision is create_rev. */
json_object *dlock__etcd_body_delete_own(const char *key, size_t klen,
                                         int64_t create_rev);
/* puts 0: DELETEs only (a waiter's); 1: every event (an observer's). */
json_object *dlock__etcd_body_watch(const char *key, size_t len,
                                    const char *end, size_t end_len,
                                    int64_t rev, int puts);
json_object *dlock__etcd_body_id(int64_t id);
json_object *dlock__etcd_body_ttl(int64_t ttl_s);
/* If key (a suspension record) is absent put rec there, else read it. */
json_object *dlock__etcd_body_suspend(const char *key, size_t klen,
                                      const char *rec);
/* Delete key (a suspension record), the deleted one in the reply. */
json_object *dlock__etcd_body_resume(const char *key, size_t klen);
/* Every body above, on an example lock, for the golden copies. */
void dlock__etcd_texts(dlock__text_emit emit, void *arg);

/* --- queue.c ---------------------------------------------------------- */
/* One key of a name's queue, as read. */
struct etcd_entry {
    char *key;
    size_t key_len;
    int64_t create_rev, lease;
    int foreign; /* no dlock record: an exclusive holder (Go, etcdctl) */
    int shared;
    unsigned limit; /* 1 for a lock */
    char token[DLOCK_TOKEN_HEX + 1];
    char host[256];
    int64_t pid, since_ms, ttl_ms;
};
struct etcd_queue {
    struct etcd_entry *e;
    size_t n;
    int64_t rev; /* header revision of the read */
};
/* The dlock record (the key's value) of lk. */
char *dlock__etcd_record(const struct dlock_lock *lk);
/* What lk's key holds (malloc'd): a candidate's (lk->is_candidate) is
 * its value, raw, as `etcdctl elect NAME VALUE` writes it ("" when
 * NULL); a lock's, dlock's holder record. */
char *dlock__etcd_key_value(const struct dlock_lock *lk);
/* Whether v (n bytes) reads as a dlock holder record (queue.c's rule): a
 * candidate's value that does would be taken for a lock's record. */
int dlock__etcd_is_record(const char *v, size_t n);
/* Fill q from a kvs array of name's range, keeping only the name's own
 * keys (NAME/<hex>, not those of a longer name NAME/x/...), sorted by
 * create revision.  Returns DLOCK_OK or ENOMEM. */
int dlock__etcd_queue_fill(struct etcd_queue *q, json_object *kvs,
                           size_t name_off);
void dlock__etcd_queue_free(struct etcd_queue *q);
/* Take out of q the keys with our token other than ours (create
 * revision rev): earlier places of this acquire whose delete did not
 * reach the server.  They stand in nobody's way but their own lock's;
 * *stale (malloc'd, keys owned) gets them, the count is returned. */
size_t dlock__etcd_take_own(struct etcd_queue *q, const char *token,
                            int64_t rev, struct etcd_entry **stale);
/* Where key (create revision rev) stands: DLOCK_OK admitted, DLOCK_BUSY
 * (with q->e[*from .. *to) the keys in its way: struct etcd_keys),
 * DLOCK_EINVAL (another limit in force; message set). */
int dlock__etcd_admit(const struct etcd_queue *q, const struct dlock_lock *lk,
                      int64_t rev, size_t *from, size_t *to, const char *url);
/* How many lead the queue (the holders), and whether shared. */
size_t dlock__etcd_holders(const struct etcd_queue *q, int *shared);
/* Read name's queue (and the key k if not NULL: *k_rev its create
 * revision, 0 when absent) in one linearizable txn. */
int dlock__etcd_read_queue(struct etcd_store *es, const char *name,
                           struct etcd_queue *q, const char *k, size_t klen,
                           int64_t *k_rev, int64_t *k_lease);
/* Every key starting with P prefix (both may be "": the whole keyspace),
 * a page of keys (no values) at a time, passed to cb until it returns
 * nonzero (that value is returned).  The whole scan within one ?timeout=
 * and ETCD_SCAN_KEYS keys, each page's keys in order and in range. */
int dlock__etcd_scan_keys(struct etcd_store *es, const char *prefix,
                          int (*cb)(const char *key, size_t klen, void *arg),
                          void *arg);
/* One key, read linearizably: *reply to put, *kv in it (NULL: absent). */
int dlock__etcd_get(struct etcd_store *es, const char *key, size_t klen,
                    json_object **reply, json_object **kv);
/* P NAME "/" (malloc'd) and its length. */
char *dlock__etcd_name_prefix(const struct etcd_store *es, const char *name,
                              size_t *len);

/* --- lease.c ---------------------------------------------------------- */
/* A lease for a lock of ttl_ms that the server keeps at least until
 * now + ttl_ms - ETCD_REUSE_SLACK_MS (refreshed or granted as needed),
 * none of avoid[]; own: a new lease for this lock alone.  refs+1. */
int dlock__etcd_lease_get(struct etcd_store *es, int64_t ttl_ms, int own,
                          struct etcd_lease *const *avoid, size_t navoid,
                          struct etcd_lease **out);
/* Refresh l unless its last refresh already covers until `until`
 * (monotonic ms): DLOCK_OK, DLOCK_LOST (etcd says it is gone), or a
 * failure. */
int dlock__etcd_lease_cover(struct etcd_store *es, struct etcd_lease *l,
                            int64_t until);
/* Retire l (tainted): a put on it may have landed unseen.  No lock takes
 * it any more, and it is revoked once its last lock lets go. */
void dlock__etcd_lease_retire(struct etcd_store *es, struct etcd_lease *l);
/* refs-1; a tainted lease with no refs left is revoked. */
void dlock__etcd_lease_put(struct etcd_store *es, struct etcd_lease *l);
/* Revoke and free every lease (close). */
void dlock__etcd_lease_free_all(struct etcd_store *es);
/* POST /v3/lease/grant: the lease's id and the TTL granted (etcd may
 * grant more than asked: its minimum). */
int dlock__etcd_lease_grant(struct etcd_store *es, int64_t ttl_s, int64_t *id,
                            int64_t *granted_s);
/* POST /v3/lease/timetolive: the seconds left (-1: no such lease; etcd
 * truncates) and the TTL it was granted. */
int dlock__etcd_lease_ttl(struct etcd_store *es, int64_t id, int64_t *left_s,
                          int64_t *granted_s);
/* Revoke lease id, best effort, by deadline (monotonic ms): a lease not
 * revoked expires by itself. */
void dlock__etcd_lease_revoke(struct etcd_store *es, int64_t id,
                              int64_t deadline);
/* The server keeps keys on l at least until this monotonic ms. */
int64_t dlock__etcd_lease_until(const struct etcd_lease *l);

/* --- acquire.c -------------------------------------------------------- */
int dlock__etcd_try_acquire(struct dlock_store *s, struct dlock_lock *lk,
                            int64_t deadline, int64_t *retry_ms);
int dlock__etcd_wait_slice(struct dlock_store *s, struct dlock_lock *lk,
                           int64_t slice_ms, int64_t *retry_ms);
int dlock__etcd_forget(struct dlock_store *s, struct dlock_lock *lk);
void dlock__etcd_lock_free(struct etcd_store *es, struct etcd_lock *el);

/* --- elect.c -------------------------------------------------------- */
int dlock__etcd_value_set(struct dlock_store *s, struct dlock_lock *lk,
                          const char *value, size_t len);
int dlock__etcd_value_get(struct dlock_store *s, const char *name,
                          uint64_t *fence, char **value, size_t *len);
int dlock__etcd_watch_name(struct dlock_store *s, const char *name,
                           void **state, int64_t slice_ms);
void dlock__etcd_watch_end(struct dlock_store *s, void *state);

/* --- runs.c ----------------------------------------------------------- */
int dlock__etcd_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                          const dlock_run_rule *rule, const char *host,
                          int64_t pid, int *go, dlock_run *last);
int dlock__etcd_run_end(struct dlock_store *s, struct dlock_lock *lk,
                        int result, int status);
int dlock__etcd_keep_runs(struct dlock_store *s, const char *name, unsigned n);
int dlock__etcd_kept_runs(struct dlock_store *s, const char *name, unsigned *n);
int dlock__etcd_runs(struct dlock_store *s, const char *name, unsigned max,
                     dlock_run_cb cb, void *payload);
int dlock__etcd_last_runs(struct dlock_store *s, const char *prefix,
                          dlock_run_cb cb, void *payload);

/* --- suspend.c -------------------------------------------------------- */
/* Name's suspension record, P FIRST \xff suspend [/REST] (malloc'd). */
char *dlock__etcd_susp_key(const struct etcd_store *es, const char *name,
                           size_t *len);
/* *cur's by, since_ms and reason from a suspension record's kv: "?" (0)
 * for what dlock cannot have written. */
void dlock__etcd_susp_fill(json_object *kv, dlock_suspension *cur);
int dlock__etcd_suspend(struct dlock_store *s, const char *name, const char *by,
                        const char *reason, int *was, dlock_suspension *cur);
int dlock__etcd_resume(struct dlock_store *s, const char *name, int *was,
                       dlock_suspension *cur);
int dlock__etcd_suspension(struct dlock_store *s, const char *name, int *was,
                           dlock_suspension *cur);
int dlock__etcd_suspensions(struct dlock_store *s, const char *prefix,
                            dlock_suspension_cb cb, void *payload);

/* --- open.c ----------------------------------------------------------- */
int dlock__etcd_open(struct dlock_store **out, const struct dlock_url *u);
void dlock__etcd_close(struct dlock_store *s);

#endif /* DLOCK_STORES_ETCD_H */
