/*
 * scripts.c - the Lua scripts, one per operation, and running them.
 *
 * Every operation on a lock is one script, one round trip.  The scripts
 * are lua/ *.lua (embedded at build time, cmake/embed.cmake), expanded
 * once per store at open for its variant (standalone or Cluster).  They are
 * loaded on each new command connection (SCRIPT LOAD) and run with
 * EVALSHA; when the server answers NOSCRIPT (SCRIPT FLUSH, a restart, a
 * failover) the text goes with EVAL, which also caches it again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis.h"

#include "redis_text.h"
#include "text.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The scripts (lua/NAME, golden copies tests/golden/redis/VARIANT/NAME),
 * in the order of the S_ enum; lua/acquire.lua says which KEYS and ARGV
 * they take. */
static const struct {
    const char *name, *tmpl;
} script[S_COUNT] = {
    [S_ACQ] = {"acquire.lua", dlock__text_redis_acquire},
    [S_ACQ_SHARED] = {"acquire_shared.lua", dlock__text_redis_acquire_shared},
    [S_ACQ_SEM] = {"acquire_sem.lua", dlock__text_redis_acquire_sem},
    [S_REL] = {"release.lua", dlock__text_redis_release},
    [S_REL_SHARED] = {"release_shared.lua", dlock__text_redis_release_shared},
    [S_REL_SEM] = {"release_sem.lua", dlock__text_redis_release_sem},
    [S_EXT] = {"extend.lua", dlock__text_redis_extend},
    [S_EXT_SHARED] = {"extend_shared.lua", dlock__text_redis_extend_shared},
    [S_EXT_SEM] = {"extend_sem.lua", dlock__text_redis_extend_sem},
    [S_TTL] = {"ttl.lua", dlock__text_redis_ttl},
    [S_TTL_SHARED] = {"ttl_shared.lua", dlock__text_redis_ttl_shared},
    [S_TTL_SEM] = {"ttl_sem.lua", dlock__text_redis_ttl_sem},
    [S_STATUS] = {"status.lua", dlock__text_redis_status},
    [S_FORCE] = {"force.lua", dlock__text_redis_force},
    [S_LEAVE] = {"leave.lua", dlock__text_redis_leave},
    [S_RUN_BEGIN] = {"run_begin.lua", dlock__text_redis_run_begin},
    [S_RUN_END] = {"run_end.lua", dlock__text_redis_run_end},
};

/* {{heard}} in lua/fn_handoff.lua: whether the waiter a hand-off told on
 * its own channel heard it, from PUBLISH's count n (an error, no channel
 * rights, counts as heard).  Redis Cluster: PUBLISH counts the
 * subscribers of the node it runs on only, while the message reaches
 * every node's.  A count of 0 there does not mean nobody heard (the
 * waiter may have, on another node, and would take the lock as handed
 * over): the hand-off is made to every live entry, and a waiter that
 * died holds what it was handed until its lease runs out, as any dead
 * holder does. */
#define HEARD "(type(n) ~= 'number' or n > 0)"
#define HEARD_CLUSTER "true"

/* Script s as a store sends it (cluster: a Redis Cluster's variant), or
 * NULL with the error set: the one builder of open() (scripts_init) and
 * of the golden copies (dlock__redis_texts). */
static char *script_text(int s, int cluster)
{
    const char *const vars[] = {"heard", cluster ? HEARD_CLUSTER : HEARD,
                                "runs_kept", STR(DLOCK_RUNS_KEPT), NULL};

    return dlock__text_expand(script[s].tmpl, vars);
}

int dlock__redis_scripts_init(struct redis_store *rs)
{
    for (int i = 0; i < S_COUNT; i++) {
        /* Only an allocation fails here: a template whose placeholder
         * has no value fails the golden test first. */
        rs->lua[i] = script_text(i, rs->cluster);
        if (rs->lua[i] == NULL)
            return DLOCK_ENOMEM;
        /* Redis names a script by the SHA1 of its text: those not
         * loaded on connect are EVALSHA'd by it all the same. */
        if (i >= S_LOADED)
            dlock__sha1_hex(rs->lua[i], strlen(rs->lua[i]), rs->sha[i]);
    }
    return DLOCK_OK;
}

void dlock__redis_texts(dlock__text_emit emit, void *arg)
{
    static const char *const variant[] = {"standalone", "cluster"};

    for (int v = 0; v < 2; v++)
        for (int i = 0; i < S_COUNT; i++) {
            char *text = script_text(i, v == 1);

            emit(arg, variant[v], script[i].name,
                 text != NULL ? text : "(no text: dlock__text_expand failed)\n");
            free(text);
        }
}

void dlock__redis_scripts_free(struct redis_store *rs)
{
    for (int i = 0; i < S_COUNT; i++)
        free(rs->lua[i]);
}

/* SCRIPT LOAD answered error r.  A server that does not know SCRIPT
 * echoes its arguments, dlock's Lua source, which says nothing to a
 * user: a Sentinel is the likely one, and is named (a cluster node gets
 * its hint from conn.c); another gets the error without the echo. */
static int load_error(struct redis_store *rs, struct rconn *c,
                      const redisReply *r)
{
    static const char unknown[] = "ERR unknown command 'SCRIPT'";

    if (strncmp(r->str, unknown, sizeof(unknown) - 1) != 0)
        return dlock__redis_reply_error(rs, r, "SCRIPT LOAD");
    if (dlock__redis_role_is(c, "sentinel"))
        return dlock__seterr(DLOCK_ESTORE,
                             "%s is a Redis Sentinel, not a "
                             "data node: use redis-sentinel://HOST:PORT/"
                             "MASTERNAME",
                             rs->url);
    return dlock__seterr(DLOCK_ESTORE,
                         "%s does not know SCRIPT (%s): "
                         "dlock needs Redis >= 6 with Lua scripting",
                         rs->url, unknown + 4);
}

int dlock__redis_load_scripts(struct redis_store *rs, struct rconn *c)
{
    for (int i = 0; i < S_LOADED; i++) {
        redisReply *r = dlock__rconn_command(c, "SCRIPT LOAD %s", rs->lua[i]);
        int rc;

        if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
            rc = r && r->type == REDIS_REPLY_ERROR
                     ? load_error(rs, c, r)
                     : dlock__seterr(DLOCK_EUNAVAIL, "%s: %s", rs->url,
                                     c->err ? c->errstr
                                            : "bad SCRIPT LOAD reply");
            freeReplyObject(r);
            return rc;
        }
        memcpy(rs->sha[i], r->str, 40);
        rs->sha[i][40] = '\0';
        freeReplyObject(r);
    }
    return DLOCK_OK;
}

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
                                  const char *const *keys,
                                  const size_t *klen, int nargs,
                                  const char **args, const size_t *alen,
                                  int retry, int *rc)
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
    *rc = dlock__redis_exec(rs,
                            rs->cluster
                                ? (int)dlock__redis_slot(keys[0], klen[0])
                                : -1,
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
                                 nargs < 6 ? nargs : 6, args, alen, retry,
                                 rc);
}
