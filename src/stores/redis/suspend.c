/*
 * suspend.c - a job's suspension on the Redis store (store.h: suspend,
 * resume, suspension, suspensions; include/dlock.h, "Suspension").
 *
 * The record is a key of dlock's own beside the run keys, derived as the
 * fence key is (rkeys.c), so that with Cluster it shares the lock key's
 * hash slot and run_begin's one script reads it:
 *   P NAME \xff suspended  a hash: by (who), since (ms on the server's
 *                          clock, TIME inside the script, as run_begin's
 *                          now) and reason ("" for none); never expires
 * Each op is one script (lua/suspend.lua, resume.lua, suspension.lua:
 * read and write in one atomic step), so two racing suspends leave the
 * first's record and tell the second.  run_begin.lua looks at the record
 * before any rule (runs.c).  suspensions scans every master for the
 * records under a prefix (scan.c's dlock__redis_derived_names, as
 * last_runs does), then reads each with suspension.lua.
 *
 * A record is read as anyone who can write the server may have left it:
 * a key that is no hash, a field missing, not a string, too long for its
 * field or with a NUL in it reads as "?" (since as 0); it still
 * suspends.  The core vets the rest (UTF-8, control characters).
 */
#include <stdlib.h>
#include <string.h>

#include "locks.h"

/* An answer's text into dst (size bytes), "?" for what dlock cannot have
 * written there. */
static void copy_text(const redisReply *e, char *dst, size_t size)
{
    if (e->type != REDIS_REPLY_STRING || e->len >= size ||
        memchr(e->str, '\0', e->len) != NULL) {
        dlock__strlcpy(dst, "?", size);
        return;
    }
    memcpy(dst, e->str, e->len);
    dst[e->len] = '\0';
}

/* since: decimal ms as suspend.lua writes them; anything else 0. */
static int64_t copy_ms(const redisReply *e)
{
    int64_t v = 0;

    if (e->type != REDIS_REPLY_STRING || e->len == 0 || e->len > 18)
        return 0;
    for (size_t i = 0; i < e->len; i++) {
        if (e->str[i] < '0' || e->str[i] > '9')
            return 0;
        v = v * 10 + (e->str[i] - '0');
    }
    return v;
}

void dlock__redis_suspended_run(const redisReply *by, const redisReply *since,
                                dlock_run *last)
{
    memset(last, 0, sizeof(*last));
    last->result = DLOCK_RUN_SUSPENDED;
    last->status = -1;
    last->start_ms = copy_ms(since);
    copy_text(by, last->host, sizeof(last->host));
}

/* Script s on name's record (ARGV nargs of a): {0} (*was 0) or {1, by,
 * since, reason} (*was 1, *cur filled). */
static int record_script(struct redis_store *rs, int s, const char *name,
                         int nargs, const char **a, const size_t *al, int retry,
                         int *was, dlock_suspension *cur)
{
    const char *keys[1];
    size_t klen[1];
    char *key;
    redisReply *r;
    int rc;

    *was = 0;
    rc = dlock__redis_derived_key(
        rs, name, strlen(name), DLOCK__REDIS_SUSPENDED_SUFFIX, &key, &klen[0]);
    if (rc != DLOCK_OK)
        return rc;
    keys[0] = key;
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run_keys(rs, s, 1, keys, klen, nargs, a, al, retry, &rc);
    pthread_mutex_unlock(&rs->mu);
    free(key);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        (r->element[0]->integer != 0 && r->element[0]->integer != 1) ||
        (r->element[0]->integer == 1 && r->elements != 4))
        return dlock__redis_bad_reply(rs, r);
    if (r->element[0]->integer == 1) {
        *was = 1;
        copy_text(r->element[1], cur->by, sizeof(cur->by));
        cur->since_ms = copy_ms(r->element[2]);
        copy_text(r->element[3], cur->reason, sizeof(cur->reason));
        dlock__strlcpy(cur->name, name, sizeof(cur->name));
    }
    freeReplyObject(r);
    return DLOCK_OK;
}

int dlock__redis_suspend(struct dlock_store *s, const char *name,
                         const char *by, const char *reason, int *was,
                         dlock_suspension *cur)
{
    const char *a[2] = {by, reason};
    size_t al[2] = {strlen(by), strlen(reason)};

    /* Not retried: a second try after a first that went through would
     * find its own record and say "suspended already". */
    return record_script((struct redis_store *)s, S_SUSPEND, name, 2, a, al, 0,
                         was, cur);
}

int dlock__redis_resume(struct dlock_store *s, const char *name, int *was,
                        dlock_suspension *cur)
{
    /* Not retried either: a second try would find none and lose what was
     * lifted. */
    return record_script((struct redis_store *)s, S_RESUME, name, 0, NULL, NULL,
                         0, was, cur);
}

int dlock__redis_suspension(struct dlock_store *s, const char *name, int *was,
                            dlock_suspension *cur)
{
    return record_script((struct redis_store *)s, S_SUSPENSION, name, 0, NULL,
                         NULL, 1, was, cur);
}

int dlock__redis_suspensions(struct dlock_store *s, const char *prefix,
                             dlock_suspension_cb cb, void *payload)
{
    struct redis_store *rs = (struct redis_store *)s;
    struct dlock__names names = {0};
    dlock_suspension *cur;
    int rc, was;

    cur = malloc(sizeof(*cur));
    if (cur == NULL)
        return dlock__enomem();
    /* Names first (SCAN may return a key twice), then each one's record
     * without the connection held, so cb may call the library; a record
     * lifted in between is passed over. */
    rc = dlock__redis_derived_names(rs, prefix, DLOCK__REDIS_SUSPENDED_SUFFIX,
                                    &names);
    for (size_t i = 0; i < names.n && rc == DLOCK_OK; i++) {
        memset(cur, 0, sizeof(*cur));
        rc = dlock__redis_suspension(s, names.v[i], &was, cur);
        if (rc == DLOCK_OK && was)
            rc = cb(cur, payload);
    }
    dlock__names_free(&names);
    free(cur);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}
