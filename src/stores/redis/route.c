/*
 * route.c - where a command goes, whatever the topology: a connection to
 * the master (any master of a cluster, for the subscriber), and fn run on
 * the command connection of the master that serves a hash slot (the one
 * server's pool, or cluster.c's per-node pools).  The command
 * connection's pool is opened here: the master (master.c), made ready
 * (scripts.c: its database selected, the scripts loaded).
 */
#include "topology.h"

struct rconn *dlock__redis_connect(struct redis_store *rs, int main, int *rc)
{
    if (rs->cluster)
        return dlock__redis_cluster_any(rs, rc);
    return dlock__redis_master_connect(rs, main, rc);
}

int dlock__redis_exec(struct redis_store *rs, int slot, dlock__pool_fn fn,
                      void *arg, int retry)
{
    if (rs->cluster)
        return dlock__redis_cluster_exec(rs, slot, fn, arg, retry);
    return dlock__redis_exec_on(&rs->pool, fn, arg, retry);
}

struct cmd {
    struct redis_store *rs;
    int argc;
    const char **argv;
    const size_t *lens;
    redisReply *reply;
};

static int cmd_fn(void *conn, void *arg, int *dead)
{
    struct cmd *m = arg;

    return dlock__redis_send(m->rs, conn, m->argc, m->argv, m->lens, &m->reply,
                             dead);
}

int dlock__redis_cmd(struct redis_store *rs, int slot, int retry,
                     redisReply **out, int argc, const char **argv,
                     const size_t *lens)
{
    struct cmd m = {rs, argc, argv, lens, NULL};
    int rc = dlock__redis_exec(rs, slot, cmd_fn, &m, retry);

    *out = m.reply;
    return rc;
}

/* The command connection: the server's, or the sentinels' master's. */
static int pool_open(void *ctx, void **out)
{
    struct redis_store *rs = ctx;
    struct rconn *c;
    int rc = DLOCK_OK;

    *out = NULL;
    c = dlock__redis_connect(rs, 1, &rc);
    if (c == NULL)
        return rc;
    return dlock__redis_ready(rs, c, out);
}

const struct dlock__pool_ops dlock__redis_pool_ops = {
    .open = pool_open,
    .close = dlock__redis_pool_close,
    .healthy = dlock__redis_pool_healthy,
};
