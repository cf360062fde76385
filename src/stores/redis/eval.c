/*
 * eval.c - running a script on the master of its keys' hash slot:
 * EVALSHA by the sha SCRIPT LOAD gave (scripts.c), the text with EVAL when
 * the server answers NOSCRIPT (SCRIPT FLUSH, a restart, a failover; EVAL
 * caches it again), and with ?replicas= the WAIT for the replicas.
 */
#include <stdio.h>
#include <string.h>

#include "eval.h"

/* EVALSHA script s (argv[1] its sha), else its text on NOSCRIPT. */
struct eval {
    struct redis_store *rs;
    int s, argc;
    const char **argv;
    size_t *lens;
    redisReply *reply;
};

/* Scripts whose success must reach the replicas (?replicas=). */
static int wants_acks(int s)
{
    return s == S_ACQ || s == S_ACQ_SHARED || s == S_ACQ_SEM || s == S_EXT ||
           s == S_EXT_SHARED || s == S_EXT_SEM;
}

/* An acquire's {1, fence, ...} or an extend's 1. */
static int worked(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER)
        return r->integer == 1;
    return r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
           r->element[0]->type == REDIS_REPLY_INTEGER &&
           r->element[0]->integer == 1;
}

static int eval_fn(void *conn, void *arg, int *dead)
{
    struct eval *e = arg;
    int rc;

    e->argv[0] = "EVALSHA";
    e->lens[0] = 7;
    e->argv[1] = e->rs->sha[e->s];
    e->lens[1] = 40;
    rc = dlock__redis_send(e->rs, conn, e->argc, e->argv, e->lens, &e->reply,
                           dead);
    if (rc == DLOCK_OK && e->reply->type == REDIS_REPLY_ERROR &&
        strncmp(e->reply->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(e->reply);
        e->argv[0] = "EVAL";
        e->lens[0] = 4;
        e->argv[1] = e->rs->lua[e->s];
        e->lens[1] = strlen(e->rs->lua[e->s]);
        rc = dlock__redis_send(e->rs, conn, e->argc, e->argv, e->lens,
                               &e->reply, dead);
    }
    /* ?replicas=: an acquire or a renewal that worked is asked about on
     * the connection that wrote it (WAIT counts that client's writes:
     * on another connection it would say nothing about this one). */
    e->rs->acks = -1;
    if (rc == DLOCK_OK && e->rs->replicas > 0 && wants_acks(e->s) &&
        worked(e->reply))
        e->rs->acks = dlock__redis_wait_acks(e->rs, conn, dead);
    return rc;
}

redisReply *dlock__redis_run_keys(struct redis_store *rs, int s, int nkeys,
                                  const char *const *keys, const size_t *klen,
                                  int nargs, const char **args,
                                  const size_t *alen, int retry, int *rc)
{
    const char *argv[3 + RUN_KEYS_MAX + RUN_ARGS_MAX];
    size_t lens[3 + RUN_KEYS_MAX + RUN_ARGS_MAX];
    char nk[16];
    struct eval e = {rs, s, 0, argv, lens, NULL};

    if (nkeys > RUN_KEYS_MAX)
        nkeys = RUN_KEYS_MAX;
    if (nargs > RUN_ARGS_MAX)
        nargs = RUN_ARGS_MAX;
    if (nkeys == DLOCK__RKEYS)
        strcpy(nk, RKEYS_STR);
    else
        snprintf(nk, sizeof(nk), "%d", nkeys);
    argv[2] = nk;
    lens[2] = strlen(nk);
    for (int i = 0; i < nkeys; i++) {
        argv[3 + i] = keys[i];
        lens[3 + i] = klen[i];
    }
    for (int i = 0; i < nargs; i++) {
        argv[3 + nkeys + i] = args[i];
        lens[3 + nkeys + i] = alen[i];
    }
    e.argc = 3 + nkeys + nargs;
    *rc = dlock__redis_exec(
        rs, rs->cluster ? (int)dlock__redis_slot(keys[0], klen[0]) : -1,
        eval_fn, &e, retry);
    if (*rc != DLOCK_OK)
        return NULL;
    if (e.reply->type == REDIS_REPLY_ERROR) {
        *rc = dlock__redis_reply_error(rs, e.reply, "script");
        freeReplyObject(e.reply);
        return NULL;
    }
    return e.reply;
}

redisReply *dlock__redis_run(struct redis_store *rs, int s,
                             const struct dlock__rkeys *k, int nargs,
                             const char **args, const size_t *alen, int retry,
                             int *rc)
{
    _Static_assert(DLOCK__RKEYS <= RUN_KEYS_MAX, "RUN_KEYS_MAX too small");
    return dlock__redis_run_keys(rs, s, DLOCK__RKEYS, k->k, k->klen,
                                 nargs < 6 ? nargs : 6, args, alen, retry, rc);
}
