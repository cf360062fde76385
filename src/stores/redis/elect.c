/*
 * elect.c - the Redis store's leader values and observers (store.h:
 * value_set, value_get, watch, watch_end).
 *
 * The value lives in a key of dlock's own beside the lock's, derived as
 * the fence key is (rkeys.c), so with Cluster it shares the lock key's
 * hash slot:
 *   P NAME \xff leader  a hash: fence (the term it was written under)
 *                       and value; never expires (status() pairs it
 *                       with the holder's fence, elect.c of the core)
 * Never in the lock key itself, which a plain SET NX peer reads.
 * value_set is one script (lua/value_set.lua): ownership as run_begin
 * checks it, the record (dropped for a leader without a value), and a
 * "v" on the name's release channel.
 * value_get is one HMGET.
 *
 * An observer subscribes to the release channel on a connection of its
 * own (not the handle's subscriber, whose messages wake lock waiters one
 * at a time): a release publishes there ("r", or "h" on a hand-off), and
 * so does value_set.  Every message is a wake-up only (R1): its text is
 * never read.  A lease that runs out (a dead holder) publishes nothing;
 * the core's re-read every second sees it.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locks.h"

#define FENCE_WORD "fence"
#define LEADER_WORD "leader"

/* The name's keys, and its leader key: the fence key with its word
 * replaced (same tag, same slot). */
struct lkeys {
    struct dlock__rkeys k;
    char *leader;
    size_t leader_len;
};

static int lkeys_of(struct redis_store *rs, const char *name, size_t len,
                    struct lkeys *lk)
{
    size_t base;
    int rc;

    memset(lk, 0, sizeof(*lk));
    rc = dlock__redis_keys_of(rs, name, len, &lk->k);
    if (rc != DLOCK_OK)
        return rc;
    base = lk->k.klen[1] - (sizeof(FENCE_WORD) - 1);
    lk->leader = malloc(base + sizeof(LEADER_WORD));
    if (lk->leader == NULL) {
        free(lk->k.buf);
        return dlock__enomem();
    }
    memcpy(lk->leader, lk->k.k[1], base);
    memcpy(lk->leader + base, LEADER_WORD, sizeof(LEADER_WORD));
    lk->leader_len = base + sizeof(LEADER_WORD) - 1;
    return DLOCK_OK;
}

static void lkeys_free(struct lkeys *lk)
{
    free(lk->k.buf);
    free(lk->leader);
}

int dlock__redis_value_set(struct dlock_store *s, struct dlock_lock *lk,
                           const char *value, size_t len)
{
    struct redis_store *rs = (struct redis_store *)s;
    char fence[24];
    const char *keys[4], *a[5];
    size_t klen[4], al[5];
    struct lkeys k;
    redisReply *r;
    long long v;
    int rc;

    if (dlock__redis_stale(lk, dlock__redis_epoch(rs, lk)))
        return dlock__redis_drop_stale(rs, lk);
    rc = lkeys_of(rs, lk->name, lk->name_len, &k);
    if (rc != DLOCK_OK)
        return rc;
    keys[0] = k.k.k[0];
    klen[0] = k.k.klen[0];
    keys[1] = k.k.k[2];
    klen[1] = k.k.klen[2];
    keys[2] = k.k.k[6];
    klen[2] = k.k.klen[6];
    keys[3] = k.leader;
    klen[3] = k.leader_len;
    snprintf(fence, sizeof(fence), "%llu", (unsigned long long)lk->fence);
    a[0] = lk->token;
    al[0] = strlen(lk->token);
    a[1] = lk->limit > 1 ? "m" : lk->shared ? "s" : "x";
    al[1] = 1;
    a[2] = fence;
    al[2] = strlen(fence);
    /* An empty value is none (as the core's dlock_lock view has it). */
    a[3] = value != NULL ? value : "";
    al[3] = value != NULL ? len : 0;
    a[4] = al[3] > 0 ? "1" : "0";
    al[4] = 1;
    /* Retried: a second run writes the same record. */
    pthread_mutex_lock(&rs->mu);
    r = dlock__redis_run_keys(rs, S_VALUE_SET, 4, keys, klen, 5, a, al, 1, &rc);
    pthread_mutex_unlock(&rs->mu);
    lkeys_free(&k);
    rc = dlock__redis_int_reply(rs, r, rc, &v);
    if (rc != DLOCK_OK)
        return rc;
    if (dlock__redis_stale(lk, dlock__redis_epoch(rs, lk)))
        return dlock__redis_drop_stale(rs, lk);
    if (v != 1)
        return dlock__lost(lk, "its lease ran out, it was broken, or the "
                               "server lost it");
    return DLOCK_OK;
}

int dlock__redis_value_get(struct dlock_store *s, const char *name,
                           uint64_t *fence, char **value, size_t *len)
{
    struct redis_store *rs = (struct redis_store *)s;
    const char *argv[4] = {"HMGET", NULL, "fence", "value"};
    size_t lens[4] = {5, 0, 5, 5};
    const redisReply *f, *v;
    struct lkeys k;
    redisReply *r;
    unsigned long long n;
    char *e;
    int rc;

    *fence = 0;
    *value = NULL;
    *len = 0;
    rc = lkeys_of(rs, name, strlen(name), &k);
    if (rc != DLOCK_OK)
        return rc;
    argv[1] = k.leader;
    lens[1] = k.leader_len;
    pthread_mutex_lock(&rs->mu);
    rc = dlock__redis_cmd(
        rs, rs->cluster ? (int)dlock__redis_slot(k.k.k[0], k.k.klen[0]) : -1, 1,
        &r, 4, argv, lens);
    pthread_mutex_unlock(&rs->mu);
    lkeys_free(&k);
    if (rc != DLOCK_OK)
        return rc;
    if (r->type == REDIS_REPLY_ERROR) {
        rc = dlock__redis_reply_error(rs, r, "HMGET");
        freeReplyObject(r);
        return rc;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        return dlock__redis_bad_reply(rs, r);
    f = r->element[0];
    v = r->element[1];
    /* No record, or one dlock did not write (a fence that is no number):
     * none. */
    if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
        f->len == 0 || f->len > 20 || f->str[0] < '1' || f->str[0] > '9') {
        freeReplyObject(r);
        return DLOCK_OK;
    }
    n = strtoull(f->str, &e, 10);
    if (*e != '\0') {
        freeReplyObject(r);
        return DLOCK_OK;
    }
    *value = malloc(v->len + 1);
    if (*value == NULL) {
        freeReplyObject(r);
        return dlock__enomem();
    }
    memcpy(*value, v->str, v->len);
    (*value)[v->len] = '\0';
    *len = v->len;
    *fence = (uint64_t)n;
    freeReplyObject(r);
    return DLOCK_OK;
}

/* --- watch ----------------------------------------------------------- */

/* An observer's own subscriber connection (NULL: the server refused
 * SUBSCRIBE; each slice is then a sleep). */
struct watch {
    struct rconn *c;
};

static int watch_broken(struct redis_store *rs, const struct rconn *c)
{
    return dlock__seterr(DLOCK_EUNAVAIL,
                         "%s: the observer's subscription broke (%s)", rs->url,
                         c->err ? c->errstr : "connection closed");
}

/* Take the replies that have arrived: 1 if one is a message (or an
 * error answer), 0 if none, -1 when the connection broke. */
static int take_messages(struct rconn *c)
{
    int got = 0;

    for (;;) {
        void *reply = NULL;
        redisReply *r;

        if (dlock__rconn_next_reply(c, &reply) != REDIS_OK)
            return -1;
        if (reply == NULL)
            return got;
        r = reply;
        /* Any message wakes: what it says is not read (R1). */
        if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
            r->element[0]->type != REDIS_REPLY_STRING ||
            strcmp(r->element[0]->str, "subscribe") != 0)
            got = 1;
        freeReplyObject(r);
    }
}

/* Subscribe on a new connection and wait for the server's confirmation,
 * so that a change published after this returns is heard. */
static int subscribe(struct redis_store *rs, const char *name,
                     struct watch **out)
{
    const char *argv[2] = {"SUBSCRIBE", NULL};
    size_t lens[2] = {9, 0};
    struct dlock__nopipe np;
    struct dlock__rkeys k;
    struct watch *w;
    redisReply *r;
    int rc = DLOCK_OK;

    rc = dlock__redis_keys_of(rs, name, strlen(name), &k);
    if (rc != DLOCK_OK)
        return rc;
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        free(k.buf);
        return dlock__enomem();
    }
    dlock__redis_nopipe_begin(&np);
    w->c = dlock__redis_connect(rs, 0, &rc);
    if (w->c == NULL) {
        dlock__redis_nopipe_end(&np);
        free(k.buf);
        free(w);
        return rc;
    }
    /* (Cluster's any-node connect leaves its "no node answered" set.) */
    rc = DLOCK_OK;
    dlock__clearerr();
    /* A silent cut shows in time to a kept-alive socket (meanwhile the
     * core's re-read every second still sees every change). */
    dlock__rconn_keepalive(w->c);
    argv[1] = k.chan;
    lens[1] = k.chan_len;
    r = dlock__rconn_command_argv(w->c, 2, argv, lens);
    dlock__redis_nopipe_end(&np);
    free(k.buf);
    if (r == NULL) {
        rc = watch_broken(rs, w->c);
    } else if (r->type == REDIS_REPLY_ERROR) {
        /* Refused (an ACL without channel rights, whose value_set's
         * PUBLISH is skipped too): the observer re-reads each slice. */
        dlock__rconn_free(w->c);
        w->c = NULL;
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
               r->element[0]->type != REDIS_REPLY_STRING ||
               strcmp(r->element[0]->str, "subscribe") != 0) {
        rc = dlock__seterr(DLOCK_ESTORE, "%s: unexpected answer to SUBSCRIBE",
                           rs->url);
    }
    freeReplyObject(r);
    if (rc != DLOCK_OK) {
        dlock__rconn_free(w->c);
        free(w);
        return rc;
    }
    *out = w;
    return DLOCK_OK;
}

int dlock__redis_watch(struct dlock_store *s, const char *name, void **state,
                       int64_t slice_ms)
{
    struct redis_store *rs = (struct redis_store *)s;
    struct watch *w = *state;
    int64_t end = dlock__now_ms() + slice_ms;
    int got;

    if (w == NULL) {
        int rc = subscribe(rs, name, &w);

        if (rc != DLOCK_OK)
            return rc;
        *state = w;
        if (slice_ms <= 0)
            return DLOCK_OK;
    }
    if (w->c == NULL) {
        (void)dlock__cancel_sleep_ms(slice_ms);
        return DLOCK_OK;
    }
    /* A message that came with an earlier answer. */
    got = take_messages(w->c);
    while (got == 0) {
        struct pollfd p[2] = {{w->c->fd, POLLIN, 0}, {-1, POLLIN, 0}};
        int64_t left = end - dlock__now_ms();
        int n;

        p[1].fd = dlock__cancel_fd();
        if (left <= 0 || dlock__cancelled())
            return DLOCK_OK;
        n = poll(p, p[1].fd >= 0 ? 2 : 1, (int)(left < 1000 ? left : 1000));
        if (n < 0)
            continue; /* EINTR: the loop looks at the time again */
        if (p[1].fd >= 0 && (p[1].revents & POLLIN))
            return DLOCK_OK; /* the core sees the cancel */
        if (n == 0)
            continue;
        if (dlock__rconn_read(w->c) != REDIS_OK)
            return watch_broken(rs, w->c);
        got = take_messages(w->c);
    }
    if (got < 0)
        return watch_broken(rs, w->c);
    return DLOCK_OK;
}

void dlock__redis_watch_end(struct dlock_store *s, void *state)
{
    struct watch *w = state;

    (void)s;
    if (w == NULL)
        return;
    /* Closing the connection ends the subscription. */
    if (w->c != NULL)
        dlock__rconn_free(w->c);
    free(w);
}
