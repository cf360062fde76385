/*
 * renew.c - the renew thread's batches (extend_many): the extend script
 * of every lock in the batch, EVALSHA by EVALSHA in one pipeline, written
 * at once and answered in order: one round trip for the batch, and each
 * renewal still the same atomic compare-and-PEXPIRE as redis_extend().
 *
 * Why a pipeline of per-lock scripts and not one script over every key
 * of the batch: in Redis Cluster a script may only touch keys of one hash
 * slot, and a batch's names hash anywhere.  With Cluster the batch is
 * split by master, one pipeline each; a lock whose answer is a
 * redirection (its slot moved meanwhile) or TRYAGAIN is extended alone
 * afterwards, through the path that follows redirections.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locks.h"

struct renew_call {
    struct redis_store *rs;
    struct dlock_lock *const *locks;
    size_t n;
    int *rcs;
    unsigned char *again;      /* [i]: answered NOSCRIPT, send once more */
    const unsigned char *only; /* NULL, or [i]: in this batch */
    unsigned char *alone;      /* [i]: redirected, extend it alone */
};

/* Append EVALSHA of lk's extend script to c's output buffer. */
static int append_extend(struct redis_store *rs, struct rconn *c,
                         const struct dlock_lock *lk)
{
    int s = dlock__redis_script(lk, S_EXT);
    struct dlock__rkeys k;
    const char *argv[5 + DLOCK__RKEYS];
    size_t lens[5 + DLOCK__RKEYS];
    char ttl[24];
    int rc;

    rc = dlock__redis_keys_of(rs, lk->name, lk->name_len, &k);
    if (rc != DLOCK_OK)
        return rc;
    snprintf(ttl, sizeof(ttl), "%lld",
             (long long)DLOCK__REDIS_LEASE(lk->ttl_ms));
    argv[0] = "EVALSHA";
    argv[1] = rs->sha[s];
    /* Every key, as dlock__redis_run() sends them: a semaphore's holders
     * are the last. */
    argv[2] = RKEYS_STR;
    for (int i = 0; i < DLOCK__RKEYS; i++) {
        argv[3 + i] = k.k[i];
        lens[3 + i] = k.klen[i];
    }
    argv[3 + DLOCK__RKEYS] = lk->token;
    argv[4 + DLOCK__RKEYS] = ttl;
    lens[0] = 7;
    lens[1] = 40;
    lens[2] = 1;
    lens[3 + DLOCK__RKEYS] = strlen(lk->token);
    lens[4 + DLOCK__RKEYS] = strlen(ttl);
    rc = dlock__rconn_append_argv(c, 5 + DLOCK__RKEYS, argv, lens) == REDIS_OK
             ? DLOCK_OK
             : dlock__enomem();
    free(k.buf);
    return rc;
}

/* Send the extend of every lock with want[i] (NULL: all) and read the
 * answers.  A NOSCRIPT answer sets again[i]. */
static int pipeline_once(struct renew_call *r, struct rconn *c,
                         const unsigned char *want, int *dead)
{
    size_t sent = 0;
    int rc = DLOCK_OK;

    for (size_t i = 0; i < r->n; i++) {
        if ((want != NULL && !want[i]) || (r->only != NULL && !r->only[i]))
            continue;
        rc = append_extend(r->rs, c, r->locks[i]);
        if (rc != DLOCK_OK) {
            /* What was appended cannot be taken back: the connection's
             * stream is no longer ours to reuse. */
            *dead = sent > 0;
            return rc;
        }
        sent++;
    }
    for (size_t i = 0; i < r->n; i++) {
        const struct dlock_lock *lk = r->locks[i];
        redisReply *rep = NULL;

        if ((want != NULL && !want[i]) || (r->only != NULL && !r->only[i]))
            continue;
        if (dlock__rconn_get_reply(c, (void **)&rep) != REDIS_OK ||
            rep == NULL) {
            *dead = 1;
            return dlock__seterr(DLOCK_EUNAVAIL,
                                 "lost the connection to %s: %s", r->rs->url,
                                 c->errstr);
        }
        r->again[i] = 0;
        if (rep->type == REDIS_REPLY_INTEGER)
            r->rcs[i] = rep->integer == 1
                            ? DLOCK_OK
                            : dlock__lost(lk, "its lease ran out, it was "
                                              "broken, or the server lost "
                                              "it");
        else if (rep->type == REDIS_REPLY_ERROR && rep->str != NULL &&
                 strncmp(rep->str, "NOSCRIPT", 8) == 0)
            r->again[i] = 1;
        else if (r->alone != NULL && rep->type == REDIS_REPLY_ERROR &&
                 rep->str != NULL &&
                 (strncmp(rep->str, "MOVED ", 6) == 0 ||
                  strncmp(rep->str, "ASK ", 4) == 0 ||
                  strncmp(rep->str, "TRYAGAIN", 8) == 0 ||
                  strncmp(rep->str, "CLUSTERDOWN", 11) == 0))
            r->alone[i] = 1;
        else if (rep->type == REDIS_REPLY_ERROR)
            r->rcs[i] = dlock__redis_reply_error(r->rs, rep, "renew");
        else
            r->rcs[i] = dlock__seterr(DLOCK_ESTORE, "unexpected reply from %s",
                                      r->rs->url);
        freeReplyObject(rep);
    }
    return DLOCK_OK;
}

/* As pipeline_once(), within the lease of the locks it is for. */
static int pipeline(struct renew_call *r, struct rconn *c,
                    const unsigned char *want, int *dead)
{
    int bound = dlock__redis_bound(r->rs, c);
    int rc = pipeline_once(r, c, want, dead);

    dlock__redis_unbound(r->rs, c, bound);
    return rc;
}

static int renew_once(void *conn, void *arg, int *dead)
{
    struct renew_call *r = arg;
    struct rconn *c = conn;
    int rc, any = 0;

    rc = pipeline(r, c, NULL, dead);
    if (rc != DLOCK_OK)
        return rc;
    for (size_t i = 0; i < r->n; i++)
        any |= r->again[i] && (r->only == NULL || r->only[i]);
    if (!any)
        return DLOCK_OK;
    /* The server forgot the scripts (SCRIPT FLUSH, a failover): load them
     * again on this connection and send the rest once more. */
    rc = dlock__redis_load_scripts(r->rs, c);
    if (rc != DLOCK_OK) {
        *dead = c->err != 0;
        return rc;
    }
    rc = pipeline(r, c, r->again, dead);
    if (rc != DLOCK_OK)
        return rc;
    for (size_t i = 0; i < r->n; i++)
        if (r->again[i] && (r->only == NULL || r->only[i]))
            r->rcs[i] = dlock__seterr(DLOCK_ESTORE,
                                      "redis renew: the server keeps "
                                      "forgetting the scripts (%s)",
                                      r->rs->url);
    return DLOCK_OK;
}

/* Lock i was renewed by this batch (not redirected: extended alone
 * later, through extend(), which asks on its own). */
static int counted(const struct renew_call *r, size_t i)
{
    return (r->only == NULL || r->only[i]) &&
           (r->alone == NULL || !r->alone[i]) && r->rcs[i] == DLOCK_OK;
}

/* renew_once(), then with ?replicas= one WAIT for the whole batch, on the
 * connection that wrote it: a renewal not acknowledged by enough
 * replicas fails (EUNAVAIL) and is retried while its lease runs. */
static int renew_fn(void *conn, void *arg, int *dead)
{
    struct renew_call *r = arg;
    long long acks;
    int rc = renew_once(conn, arg, dead), any = 0;

    if (rc != DLOCK_OK || r->rs->replicas == 0)
        return rc;
    for (size_t i = 0; i < r->n; i++)
        any |= counted(r, i);
    if (!any)
        return DLOCK_OK;
    acks = *dead ? -1 : dlock__redis_wait_acks(r->rs, conn, dead);
    if (acks >= r->rs->replicas)
        return DLOCK_OK;
    for (size_t i = 0; i < r->n; i++)
        if (counted(r, i))
            r->rcs[i] = dlock__redis_unacked(r->rs, "a renewal",
                                             r->locks[i]->name, acks);
    return DLOCK_OK;
}

/* Cluster (caller holds mu): one pipeline per master; a redirected
 * lock is marked alone[] for later.  A master that fails fails only its
 * own locks' renewals. */
static void cluster_renew(struct renew_call *r, unsigned *slots,
                          unsigned char *todo, unsigned char *only)
{
    struct redis_store *rs = r->rs;

    for (size_t i = 0; i < r->n; i++) {
        slots[i] = dlock__redis_name_slot(rs, r->locks[i]->name,
                                          r->locks[i]->name_len);
        todo[i] = 1;
    }
    r->only = only;
    for (size_t first = 0;; first++) {
        int owner, rc;

        while (first < r->n && !todo[first])
            first++;
        if (first == r->n)
            break;
        owner = dlock__redis_cluster_owner(rs, slots[first]);
        for (size_t i = first; i < r->n; i++) {
            only[i] =
                todo[i] && (i == first ||
                            (owner >= 0 && rs->slot_node[slots[i]] == owner));
            todo[i] &= !only[i];
        }
        rc = dlock__redis_exec(rs, (int)slots[first], renew_fn, r, 1);
        for (size_t i = first; i < r->n && rc != DLOCK_OK; i++)
            if (only[i]) {
                r->rcs[i] = rc;
                r->alone[i] = 0;
            }
    }
    r->only = NULL;
}

int dlock__redis_extend_many(struct dlock_store *s,
                             struct dlock_lock *const *locks, size_t n,
                             int *rcs)
{
    struct redis_store *rs = (struct redis_store *)s;
    struct renew_call r = {rs, locks, n, rcs, calloc(n, 1), NULL, NULL};
    int rc = DLOCK_OK;

    if (r.again == NULL)
        return dlock__enomem();
    /* Renewing twice is harmless: under the pool's retry-once policy. */
    pthread_mutex_lock(&rs->mu);
    if (rs->cluster) {
        unsigned *slots = malloc(n * sizeof(*slots));
        unsigned char *flags = calloc(n, 2);

        r.alone = calloc(n, 1);
        if (slots == NULL || flags == NULL || r.alone == NULL)
            rc = dlock__enomem();
        else
            cluster_renew(&r, slots, flags, flags + n);
        free(slots);
        free(flags);
    } else
        rc = dlock__redis_exec(rs, -1, renew_fn, &r, 1);
    pthread_mutex_unlock(&rs->mu);
    free(r.again);
    /* Redirected: alone, through the path that follows the cluster. */
    if (r.alone != NULL && rc == DLOCK_OK)
        for (size_t i = 0; i < n; i++)
            if (r.alone[i])
                rcs[i] = s->ops->extend(s, locks[i], locks[i]->ttl_ms);
    free(r.alone);
    /* As extend(): a lock taken before the master changed (a Sentinel
     * failover, a cluster slot's: by the epoch read after the batch) is
     * never trusted, even if the new master has its key (replicated); it
     * is let go there. */
    if (rc == DLOCK_OK)
        for (size_t i = 0; i < n; i++)
            if (rcs[i] == DLOCK_OK &&
                dlock__redis_stale(locks[i], dlock__redis_epoch(rs, locks[i])))
                rcs[i] = dlock__redis_drop_stale(rs, locks[i]);
    return rc;
}
