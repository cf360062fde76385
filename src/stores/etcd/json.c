/*
 * json.c - the etcd store's request bodies and reply fields.
 *
 * The v3 JSON gateway speaks protobuf's JSON mapping: keys and values are
 * base64 (OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock), 64-bit integers are
 * strings, and a field equal to its default (0, false, empty) is left
 * out, so a missing field reads as 0 here.  Bodies are json-c objects,
 * never text pasted together: a name is bytes in a base64 string.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "etcd.h"

json_object *dlock__etcd_b64(const char *s, size_t n)
{
    size_t cap = 4 * ((n + 2) / 3) + 1;
    unsigned char *out = malloc(cap);
    json_object *o;

    if (out == NULL)
        return NULL;
    EVP_EncodeBlock(out, (const unsigned char *)s, (int)n);
    o = json_object_new_string((const char *)out);
    free(out);
    return o;
}

size_t dlock__etcd_containers(const char *s, size_t n)
{
    size_t c = 0;

    for (size_t i = 0; i < n; i++)
        c += s[i] == '{' || s[i] == '[';
    return c;
}

json_object *dlock__etcd_parse(const char *s, size_t n, size_t *end, int *over)
{
    json_tokener *tok;
    json_object *o = NULL;
    int many = dlock__etcd_containers(s, n) > ETCD_JSON_CONTAINERS;

    if (end != NULL)
        *end = 0;
    if (over != NULL)
        *over = many;
    if (many || n > INT_MAX || (tok = json_tokener_new()) == NULL)
        return NULL;
    o = json_tokener_parse_ex(tok, s, (int)n);
    if (o != NULL && end != NULL)
        *end = (size_t)json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    return o;
}

char *dlock__etcd_unb64(json_object *o, const char *f, size_t *n)
{
    json_object *v = NULL;
    const char *s = "";
    size_t len, pad = 0;
    unsigned char *out;
    int got;

    if (json_object_object_get_ex(o, f, &v) &&
        json_object_is_type(v, json_type_string))
        s = json_object_get_string(v);
    len = strlen(s);
    if (len % 4 != 0)
        return NULL;
    out = malloc(len / 4 * 3 + 1);
    if (out == NULL)
        return NULL;
    got =
        len > 0 ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)len) : 0;
    if (got < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    while (pad < 2 && len > pad && s[len - 1 - pad] == '=')
        pad++;
    *n = (size_t)got - pad;
    out[*n] = '\0';
    return (char *)out;
}

int64_t dlock__etcd_int(json_object *o, const char *f)
{
    json_object *v = NULL;
    const char *s;
    char *end;
    long long x;

    if (o == NULL || !json_object_object_get_ex(o, f, &v))
        return 0;
    if (json_object_is_type(v, json_type_int))
        return json_object_get_int64(v);
    if (!json_object_is_type(v, json_type_string))
        return 0;
    s = json_object_get_string(v);
    errno = 0;
    x = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0') {
        /* uint64 ids (cluster_id) beyond INT64_MAX */
        unsigned long long u;

        errno = 0;
        u = strtoull(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0')
            return 0;
        return (int64_t)u;
    }
    return (int64_t)x;
}

int64_t dlock__etcd_ttl(json_object *o, const char *f)
{
    int64_t v = dlock__etcd_int(o, f);

    if (v < -1)
        return -1;
    return v > DLOCK_TTL_MAX_MS / 1000 ? DLOCK_TTL_MAX_MS / 1000 : v;
}

size_t dlock__etcd_alen(json_object *a)
{
    return a != NULL && json_object_is_type(a, json_type_array)
               ? json_object_array_length(a)
               : 0;
}

json_object *dlock__etcd_aget(json_object *a, size_t i)
{
    return i < dlock__etcd_alen(a) ? json_object_array_get_idx(a, i) : NULL;
}

json_object *dlock__etcd_i64(int64_t v)
{
    char buf[24];

    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return json_object_new_string(buf);
}

char *dlock__etcd_prefix_end(const char *s, size_t n, size_t *end_len)
{
    char *e = malloc(n + 1);

    if (e == NULL)
        return NULL;
    memcpy(e, s, n);
    /* The keys starting with s end before s with its last byte + 1
     * (names never end in 0xff: they are UTF-8 and end in '/'). */
    e[n - 1] = (char)((unsigned char)e[n - 1] + 1);
    e[n] = '\0';
    *end_len = n;
    return e;
}

/* {"key": key} (NULL: no memory), the start of every request on a key. */
static json_object *keyed(const char *key, size_t n)
{
    json_object *r = json_object_new_object();

    if (r != NULL)
        json_object_object_add(r, "key", dlock__etcd_b64(key, n));
    return r;
}

/* {kind: r}: a txn operation (NULL, and r put, if either is missing). */
static json_object *txn_op(const char *kind, json_object *r)
{
    json_object *op = r != NULL ? json_object_new_object() : NULL;

    if (op == NULL) {
        json_object_put(r);
        return NULL;
    }
    json_object_object_add(op, kind, r);
    return op;
}

json_object *dlock__etcd_range_req(const char *key, size_t n, const char *end,
                                   size_t end_len, int64_t limit, int flags)
{
    json_object *r = keyed(key, n);

    if (r == NULL)
        return NULL;
    if (end != NULL)
        json_object_object_add(r, "range_end", dlock__etcd_b64(end, end_len));
    if (limit > 0)
        json_object_object_add(r, "limit", dlock__etcd_i64(limit));
    if (flags & ETCD_RANGE_KEYS)
        json_object_object_add(r, "keys_only", json_object_new_boolean(1));
    if (flags & ETCD_RANGE_SORTED) {
        json_object_object_add(r, "sort_order",
                               json_object_new_string("ASCEND"));
        json_object_object_add(r, "sort_target",
                               json_object_new_string("CREATE"));
    }
    return r;
}

json_object *dlock__etcd_range_op(const char *key, size_t n, const char *end,
                                  size_t end_len, int64_t limit, int flags)
{
    return txn_op("request_range",
                  dlock__etcd_range_req(key, n, end, end_len, limit, flags));
}

static json_object *cmp_rev(const char *key, size_t n, const char *target,
                            const char *field, int64_t rev)
{
    json_object *c = keyed(key, n);

    if (c == NULL)
        return NULL;
    json_object_object_add(c, "target", json_object_new_string(target));
    json_object_object_add(c, "result", json_object_new_string("EQUAL"));
    json_object_object_add(c, field, dlock__etcd_i64(rev));
    return c;
}

json_object *dlock__etcd_cmp_create(const char *key, size_t n, int64_t rev)
{
    return cmp_rev(key, n, "CREATE", "create_revision", rev);
}

json_object *dlock__etcd_cmp_mod(const char *key, size_t n, int64_t rev)
{
    return cmp_rev(key, n, "MOD", "mod_revision", rev);
}

json_object *dlock__etcd_put_op(const char *key, size_t n, const char *val,
                                int64_t lease)
{
    json_object *r = keyed(key, n);

    if (r != NULL) {
        json_object_object_add(r, "value", dlock__etcd_b64(val, strlen(val)));
        json_object_object_add(r, "lease", dlock__etcd_i64(lease));
    }
    return txn_op("request_put", r);
}

json_object *dlock__etcd_delete_op(const char *key, size_t n)
{
    return txn_op("request_delete_range", keyed(key, n));
}

json_object *dlock__etcd_txn(json_object *cmp, json_object *ok,
                             json_object *fail)
{
    json_object *t = json_object_new_object();

    if (t == NULL) {
        json_object_put(cmp);
        json_object_put(ok);
        json_object_put(fail);
        return NULL;
    }
    if (cmp != NULL)
        json_object_object_add(t, "compare", cmp);
    if (ok != NULL)
        json_object_object_add(t, "success", ok);
    if (fail != NULL)
        json_object_object_add(t, "failure", fail);
    return t;
}

json_object *dlock__etcd_txn_kvs(json_object *reply, size_t i)
{
    json_object *rs, *r, *rr, *kvs;

    if (!json_object_object_get_ex(reply, "responses", &rs) ||
        !json_object_is_type(rs, json_type_array) ||
        i >= json_object_array_length(rs))
        return NULL;
    r = json_object_array_get_idx(rs, i);
    if (!json_object_object_get_ex(r, "response_range", &rr))
        return NULL;
    if (!json_object_object_get_ex(rr, "kvs", &kvs))
        return json_object_new_array(); /* none: left out */
    return json_object_get(kvs);
}
