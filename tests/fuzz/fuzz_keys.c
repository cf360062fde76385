/* libFuzzer: each store's mapping of lock names to its own keys
 * (src/stores/mysql/my_keys.c, src/stores/redis/rkeys.c, each when its
 * store is built).  The input is two names separated by the byte 0xfe
 * (never in UTF-8).  For every valid name:
 *  - MySQL/MariaDB: the key is the name up to 64 characters (192 bytes on
 *    MariaDB), else its first 24 characters and 40 lowercase hex digits;
 *    it is valid UTF-8 within the server's limits; two names share a key
 *    only when one is literally the other's hashed key;
 *  - Redis: the lock key is prefix + name, the five keys differ, the lock
 *    and readers keys map back to the name and the others to no name, and
 *    no key of one name is a key of another.
 * Any input at all, as a Redis key, maps back to a name only if that name
 * is valid and the key is its lock or readers key; as a SCAN prefix, its
 * glob escapes to exactly itself followed by one '*'.
 * PostgreSQL has no client-side mapping (the server hashes the name).
 *  - etcd: a holder of NAME has the key NAME "/" <lease hex>; a name's
 *    range read (every key under NAME "/") keeps, as the name's queue,
 *    exactly the keys of NAME itself: another name's key (NAME/x's, a
 *    run record's) never counts, whatever the value holds (the input's
 *    bytes as a holder record, parsed without crashing). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#ifdef DLOCK_HAVE_MYSQL
#include "mysql/my_keys.h"
#endif
#ifdef DLOCK_HAVE_REDIS
#include "redis/rkeys.h"
#endif
#ifdef DLOCK_HAVE_ETCD
#include "etcd/etcd.h"
#endif

#define PREFIX "dlock:"
#define PLEN (sizeof(PREFIX) - 1)

#if defined(DLOCK_HAVE_MYSQL) || defined(DLOCK_HAVE_REDIS)
static int same_key(const char *a, size_t al, const char *b, size_t bl)
{
    return al == bl && memcmp(a, b, al) == 0;
}
#endif

static int valid(const char *s, size_t len)
{
    return len > 0 && memchr(s, 0, len) == NULL &&
           dlock__check_name(s, len) == DLOCK_OK;
}

#ifdef DLOCK_HAVE_MYSQL
static size_t utf8_chars(const char *s, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xc0) != 0x80;
    return n;
}

static void check_mysql(const char *name, size_t len, int mariadb,
                        char key[DLOCK__MYSQL_KEY_MAX + 1])
{
    size_t klen, klen2, chars;
    char again[DLOCK__MYSQL_KEY_MAX + 1];

    if (dlock__mysql_key(name, len, mariadb, key, &klen) != 0)
        abort();
    if (klen != strlen(key) || !valid(key, klen))
        abort();
    chars = utf8_chars(key, klen);
    if (chars > 64 || (mariadb && klen > 192))
        abort();
    if (utf8_chars(name, len) <= 64 && (!mariadb || len <= 192)) {
        if (klen != len || memcmp(key, name, len) != 0)
            abort();
    } else {
        size_t cut = klen - 40;

        if (utf8_chars(key, cut) != 24 || memcmp(key, name, cut) != 0)
            abort();
        for (size_t i = cut; i < klen; i++)
            if (strchr("0123456789abcdef", key[i]) == NULL)
                abort();
    }
    if (dlock__mysql_key(name, len, mariadb, again, &klen2) != 0 ||
        klen2 != klen || memcmp(again, key, klen + 1) != 0)
        abort();
}
#endif

#ifdef DLOCK_HAVE_REDIS
static void check_redis(const char *name, size_t len, struct dlock__rkeys *k)
{
    size_t nlen;

    if (dlock__redis_keys(PREFIX, PLEN, name, len, 0, k) != DLOCK_OK)
        abort();
    if (k->klen[0] != PLEN + len || memcmp(k->k[0], PREFIX, PLEN) != 0 ||
        memcmp(k->k[0] + PLEN, name, len) != 0)
        abort();
    for (int i = 0; i < 5; i++) {
        const char *ki = i < 4 ? k->k[i] : k->chan;
        size_t li = i < 4 ? k->klen[i] : k->chan_len;
        int back = dlock__redis_key_name(ki, li, PREFIX, PLEN, &nlen);

        if (back != (i == 0 || i == 2) || (back && nlen != len))
            abort();
        for (int j = 0; j < i; j++)
            if (li == k->klen[j] && memcmp(ki, k->k[j], li) == 0)
                abort();
    }
}

/* Redis Cluster: the lock key is unchanged, every derived key hashes to
 * its slot, no two keys are equal, and a prefix that is itself empty
 * works as well. */
static void check_redis_cluster(const char *prefix, size_t plen,
                                const char *name, size_t len)
{
    struct dlock__rkeys k;
    unsigned slot;

    if (dlock__redis_keys(prefix, plen, name, len, 1, &k) != DLOCK_OK)
        abort();
    if (k.klen[0] != plen + len || memcmp(k.k[0], prefix, plen) != 0 ||
        memcmp(k.k[0] + plen, name, len) != 0)
        abort();
    slot = dlock__redis_slot(k.k[0], k.klen[0]);
    for (int i = 1; i < DLOCK__RKEYS; i++) {
        if (dlock__redis_slot(k.k[i], k.klen[i]) != slot)
            abort();
        for (int j = 0; j < i; j++)
            if (k.klen[i] == k.klen[j] &&
                memcmp(k.k[i], k.k[j], k.klen[i]) == 0)
                abort();
    }
    free(k.buf);
}

static void check_any_key(const char *d, size_t n)
{
    struct dlock__rkeys k;
    size_t nlen;

    if (!dlock__redis_key_name(d, n, PREFIX, PLEN, &nlen))
        return;
    if (!valid(d + PLEN, nlen))
        abort();
    if (dlock__redis_keys(PREFIX, PLEN, d + PLEN, nlen, 0, &k) != DLOCK_OK)
        abort();
    if (!same_key(d, n, k.k[0], k.klen[0]) &&
        !same_key(d, n, k.k[2], k.klen[2]))
        abort();
    free(k.buf);
}

static void check_glob(const char *d, size_t n)
{
    size_t len = strnlen(d, n), j = 0;
    char *g = dlock__redis_glob_prefix(d, len), *p;

    if (g == NULL)
        abort();
    /* Unescape: every byte of d in order, no bare glob character, then a
     * single '*' at the end. */
    for (p = g; *p != '\0' && p[1] != '\0'; p++) {
        if (*p == '\\')
            p++;
        else if (strchr("*?[]", *p) != NULL)
            abort();
        if (j >= len || *p != d[j++])
            abort();
    }
    if (j != len || p[0] != '*' || p[1] != '\0')
        abort();
    free(g);
}
#endif

#ifdef DLOCK_HAVE_ETCD
/* A kv of etcd's range reply: key and value in base64, revisions as
 * strings. */
static json_object *etcd_kv(const char *key, size_t klen, const char *val,
                            size_t vlen, int64_t rev)
{
    json_object *kv = json_object_new_object();

    json_object_object_add(kv, "key", dlock__etcd_b64(key, klen));
    json_object_object_add(kv, "value", dlock__etcd_b64(val, vlen));
    json_object_object_add(kv, "create_revision", dlock__etcd_i64(rev));
    json_object_object_add(kv, "mod_revision", dlock__etcd_i64(rev));
    json_object_object_add(kv, "lease", dlock__etcd_i64(0x7f2fa21ec655951a));
    return kv;
}

/* The keys of name b (and the raw input as a key), as name a's range
 * read would return them: a's queue holds b's key iff a == b. */
static void check_etcd(const char *a, size_t al, const char *b, size_t bl,
                       const char *raw, size_t rawlen)
{
    static const char hex[] = "/7f2fa21ec655951a";
    size_t klen = bl + sizeof(hex) - 1, want = 0;
    char *key = malloc(klen), *rkey = malloc(rawlen + 1);
    json_object *kvs = json_object_new_array();
    struct etcd_queue q;

    if (key == NULL || rkey == NULL || kvs == NULL)
        abort();
    memcpy(key, b, bl);
    memcpy(key + bl, hex, sizeof(hex) - 1);
    memcpy(rkey, raw, rawlen);
    /* In a's range: the key starts with a "/" (what etcd returns). */
    if (klen > al && memcmp(key, a, al) == 0 && key[al] == '/') {
        json_object_array_add(kvs, etcd_kv(key, klen, raw, rawlen, 7));
        want += al == bl;
    }
    if (rawlen > al && memcmp(rkey, a, al) == 0 && rkey[al] == '/')
        json_object_array_add(kvs, etcd_kv(rkey, rawlen, raw, rawlen, 3));
    /* An entry etcd never sends (no revision, a bad base64) is passed
     * over. */
    json_object_array_add(kvs, etcd_kv(key, klen, raw, rawlen, 0));
    {
        json_object *bad = json_object_new_object();

        json_object_object_add(bad, "key", json_object_new_string("@@@"));
        json_object_array_add(kvs, bad);
    }
    if (dlock__etcd_queue_fill(&q, kvs, al + 1) != DLOCK_OK)
        abort();
    {
        size_t own = 0;

        for (size_t i = 0; i < q.n; i++) {
            const struct etcd_entry *e = &q.e[i];

            if (e->key_len <= al + 1 || memcmp(e->key, a, al) != 0 ||
                e->key[al] != '/' ||
                memchr(e->key + al + 1, '/', e->key_len - al - 1) != NULL ||
                e->create_rev <= 0)
                abort();
            if (i > 0 && q.e[i - 1].create_rev > e->create_rev)
                abort(); /* the queue is in revision order */
            own += e->create_rev == 7 && e->key_len == klen &&
                   memcmp(e->key, key, klen) == 0;
        }
        if (own != want)
            abort();
    }
    dlock__etcd_queue_free(&q);
    json_object_put(kvs);
    free(key);
    free(rkey);
}
#endif

#ifdef DLOCK_HAVE_MYSQL
/* Each valid name's keys, and two names never share one unless one is
 * literally the other's hashed key. */
static void fuzz_mysql(const char *const n[2], const size_t l[2],
                       const int ok[2])
{
    char mk[2][2][DLOCK__MYSQL_KEY_MAX + 1];

    for (int i = 0; i < 2; i++)
        if (ok[i]) {
            check_mysql(n[i], l[i], 0, mk[i][0]);
            check_mysql(n[i], l[i], 1, mk[i][1]);
        }
    if (ok[0] && ok[1] && !same_key(n[0], l[0], n[1], l[1]))
        for (int m = 0; m < 2; m++)
            if (strcmp(mk[0][m], mk[1][m]) == 0 &&
                !same_key(mk[0][m], strlen(mk[0][m]), n[0], l[0]) &&
                !same_key(mk[0][m], strlen(mk[0][m]), n[1], l[1]))
                abort(); /* a collision no one asked for */
}
#endif

#ifdef DLOCK_HAVE_REDIS
/* The input as a key and as a SCAN prefix; each valid name's keys, plain
 * and in the cluster layout; two names never share a key. */
static void fuzz_redis(const char *d, size_t size, const char *const n[2],
                       const size_t l[2], const int ok[2])
{
    struct dlock__rkeys rk[2];

    check_any_key(d, size);
    check_glob(d, size);
    for (int i = 0; i < 2; i++)
        if (ok[i]) {
            check_redis(n[i], l[i], &rk[i]);
            check_redis_cluster(PREFIX, PLEN, n[i], l[i]);
            check_redis_cluster("", 0, n[i], l[i]);
        }
    if (ok[0] && ok[1] && !same_key(n[0], l[0], n[1], l[1])) {
        /* Two names never share a key in the cluster layout either, with
         * an empty prefix ("a" and "{a}" are different locks). */
        struct dlock__rkeys ck[2];

        if (dlock__redis_keys("", 0, n[0], l[0], 1, &ck[0]) != DLOCK_OK ||
            dlock__redis_keys("", 0, n[1], l[1], 1, &ck[1]) != DLOCK_OK)
            abort();
        for (int i = 0; i < DLOCK__RKEYS; i++)
            for (int j = 0; j < DLOCK__RKEYS; j++)
                if (same_key(ck[0].k[i], ck[0].klen[i], ck[1].k[j],
                             ck[1].klen[j]))
                    abort();
        free(ck[0].buf);
        free(ck[1].buf);
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 5; j++) {
                const char *a = i < 4 ? rk[0].k[i] : rk[0].chan;
                const char *b = j < 4 ? rk[1].k[j] : rk[1].chan;
                size_t al = i < 4 ? rk[0].klen[i] : rk[0].chan_len;
                size_t bl = j < 4 ? rk[1].klen[j] : rk[1].chan_len;

                if (same_key(a, al, b, bl))
                    abort();
            }
    }
    for (int i = 0; i < 2; i++)
        if (ok[i])
            free(rk[i].buf);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *d = (const char *)data, *sep = memchr(d, 0xfe, size);
    const char *const n[2] = {d, sep ? sep + 1 : NULL};
    const size_t l[2] = {sep ? (size_t)(sep - d) : size,
                         sep ? size - (size_t)(sep - d) - 1 : 0};
    int ok[2];

    for (int i = 0; i < 2; i++)
        ok[i] = n[i] != NULL && valid(n[i], l[i]);
#ifdef DLOCK_HAVE_MYSQL
    fuzz_mysql(n, l, ok);
#endif
#ifdef DLOCK_HAVE_REDIS
    fuzz_redis(d, size, n, l, ok);
#endif
#ifdef DLOCK_HAVE_ETCD
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (ok[i] && ok[j])
                check_etcd(n[i], l[i], n[j], l[j], d, size);
#endif
    return 0;
}
