/*
 * scripts.c - the Lua scripts, one per operation: their text, and loading
 * them on a new connection (with its database selected: the connection
 * made ready, dlock__redis_ready).  Running them is eval.c's.
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

#include "scripts.h"

#include "redis_text.h"

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
    [S_KEEP_RUNS] = {"keep_runs.lua", dlock__text_redis_keep_runs},
    [S_KEPT_RUNS] = {"kept_runs.lua", dlock__text_redis_kept_runs},
    [S_VALUE_SET] = {"value_set.lua", dlock__text_redis_value_set},
    [S_SUSPEND] = {"suspend.lua", dlock__text_redis_suspend},
    [S_RESUME] = {"resume.lua", dlock__text_redis_resume},
    [S_SUSPENSION] = {"suspension.lua", dlock__text_redis_suspension},
};

/* Fragment t (lua/frag_*.lua: one expression, which the embedding ends
 * with a newline) into buf without that newline, for a {{placeholder}}
 * inside a line. */
static const char *fragment(const char *t, char *buf, size_t size)
{
    size_t n = strcspn(t, "\n");

    if (n >= size)
        n = size - 1;
    memcpy(buf, t, n);
    buf[n] = '\0';
    return buf;
}

/* Script s as a store sends it (cluster: a Redis Cluster's variant), or
 * NULL with the error set: the one builder of open() (scripts_init) and
 * of the golden copies (dlock__redis_texts). */
static char *script_text(int s, int cluster)
{
    char heard[256];
    /* {{heard}}: whether the waiter a hand-off told heard it
     * (lua/frag_heard.lua, and lua/frag_heard_cluster.lua for Redis
     * Cluster, where PUBLISH counts one node's subscribers only). */
    const char *const vars[] = {
        "heard",
        fragment(cluster ? dlock__text_redis_frag_heard_cluster
                         : dlock__text_redis_frag_heard,
                 heard, sizeof(heard)),
        "runs_kept",
        STR(DLOCK_RUNS_KEPT),
        "runs_kept_max",
        STR(DLOCK_RUNS_KEPT_MAX),
        NULL};

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
        if (i >= S_LOADED) {
            int rc =
                dlock__sha1_hex(rs->lua[i], strlen(rs->lua[i]), rs->sha[i]);

            if (rc != DLOCK_OK)
                return rc;
        }
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
                 text != NULL ? text : "(dlock__text_expand failed)\n");
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
 * its hint from link.c); another gets the error without the echo. */
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

int dlock__redis_ready(struct redis_store *rs, struct rconn *c, void **out)
{
    redisReply *r;
    int rc;

    *out = NULL;
    if (rs->db != 0) {
        r = dlock__rconn_command(c, "SELECT %d", rs->db);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            rc =
                r ? dlock__redis_reply_error(rs, r, "SELECT")
                  : dlock__seterr(DLOCK_EUNAVAIL, "%s: %s", rs->url, c->errstr);
            freeReplyObject(r);
            dlock__rconn_free(c);
            return rc;
        }
        freeReplyObject(r);
    }
    rc = dlock__redis_load_scripts(rs, c);
    if (rc != DLOCK_OK) {
        dlock__rconn_free(c);
        return rc;
    }
    *out = c;
    return DLOCK_OK;
}
