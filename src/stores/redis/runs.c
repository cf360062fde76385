/*
 * runs.c - the Redis store's run records (include/dlock.h, "Runs";
 * src/core/store.h: run_begin, run_end, keep_runs, kept_runs, runs,
 * last_runs).
 *
 * Two keys per name, derived as the fence key is (keys.c), so that with
 * Cluster they share the lock key's hash slot:
 *   P NAME \xff runs   a list of the kept runs, newest first, each
 *                      "fence start end result status pid host" (start
 *                      and end in ms on the server's clock, end 0 while
 *                      running or abandoned; result a dlock_run_result)
 *   P NAME \xff run    the summary: a hash, start (the last run's start),
 *                      ok (the record of a run that succeeded, as it
 *                      ended; kept when the list drops it) and keep (how
 *                      many runs the name keeps, dlock_keep_runs(); none:
 *                      DLOCK_RUNS_KEPT; lua/fn_keep.lua reads it)
 * Neither expires.  Beginning a run is one script (ownership, the name's
 * suspension (suspend.c), decision, record, trim to the setting); so is
 * ending one, and setting keep (the trim in the same script).  Neither
 * run script walks the list: begin looks at its head only (only the
 * newest can be running), LTRIM drops the tail it put over the setting,
 * and end finds its run from the head (docs/stores/redis.md, "Runs kept").
 * Reading them is LRANGE in pages (RUNS_PAGE); the names under a prefix
 * come from SCAN over the summary keys (every master of a cluster).
 * Nothing here runs in a plain acquire or release.  The scripts are
 * lua/run_begin.lua, run_end.lua, keep_runs.lua and kept_runs.lua.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locks.h"

/* --- keys ------------------------------------------------------------ */

#define RUNS_SUFFIX                                                            \
    "\xff"                                                                     \
    "runs"
#define SUMMARY_SUFFIX                                                         \
    "\xff"                                                                     \
    "run"
#define FENCE_WORD "fence"

/* A name's lock, readers and semaphore keys, its two run keys and its
 * suspension record, in the order of the scripts' KEYS (run_end takes the
 * first five). */
struct run_keys {
    struct dlock__rkeys k;
    char *buf;
    const char *key[6];
    size_t klen[6];
};

static void run_keys_free(struct run_keys *rk)
{
    free(rk->k.buf);
    free(rk->buf);
}

/* The run keys are the fence key with its word replaced: same tag, same
 * slot, and as unable to be another name's key. */
static int derive(const struct dlock__rkeys *k, const char *suffix, char *out,
                  size_t *len)
{
    size_t base = k->klen[1] - (sizeof(FENCE_WORD) - 1) - 1;

    memcpy(out, k->k[1], base);
    memcpy(out + base, suffix, strlen(suffix) + 1);
    *len = base + strlen(suffix);
    return DLOCK_OK;
}

static int run_keys_of(struct redis_store *rs, const char *name, size_t len,
                       struct run_keys *rk)
{
    size_t base;
    int rc;

    memset(rk, 0, sizeof(*rk));
    rc = dlock__redis_keys_of(rs, name, len, &rk->k);
    if (rc != DLOCK_OK)
        return rc;
    /* Room for each derived key: the fence key's length less its word,
     * plus the longest suffix and its NUL. */
    _Static_assert(sizeof(DLOCK__REDIS_SUSPENDED_SUFFIX) >= sizeof(RUNS_SUFFIX),
                   "the suspension suffix must be the longest");
    base = rk->k.klen[1] + sizeof(DLOCK__REDIS_SUSPENDED_SUFFIX);
    rk->buf = malloc(3 * base);
    if (rk->buf == NULL) {
        free(rk->k.buf);
        return dlock__enomem();
    }
    derive(&rk->k, RUNS_SUFFIX, rk->buf, &rk->klen[3]);
    derive(&rk->k, SUMMARY_SUFFIX, rk->buf + base, &rk->klen[4]);
    derive(&rk->k, DLOCK__REDIS_SUSPENDED_SUFFIX, rk->buf + 2 * base,
           &rk->klen[5]);
    rk->key[3] = rk->buf;
    rk->key[4] = rk->buf + base;
    rk->key[5] = rk->buf + 2 * base;
    rk->key[0] = rk->k.k[0];
    rk->klen[0] = rk->k.klen[0];
    rk->key[1] = rk->k.k[2];
    rk->klen[1] = rk->k.klen[2];
    rk->key[2] = rk->k.k[6];
    rk->klen[2] = rk->k.klen[6];
    return DLOCK_OK;
}

/* --- records --------------------------------------------------------- */

/* A record "fence start end result status pid host" into out (its name
 * left as it is): 0, or -1 when it is not one (a key someone else wrote
 * to), which is then passed over. */
static int parse_run(const char *s, dlock_run *out)
{
    long long v[5];
    unsigned long long f;
    char *e;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    f = strtoull(s, &e, 10);
    if (errno != 0 || *e != ' ' || f == 0)
        return -1;
    s = e + 1;
    for (int i = 0; i < 5; i++) {
        if (*s != '-' && (*s < '0' || *s > '9'))
            return -1;
        v[i] = strtoll(s, &e, 10);
        if (errno != 0 || *e != ' ')
            return -1;
        s = e + 1;
    }
    if (v[2] < DLOCK_RUN_RUNNING || v[2] > DLOCK_RUN_TIMEDOUT ||
        v[3] < INT_MIN || v[3] > INT_MAX)
        return -1;
    out->fence = (uint64_t)f;
    out->start_ms = v[0];
    out->end_ms = v[1];
    out->result = (int)v[2];
    out->status = (int)v[3];
    out->pid = v[4];
    dlock__strlcpy(out->host, s, sizeof(out->host));
    return 0;
}

/* --- run_begin, run_end ---------------------------------------------- */

static int lost(const struct dlock_lock *lk)
{
    return dlock__lost(lk, "its lease ran out, it was broken, or the "
                           "server lost it");
}

int dlock__redis_run_begin(struct dlock_store *s, struct dlock_lock *lk,
                           const dlock_run_rule *rule, const char *host,
                           int64_t pid, int *go, dlock_run *last)
{
    struct redis_store *rs = (struct redis_store *)s;
    char period[24], fence[24], pidb[24];
    const char *a[7];
    size_t al[7];
    struct run_keys rk;
    redisReply *r;
    long long v;
    int rc, bad;

    /* Taken before a failover: LOST, as every other call on it says. */
    if (dlock__redis_stale(lk, dlock__redis_epoch(rs, lk)))
        return dlock__redis_drop_stale(rs, lk);
    rc = run_keys_of(rs, lk->name, lk->name_len, &rk);
    if (rc != DLOCK_OK)
        return rc;
    snprintf(period, sizeof(period), "%lld", (long long)rule->period_ms);
    snprintf(fence, sizeof(fence), "%llu", (unsigned long long)lk->fence);
    snprintf(pidb, sizeof(pidb), "%lld", (long long)pid);
    a[0] = lk->token;
    a[1] = lk->limit > 1 ? "m" : lk->shared ? "s" : "x";
    a[2] = rule->once ? "1" : "0";
    a[3] = period;
    a[4] = fence;
    a[5] = pidb;
    a[6] = host;
    for (int i = 0; i < 7; i++)
        al[i] = strlen(a[i]);
    /* Not retried: a second try after a first that went through would
     * find its own run and skip. */
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run_keys(rs, S_RUN_BEGIN, 6, rk.key, rk.klen, 7, a, al, 0,
                              &rc);
    pthread_mutex_unlock(&rs->mu);
    run_keys_free(&rk);
    if (r == NULL)
        return rc;
    /* {-1}, {0 or 1, record}, or {2, by, since} of a suspension. */
    bad = r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
          r->element[0]->type != REDIS_REPLY_INTEGER;
    v = bad ? 0 : r->element[0]->integer;
    if (!bad && v == 2)
        bad = r->elements != 3;
    else if (!bad && v != -1)
        bad = v != 0 && v != 1 ? 1
                               : r->elements != 2 ||
                                     r->element[1]->type != REDIS_REPLY_STRING;
    if (bad)
        return dlock__redis_bad_reply(rs, r);
    if (v == 2)
        dlock__redis_suspended_run(r->element[1], r->element[2], last);
    else if (v != -1 && parse_run(r->element[1]->str, last) != 0)
        memset(last, 0, sizeof(*last));
    freeReplyObject(r);
    /* The script ran on a master that took over since lk was taken. */
    if (v != -1 && dlock__redis_stale(lk, dlock__redis_epoch(rs, lk))) {
        memset(last, 0, sizeof(*last));
        return dlock__redis_drop_stale(rs, lk);
    }
    if (v == -1)
        return lost(lk);
    *go = v == 1;
    return DLOCK_OK;
}

int dlock__redis_run_end(struct dlock_store *s, struct dlock_lock *lk,
                         int result, int status)
{
    struct redis_store *rs = (struct redis_store *)s;
    char fence[24], res[8], st[16];
    const char *a[3] = {fence, res, st};
    size_t al[3];
    struct run_keys rk;
    redisReply *r;
    int rc;

    rc = run_keys_of(rs, lk->name, lk->name_len, &rk);
    if (rc != DLOCK_OK)
        return rc;
    snprintf(fence, sizeof(fence), "%llu", (unsigned long long)lk->fence);
    snprintf(res, sizeof(res), "%d", result);
    snprintf(st, sizeof(st), "%d", status);
    for (int i = 0; i < 3; i++)
        al[i] = strlen(a[i]);
    /* Retried: a second try writes the same end (a moment later). */
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run_keys(rs, S_RUN_END, 5, rk.key, rk.klen, 3, a, al, 1,
                              &rc);
    pthread_mutex_unlock(&rs->mu);
    run_keys_free(&rk);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        return dlock__redis_bad_reply(rs, r);
    freeReplyObject(r);
    return DLOCK_OK;
}

/* --- keep_runs, kept_runs ------------------------------------------ */

int dlock__redis_keep_runs(struct dlock_store *s, const char *name, unsigned n)
{
    struct redis_store *rs = (struct redis_store *)s;
    char nb[16];
    const char *a[1] = {nb};
    size_t al[1];
    struct run_keys rk;
    redisReply *r;
    int rc;

    rc = run_keys_of(rs, name, strlen(name), &rk);
    if (rc != DLOCK_OK)
        return rc;
    snprintf(nb, sizeof(nb), "%u", n);
    al[0] = strlen(nb);
    /* Retried: a second try records the same n and drops nothing more. */
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run_keys(rs, S_KEEP_RUNS, 2, &rk.key[3], &rk.klen[3], 1, a,
                              al, 1, &rc);
    pthread_mutex_unlock(&rs->mu);
    run_keys_free(&rk);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        return dlock__redis_bad_reply(rs, r);
    rc = r->integer >= 0
             ? DLOCK_OK
             : dlock__seterr(DLOCK_ESTORE,
                             "the run keys of '%s' hold something other "
                             "than dlock's list and hash (another client's "
                             "key?): nothing recorded",
                             name);
    freeReplyObject(r);
    return rc;
}

int dlock__redis_kept_runs(struct dlock_store *s, const char *name, unsigned *n)
{
    struct redis_store *rs = (struct redis_store *)s;
    struct run_keys rk;
    redisReply *r;
    int rc;

    *n = DLOCK_RUNS_KEPT;
    rc = run_keys_of(rs, name, strlen(name), &rk);
    if (rc != DLOCK_OK)
        return rc;
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run_keys(rs, S_KEPT_RUNS, 1, &rk.key[4], &rk.klen[4], 0,
                              NULL, NULL, 1, &rc);
    pthread_mutex_unlock(&rs->mu);
    run_keys_free(&rk);
    if (r == NULL)
        return rc;
    if (r->type != REDIS_REPLY_INTEGER)
        return dlock__redis_bad_reply(rs, r);
    /* The script answers only what fn_keep.lua lets through; checked
     * again all the same, as anything a server says. */
    if (r->integer >= 1 && r->integer <= DLOCK_RUNS_KEPT_MAX)
        *n = (unsigned)r->integer;
    freeReplyObject(r);
    return DLOCK_OK;
}

/* --- runs, last_runs ------------------------------------------------- */

/* Entries read per LRANGE: a name may keep DLOCK_RUNS_KEPT_MAX runs, and
 * one answer of them all (up to some 3 MB) would hold the server that
 * long; pages of this many keep each call short. */
#define RUNS_PAGE 1000
/* Room for an entry's identity: a run's is at most 20 + 1 + 20 bytes. */
#define IDENT_MAX 64

/* An entry's identity across pages: its first two words (fence and
 * start), which run_end and the abandoned mark leave as they are. */
static size_t ident_len(const redisReply *e)
{
    const char *sp;

    if (e->type != REDIS_REPLY_STRING)
        return 0;
    sp = memchr(e->str, ' ', e->len);
    if (sp != NULL)
        sp = memchr(sp + 1, ' ', e->len - (size_t)(sp + 1 - e->str));
    return sp != NULL ? (size_t)(sp - e->str) : e->len;
}

/* The first entry of page r to tell: the one after ident (the last
 * entry of the page before, which this page starts with unless runs
 * went in front since: then it is further down), 0 on the first page
 * (len 0), or r->elements when it is not on the page (dropped since,
 * or pushed past it by as many new runs): nothing more is told then,
 * rather than a run twice or out of order. */
static size_t page_from(const redisReply *r, const char *ident, size_t len)
{
    if (len == 0)
        return 0;
    if (len > IDENT_MAX)
        return r->elements;
    for (size_t i = 0; i < r->elements; i++)
        if (ident_len(r->element[i]) == len &&
            memcmp(r->element[i]->str, ident, len) == 0)
            return i + 1;
    return r->elements;
}

int dlock__redis_runs(struct dlock_store *s, const char *name, unsigned max,
                      dlock_run_cb cb, void *payload)
{
    struct redis_store *rs = (struct redis_store *)s;
    char from[24], to[24], ident[IDENT_MAX];
    const char *argv[4] = {"LRANGE", NULL, from, to};
    size_t lens[4] = {6, 0, 0, 0}, ilen = 0, i;
    unsigned told = 0, read = 0;
    long long at = 0, want;
    struct run_keys rk;
    redisReply *r = NULL;
    dlock_run *run;
    int rc, slot, more = 1;

    rc = run_keys_of(rs, name, strlen(name), &rk);
    if (rc != DLOCK_OK)
        return rc;
    run = calloc(1, sizeof(*run));
    if (run == NULL) {
        run_keys_free(&rk);
        return dlock__enomem();
    }
    dlock__strlcpy(run->name, name, sizeof(run->name));
    slot = rs->cluster ? (int)dlock__redis_slot(rk.key[0], rk.klen[0]) : -1;
    argv[1] = rk.key[3];
    lens[1] = rk.klen[3];
    /* The first max that are records, newest first, a page at a time:
     * an entry someone else pushed takes no run's place.  Each page
     * after the first starts with the last entry of the one before, to
     * find where it left off should runs have gone in front between the
     * two; at most twice the most a name keeps is read, however much
     * someone else pushed. */
    while (more && told < max && rc == DLOCK_OK &&
           read < 2u * DLOCK_RUNS_KEPT_MAX) {
        /* The first page what is asked (last_runs asks 1); the next
         * ones a little more, for entries that are no runs. */
        want = ilen == 0 ? max - told : max - told + 16;
        if (want > RUNS_PAGE)
            want = RUNS_PAGE;
        if (ilen > 0)
            want++;
        snprintf(from, sizeof(from), "%lld", at);
        snprintf(to, sizeof(to), "%lld", at + want - 1);
        lens[2] = strlen(from);
        lens[3] = strlen(to);
        pthread_mutex_lock(&rs->mu);
        rc = dlock__redis_cmd(rs, slot, 1, &r, 4, argv, lens);
        pthread_mutex_unlock(&rs->mu);
        if (rc != DLOCK_OK)
            break;
        if (r->type == REDIS_REPLY_ERROR) {
            rc = dlock__redis_reply_error(rs, r, "LRANGE");
            freeReplyObject(r);
            break;
        }
        if (r->type != REDIS_REPLY_ARRAY) {
            rc = dlock__redis_bad_reply(rs, r);
            break;
        }
        more = r->elements == (size_t)want && r->elements > 0;
        read += (unsigned)r->elements;
        i = page_from(r, ident, ilen);
        if (ilen > 0 && i == r->elements)
            more = 0;
        for (; i < r->elements && told < max && rc == DLOCK_OK; i++) {
            if (r->element[i]->type != REDIS_REPLY_STRING ||
                parse_run(r->element[i]->str, run) != 0)
                continue;
            told++;
            rc = cb(run, payload);
        }
        if (more) {
            const redisReply *e = r->element[r->elements - 1];

            /* A run's two words fit; anything else (no string, or
             * longer) cannot be found again: the next page ends it. */
            ilen = ident_len(e);
            if (ilen == 0 || ilen > IDENT_MAX)
                ilen = IDENT_MAX + 1;
            else
                memcpy(ident, e->str, ilen);
            at += (long long)r->elements - 1;
        }
        freeReplyObject(r);
    }
    free(run);
    run_keys_free(&rk);
    return rc;
}

int dlock__redis_last_runs(struct dlock_store *s, const char *prefix,
                           dlock_run_cb cb, void *payload)
{
    struct redis_store *rs = (struct redis_store *)s;
    struct dlock__names names = {0};
    int rc;

    /* Names first (SCAN may return a key twice), then each one's newest
     * run without the connection held, so cb may call the library. */
    rc = dlock__redis_derived_names(rs, prefix, SUMMARY_SUFFIX, &names);
    for (size_t i = 0; i < names.n && rc == DLOCK_OK; i++)
        rc = dlock__redis_runs(s, names.v[i], 1, cb, payload);
    dlock__names_free(&names);
    if (rc == DLOCK_OK)
        dlock__clearerr();
    return rc;
}
