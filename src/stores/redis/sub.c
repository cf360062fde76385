/*
 * sub.c - the subscriber connection: its listener thread, the channels
 * this handle's waiters wait on, and the waiters parked on each.
 *
 * One connection per handle, opened on the first wait and kept, read by a
 * listener thread.  Each channel is reference-counted by its waiters and
 * unsubscribed when the last one leaves.  A release message (or a keyspace
 * event saying the key is gone) wakes one waiter of the channel, the
 * longest waiting: only one of them can win, and waking all would have
 * them all retry at once.  Everything here runs under smu.
 *
 * A message is a wake-up, never a grant: anyone allowed to PUBLISH
 * (an ACL user with +@pubsub only, who cannot read a key), a man in the
 * middle on plain redis:// or a hostile server can send any message on
 * any channel, and PUBSUB CHANNELS lists the waiters' own.  So nothing
 * read here is taken as proof of anything: a hand-off message only wakes
 * its waiter, whose attempt (one script, which sees its token holding
 * the lock) says whether it owns the lock and with what fence; numbers in
 * messages are clamped; a message that makes no sense wakes at most one
 * waiter, as a release message does.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locks.h"

static void wake_all(struct redis_store *rs)
{
    for (struct chan *c = rs->chans; c != NULL; c = c->next)
        for (struct waiter *w = c->head; w != NULL; w = w->next)
            pthread_cond_signal(w->cv);
}

/* Wake the longest waiting of c's waiters not yet woken. */
static void wake_one(struct chan *c)
{
    for (struct waiter *w = c->head; w != NULL; w = w->next)
        if (!w->woken) {
            w->woken = 1;
            pthread_cond_signal(w->cv);
            return;
        }
}

static struct chan *find_chan(struct redis_store *rs, const char *name,
                              size_t len)
{
    for (struct chan *c = rs->chans; c != NULL; c = c->next)
        if (c->len == len && memcmp(c->name, name, len) == 0)
            return c;
    return NULL;
}

/* The channel (release or keyspace, *ks tells) a message came on. */
static struct chan *chan_of(struct redis_store *rs, const char *name,
                            size_t len, int *ks)
{
    for (struct chan *c = rs->chans; c != NULL; c = c->next) {
        if (c->len == len && memcmp(c->name, name, len) == 0) {
            *ks = 0;
            return c;
        }
        if (c->ks != NULL && c->ks_len == len &&
            memcmp(c->ks, name, len) == 0) {
            *ks = 1;
            return c;
        }
    }
    return NULL;
}

/* Remember what an (UN)SUBSCRIBE about to be sent is for (caller holds
 * smu).  -1: out of memory, do not send it. */
static int pend_push(struct redis_store *rs, unsigned char kind)
{
    if (rs->pend_head > 0) {
        memmove(rs->pend, rs->pend + rs->pend_head, rs->pend_len);
        rs->pend_head = 0;
    }
    if (rs->pend_len == rs->pend_cap) {
        size_t cap = rs->pend_cap ? 2 * rs->pend_cap : 16;
        unsigned char *p = realloc(rs->pend, cap);

        if (p == NULL)
            return -1;
        rs->pend = p;
        rs->pend_cap = cap;
    }
    rs->pend[rs->pend_len++] = kind;
    return 0;
}

/* What the oldest unanswered (UN)SUBSCRIBE was for. */
static int pend_pop(struct redis_store *rs)
{
    int kind;

    if (rs->pend_len == 0)
        return P_SUB;
    kind = rs->pend[rs->pend_head++];
    if (--rs->pend_len == 0)
        rs->pend_head = 0;
    return kind;
}

/* The keyspace events that mean the key is gone. */
static int ks_gone(const redisReply *ev)
{
    static const char *const gone[] = {"del", "expired", "evicted",
                                       "rename_from", "move_from"};

    if (ev->type != REDIS_REPLY_STRING)
        return 0;
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++)
        if (strcmp(ev->str, gone[i]) == 0)
            return 1;
    return 0;
}

/* The ms of an "h" hint (s: the message after its "h", len bytes): a
 * decimal, clamped to [0, DLOCK_TTL_MAX_MS] (no dlock lease is longer),
 * or -1 when it is no number.  Anyone may publish it (see above). */
static int64_t hint_ms(const char *s, size_t len)
{
    int64_t ms = 0;
    size_t i = 0;
    int neg = 0;

    if (len > 0 && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i == len)
        return -1;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (ms < DLOCK_TTL_MAX_MS)
            ms = ms * 10 + (s[i] - '0'); /* < 10 * 2^45: no overflow */
    }
    if (neg)
        return 0;
    return ms < DLOCK_TTL_MAX_MS ? ms : DLOCK_TTL_MAX_MS;
}

/* One pub/sub reply from the listener (caller holds smu). */
static void on_push(struct redis_store *rs, redisReply *r)
{
    struct chan *c;
    const char *kind;
    const redisReply *m;
    int64_t ms;
    int ks = 0;

    if (r->type == REDIS_REPLY_ERROR) {
        /* SUBSCRIBE refused (an ACL without channel rights, say): waiters
         * fall back to backoff, as with a broken connection; if only the
         * keyspace channels are refused, waiters on foreign holders
         * poll. */
        if (pend_pop(rs) == P_SUB_KS)
            rs->ks_denied = 1;
        else
            rs->sub_denied = 1;
        wake_all(rs);
        return;
    }

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
        r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return;
    kind = r->element[0]->str;
    m = r->element[2];
    if (strcmp(kind, "subscribe") == 0 || strcmp(kind, "unsubscribe") == 0)
        (void)pend_pop(rs);
    c = chan_of(rs, r->element[1]->str, r->element[1]->len, &ks);
    if (c == NULL)
        return;
    if (strcmp(kind, "subscribe") == 0) {
        if (ks)
            c->ks_subscribed = 1;
        else
            c->subscribed = 1;
        for (struct waiter *w = c->head; w != NULL; w = w->next)
            pthread_cond_signal(w->cv);
    } else if (strcmp(kind, "message") == 0 && c->own) {
        /* "g" + token: the lock may have been handed to that waiter of
         * this handle.  Only a wake-up: its attempt finds out (the
         * script's reply has the fence).  A "g" naming none of them (or
         * an older dlock's "g" + fence) wakes one, as a release does.
         * Anything else on an own channel is nobody's business. */
        if (m->type == REDIS_REPLY_STRING && m->len > 0 && m->str[0] == 'g') {
            struct waiter *w = c->head;

            while (w != NULL && (w->woken || w->token == NULL ||
                                 strlen(w->token) != m->len - 1 ||
                                 memcmp(w->token, m->str + 1, m->len - 1)))
                w = w->next;
            if (w != NULL) {
                w->woken = 1;
                pthread_cond_signal(w->cv);
            } else {
                wake_one(c);
            }
        }
    } else if (strcmp(kind, "message") == 0 && !ks &&
               m->type == REDIS_REPLY_STRING && m->len > 0 &&
               m->str[0] == 'h' &&
               (ms = hint_ms(m->str + 1, m->len - 1)) >= 0) {
        /* "h" + ms: the lock was handed to another waiter, whose lease
         * ends within ms.  Nothing to try now, but every waiter here
         * must look again by then: that holder may die at once, and its
         * lease ends without a word (lua/fn_handoff.lua: handoff).  A
         * forged one can only make them look sooner: the look moves
         * earlier only, and a look is an attempt. */
        int64_t at = dlock__now_ms() + ms;

        for (struct waiter *w = c->head; w != NULL; w = w->next)
            if (w->lease_at == 0 || at < w->lease_at) {
                w->lease_at = at;
                pthread_cond_signal(w->cv);
            }
    } else if (strcmp(kind, "message") == 0 && (!ks || ks_gone(m))) {
        /* A release ("r"), a keyspace event saying the key is gone, or
         * a message that makes no sense: one waiter looks. */
        wake_one(c);
    } else if (strcmp(kind, "unsubscribe") == 0 && c->refs > 0) {
        if (ks)
            c->ks_subscribed = 0;
        else
            c->subscribed = 0;
    }
}

static void *listener_main(void *arg)
{
    struct redis_store *rs = arg;

    pthread_mutex_lock(&rs->smu);
    while (!rs->stop) {
        struct pollfd p = {rs->sc->fd, POLLIN, 0};
        void *reply;
        int n;

        pthread_mutex_unlock(&rs->smu);
        n = poll(&p, 1, 100);
        pthread_mutex_lock(&rs->smu);
        if (n <= 0 || rs->stop)
            continue;
        if (dlock__rconn_read(rs->sc) != REDIS_OK)
            goto broken;
        for (;;) {
            reply = NULL;
            if (dlock__rconn_next_reply(rs->sc, &reply) != REDIS_OK)
                goto broken;
            if (reply == NULL)
                break;
            on_push(rs, reply);
            freeReplyObject(reply);
        }
    }
    pthread_mutex_unlock(&rs->smu);
    return NULL;
broken:
    /* Waiters fall back to their timers and re-subscribe on a new
     * connection. */
    dlock__rconn_free(rs->sc);
    rs->sc = NULL;
    rs->sub_broken = 1;
    rs->pend_head = rs->pend_len = 0;
    for (struct chan *c = rs->chans; c != NULL; c = c->next)
        c->subscribed = c->ks_subscribed = 0;
    wake_all(rs);
    pthread_mutex_unlock(&rs->smu);
    return NULL;
}

void dlock__redis_sub_stop(struct redis_store *rs)
{
    pthread_mutex_lock(&rs->smu);
    rs->stop = 1;
    pthread_mutex_unlock(&rs->smu);
    if (rs->listening)
        pthread_join(rs->listener, NULL);
    rs->listening = 0;
    if (rs->sc != NULL)
        dlock__rconn_free(rs->sc);
    rs->sc = NULL;
}

int dlock__redis_sub_cmd(struct redis_store *rs, const char *verb,
                         const char *chan, size_t len, unsigned char kind)
{
    const char *argv[2] = {verb, chan};
    size_t lens[2] = {strlen(verb), len};

    if (rs->sc == NULL || pend_push(rs, kind) != 0)
        return -1;
    if (dlock__rconn_append_argv(rs->sc, 2, argv, lens) != REDIS_OK) {
        rs->pend_len--; /* not sent: no answer will come */
        return -1;
    }
    return dlock__rconn_flush(rs->sc) == REDIS_OK ? 0 : -1;
}

int dlock__redis_sub_ensure(struct redis_store *rs)
{
    struct dlock__nopipe np;
    struct rconn *c;
    int rc = DLOCK_OK;

    if (rs->sc != NULL && rs->listening && !rs->sub_broken)
        return DLOCK_OK;
    if (rs->listening) {
        /* The old listener has exited (sub_broken): reap it. */
        pthread_t t = rs->listener;

        rs->listening = 0;
        pthread_mutex_unlock(&rs->smu);
        pthread_join(t, NULL);
        pthread_mutex_lock(&rs->smu);
        if (rs->listening)
            return DLOCK_OK; /* another waiter restarted it meanwhile */
    }
    pthread_mutex_unlock(&rs->smu);
    dlock__redis_nopipe_begin(&np);
    c = dlock__redis_connect(rs, 0, &rc);
    dlock__redis_nopipe_end(&np);
    pthread_mutex_lock(&rs->smu);
    if (c == NULL)
        return rc;
    if (rs->listening) {
        dlock__rconn_free(c);
        return DLOCK_OK;
    }
    rs->sc = c;
    rs->sub_broken = 0;
    rs->pend_head = rs->pend_len = 0; /* the old connection's are void */
    rs->stop = 0;
    if (pthread_create(&rs->listener, NULL, listener_main, rs) != 0) {
        dlock__rconn_free(rs->sc);
        rs->sc = NULL;
        return dlock__seterr(DLOCK_ENOMEM, "cannot start the redis "
                                           "listener thread");
    }
    rs->listening = 1;
    /* Subscribe again to what waiters still wait on. */
    for (struct chan *ch = rs->chans; ch != NULL; ch = ch->next) {
        if (ch->refs == 0)
            continue;
        (void)dlock__redis_sub_cmd(rs, "SUBSCRIBE", ch->name, ch->len, P_SUB);
        if (ch->ks != NULL && !rs->ks_denied)
            (void)dlock__redis_sub_cmd(rs, "SUBSCRIBE", ch->ks, ch->ks_len,
                                       P_SUB_KS);
    }
    return DLOCK_OK;
}

struct chan *dlock__redis_chan_join(struct redis_store *rs, const char *name,
                                    size_t len, int own, struct waiter *w)
{
    struct chan *c = find_chan(rs, name, len);

    if (c == NULL) {
        c = calloc(1, sizeof(*c));
        if (c == NULL || (c->name = dlock__strndup(name, len)) == NULL) {
            free(c);
            return NULL;
        }
        c->len = len;
        c->own = own;
        c->keep = 1;
        c->next = rs->chans;
        rs->chans = c;
    } else if (c->refs == 0) {
        rs->idle--; /* kept from an earlier wait */
    }
    if (c->refs++ == 0 && !c->subscribed)
        (void)dlock__redis_sub_cmd(rs, "SUBSCRIBE", c->name, c->len, P_SUB);
    w->next = NULL;
    if (c->tail != NULL)
        c->tail->next = w;
    else
        c->head = w;
    c->tail = w;
    return c;
}

/* Unsubscribe c (no waiter is left on it) and free it. */
static void chan_drop(struct redis_store *rs, struct chan *c)
{
    struct chan **cp = &rs->chans;

    if (c->subscribed)
        (void)dlock__redis_sub_cmd(rs, "UNSUBSCRIBE", c->name, c->len, P_UNSUB);
    if (c->ks != NULL)
        (void)dlock__redis_sub_cmd(rs, "UNSUBSCRIBE", c->ks, c->ks_len,
                                   P_UNSUB);
    while (*cp != c)
        cp = &(*cp)->next;
    *cp = c->next;
    free(c->name);
    free(c->ks);
    free(c);
}

void dlock__redis_chan_leave(struct redis_store *rs, struct chan *c,
                             struct waiter *w)
{
    struct waiter **pp = &c->head, *prev = NULL;

    while (*pp != NULL && *pp != w) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp == w) {
        *pp = w->next;
        if (c->tail == w)
            c->tail = prev;
    }
    /* A wake-up this waiter got but did not use passes on. */
    if (w->woken)
        wake_one(c);
    if (--c->refs == 0) {
        if (c->keep && c->subscribed && !rs->sub_broken) {
            /* Kept for the next wait on the name; its keyspace channel
             * (a foreign holder's) is not. */
            if (c->ks != NULL) {
                (void)dlock__redis_sub_cmd(rs, "UNSUBSCRIBE", c->ks, c->ks_len,
                                           P_UNSUB);
                free(c->ks);
                c->ks = NULL;
                c->ks_subscribed = 0;
            }
            c->head = c->tail = NULL;
            if (++rs->idle <= IDLE_CHANS_MAX)
                return;
            /* Too many kept: let go of the oldest idle one (the list
             * is newest first). */
            for (struct chan *o = rs->chans; o != NULL; o = o->next)
                if (o->refs == 0)
                    c = o;
            rs->idle--;
        }
        chan_drop(rs, c);
    }
}

void dlock__redis_chan_want_ks(struct redis_store *rs, struct chan *c,
                               const struct dlock__rkeys *k)
{
    char head[48];
    int n;

    if (c->ks != NULL || rs->ks_denied)
        return;
    n = snprintf(head, sizeof(head), "__keyspace@%d__:", rs->db);
    c->ks = malloc((size_t)n + k->klen[0] + 1);
    if (c->ks == NULL)
        return;
    memcpy(c->ks, head, (size_t)n);
    memcpy(c->ks + n, k->k[0], k->klen[0]);
    c->ks_len = (size_t)n + k->klen[0];
    c->ks[c->ks_len] = '\0';
    /* Not sent (connection broken): dlock__redis_sub_ensure() sends it
     * with the rest. */
    (void)dlock__redis_sub_cmd(rs, "SUBSCRIBE", c->ks, c->ks_len, P_SUB_KS);
}

void dlock__redis_chans_free(struct redis_store *rs)
{
    while (rs->chans != NULL) {
        struct chan *c = rs->chans;

        rs->chans = c->next;
        free(c->name);
        free(c->ks);
        free(c);
    }
}
