/*
 * bodies.c - the request bodies the etcd store sends on its hot paths,
 * each built by one function that its caller and the golden copies
 * (dlock__etcd_texts, tests/golden/etcd/) share: the acquire txn, the
 * queue read, the owner's delete, the watch, the lease calls, and a
 * suspension's put and delete (suspend.c).
 *
 * etcd's bodies are JSON built by json-c from typed values (never text
 * with a name pasted in), so they are not templates as the SQL and Lua
 * of the other stores are; the golden copies pin their shape instead:
 * the same builders, run on a fixed example lock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd.h"
#include "text.h"

json_object *dlock__etcd_body_acquire(const char *pfx, size_t plen,
                                      const char *key, size_t klen,
                                      const char *rec, int64_t lease)
{
    char *end;
    size_t elen;
    json_object *cmp = json_object_new_array(), *ok = json_object_new_array(),
                *fail = json_object_new_array();

    end = dlock__etcd_prefix_end(pfx, plen, &elen);
    if (end == NULL || cmp == NULL || ok == NULL || fail == NULL) {
        free(end);
        json_object_put(cmp);
        json_object_put(ok);
        json_object_put(fail);
        return NULL;
    }
    /* If our key does not exist: put it with our lease, read the queue.
     * Else: read our key (an earlier attempt's?) and the queue. */
    json_object_array_add(cmp, dlock__etcd_cmp_create(key, klen, 0));
    json_object_array_add(ok, dlock__etcd_put_op(key, klen, rec, lease));
    json_object_array_add(ok, dlock__etcd_range_op(pfx, plen, end, elen, 0, 1));
    json_object_array_add(fail, dlock__etcd_range_op(key, klen, NULL, 0, 0, 0));
    json_object_array_add(fail,
                          dlock__etcd_range_op(pfx, plen, end, elen, 0, 1));
    free(end);
    return dlock__etcd_txn(cmp, ok, fail);
}

json_object *dlock__etcd_body_queue(const char *pfx, size_t plen,
                                    const char *key, size_t klen)
{
    char *end;
    size_t elen;
    json_object *ops = json_object_new_array();

    end = dlock__etcd_prefix_end(pfx, plen, &elen);
    if (end == NULL || ops == NULL) {
        free(end);
        json_object_put(ops);
        return NULL;
    }
    json_object_array_add(ops,
                          dlock__etcd_range_op(pfx, plen, end, elen, 0, 1));
    if (key != NULL)
        json_object_array_add(ops,
                              dlock__etcd_range_op(key, klen, NULL, 0, 0, 0));
    free(end);
    return dlock__etcd_txn(NULL, ops, NULL);
}

json_object *dlock__etcd_body_delete_own(const char *key, size_t klen,
                                         int64_t create_rev)
{
    json_object *cmp = json_object_new_array(), *ok = json_object_new_array();

    if (cmp == NULL || ok == NULL) {
        json_object_put(cmp);
        json_object_put(ok);
        return NULL;
    }
    /* Our key, and only it: the same name and create revision. */
    json_object_array_add(cmp, dlock__etcd_cmp_create(key, klen, create_rev));
    json_object_array_add(ok, dlock__etcd_delete_op(key, klen));
    return dlock__etcd_txn(cmp, ok, NULL);
}

json_object *dlock__etcd_body_watch(const char *key, size_t len,
                                    const char *end, size_t end_len,
                                    int64_t rev, int puts)
{
    json_object *body = json_object_new_object(),
                *req = json_object_new_object(),
                *filters = json_object_new_array();

    if (body == NULL || req == NULL || filters == NULL) {
        json_object_put(body);
        json_object_put(req);
        json_object_put(filters);
        return NULL;
    }
    json_object_object_add(req, "key", dlock__etcd_b64(key, len));
    if (end != NULL)
        json_object_object_add(req, "range_end", dlock__etcd_b64(end, end_len));
    json_object_object_add(req, "start_revision", dlock__etcd_i64(rev));
    /* A waiter wakes for DELETEs only; an observer (puts) for any
     * change: a new key, a new value (dlock_proclaim, etcdctl elect). */
    if (!puts) {
        json_object_array_add(filters, json_object_new_string("NOPUT"));
        json_object_object_add(req, "filters", filters);
    } else {
        json_object_put(filters);
    }
    json_object_object_add(body, "create_request", req);
    return body;
}

json_object *dlock__etcd_body_id(int64_t id)
{
    json_object *body = json_object_new_object();

    if (body != NULL)
        json_object_object_add(body, "ID", dlock__etcd_i64(id));
    return body;
}

json_object *dlock__etcd_body_ttl(int64_t ttl_s)
{
    json_object *body = json_object_new_object();

    if (body != NULL)
        json_object_object_add(body, "TTL", dlock__etcd_i64(ttl_s));
    return body;
}

json_object *dlock__etcd_body_suspend(const char *key, size_t klen,
                                      const char *rec)
{
    json_object *cmp = json_object_new_array(), *ok = json_object_new_array(),
                *fail = json_object_new_array();

    if (cmp == NULL || ok == NULL || fail == NULL) {
        json_object_put(cmp);
        json_object_put(ok);
        json_object_put(fail);
        return NULL;
    }
    /* Absent: put the record (no lease: it stays until resumed).  Else:
     * read the one there, left as it is. */
    json_object_array_add(cmp, dlock__etcd_cmp_create(key, klen, 0));
    json_object_array_add(ok, dlock__etcd_put_op(key, klen, rec, 0));
    json_object_array_add(fail, dlock__etcd_range_op(key, klen, NULL, 0, 0, 0));
    return dlock__etcd_txn(cmp, ok, fail);
}

json_object *dlock__etcd_body_resume(const char *key, size_t klen)
{
    json_object *body = json_object_new_object();

    if (body == NULL)
        return NULL;
    /* The record deleted comes back in the reply: what was lifted. */
    json_object_object_add(body, "key", dlock__etcd_b64(key, klen));
    json_object_object_add(body, "prev_kv", json_object_new_boolean(1));
    return body;
}

/* --- the golden copies --------------------------------------------------- */

static void emit_body(dlock__text_emit emit, void *arg, const char *name,
                      json_object *body)
{
    const char *s =
        body != NULL
            ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PRETTY |
                                                       JSON_C_TO_STRING_SPACED)
            : NULL;
    size_t n = s != NULL ? strlen(s) : 0;
    char *t = malloc(n + 2);

    if (t != NULL && s != NULL) {
        memcpy(t, s, n);
        t[n] = '\n';
        t[n + 1] = '\0';
    }
    emit(arg, "default", name,
         t != NULL && s != NULL ? t : "(no body: out of memory)\n");
    free(t);
    json_object_put(body);
}

void dlock__etcd_texts(dlock__text_emit emit, void *arg)
{
    /* An example: lock "NAME" with no ?prefix=, lease 0x694d7b1c2b3e4f50,
     * its key created at revision 42. */
    static const char pfx[] = "NAME/", key[] = "NAME/694d7b1c2b3e4f50",
                      rec[] = "{\"dlock\":1,\"token\":\"TOKEN\",\"host\":"
                              "\"HOST\",\"pid\":1234,\"since_ms\":0,"
                              "\"ttl_ms\":30000,\"limit\":1,\"shared\":0}";
    const int64_t lease = 0x694d7b1c2b3e4f50;
    const size_t plen = sizeof(pfx) - 1, klen = sizeof(key) - 1;

    emit_body(emit, arg, "acquire.json",
              dlock__etcd_body_acquire(pfx, plen, key, klen, rec, lease));
    emit_body(emit, arg, "queue.json",
              dlock__etcd_body_queue(pfx, plen, key, klen));
    emit_body(emit, arg, "release.json",
              dlock__etcd_body_delete_own(key, klen, 42));
    emit_body(emit, arg, "watch.json",
              dlock__etcd_body_watch(key, klen, NULL, 0, 43, 0));
    emit_body(emit, arg, "keepalive.json", dlock__etcd_body_id(lease));
    emit_body(emit, arg, "grant.json", dlock__etcd_body_ttl(32));
    /* NAME's suspension record, P NAME \xff suspend. */
    {
        static const char skey[] = "NAME\xff"
                                   "suspend",
                          srec[] = "{\"by\":\"ops@bastion\",\"since_ms\":"
                                   "1700000000000,\"reason\":\"REASON\"}";

        emit_body(emit, arg, "suspend.json",
                  dlock__etcd_body_suspend(skey, sizeof(skey) - 1, srec));
        emit_body(emit, arg, "resume.json",
                  dlock__etcd_body_resume(skey, sizeof(skey) - 1));
    }
}
